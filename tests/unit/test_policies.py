"""Contract tests for the default placement policy rules.

Rule names, default check strings, scope types and documented operations
are part of the public contract (operators override them by name in
policy.yaml and tools generate docs from them), so they are pinned here
in an explicit table rather than derived from the code under test.
"""

from oslo_config import cfg
from oslo_log import versionutils
from oslo_policy import opts as policy_opts
from oslo_policy import policy
import pytest

from placement import policies

ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
PROJECT = ['project']

# name -> (check_str, scope_types), in the order list_rules() yields them.
EXPECTED_RULES = {
    'admin_api': ('role:admin', PROJECT),
    'service_api': ('role:service', PROJECT),
    'admin_or_service_api': ('role:admin or role:service', PROJECT),
    'project_reader_api': (
        'role:reader and project_id:%(project_id)s', None),
    'admin_or_project_reader_or_service_api': (
        'role:admin or rule:project_reader_api or role:service', PROJECT),
    'placement:resource_providers:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:create': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:show': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:update': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:delete': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_classes:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_classes:create': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_classes:show': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_classes:update': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_classes:delete': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:inventories:list': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:inventories:create': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:inventories:show': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:inventories:update': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:inventories:delete': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:aggregates:list': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:aggregates:update': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:usages': (ADMIN_OR_SERVICE, PROJECT),
    'placement:usages': (
        'rule:admin_or_project_reader_or_service_api', PROJECT),
    'placement:traits:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:traits:show': (ADMIN_OR_SERVICE, PROJECT),
    'placement:traits:update': (ADMIN_OR_SERVICE, PROJECT),
    'placement:traits:delete': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:traits:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:traits:update': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:traits:delete': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:allocations:manage': (ADMIN_OR_SERVICE, PROJECT),
    'placement:allocations:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:allocations:update': (ADMIN_OR_SERVICE, PROJECT),
    'placement:allocations:delete': (ADMIN_OR_SERVICE, PROJECT),
    'placement:resource_providers:allocations:list': (
        ADMIN_OR_SERVICE, PROJECT),
    'placement:allocation_candidates:list': (ADMIN_OR_SERVICE, PROJECT),
    'placement:reshaper:reshape': ('rule:service_api', PROJECT),
    # This service's extensions, after upstream's rules.
    'placement:allocation_candidates:explain': ('rule:admin_api', PROJECT),
    'placement:allocation_candidates:capacity': ('rule:admin_api', PROJECT),
    'placement:audit': ('rule:admin_api', PROJECT),
    'placement:audit:what_if': ('rule:admin_api', PROJECT),
    'placement:overview': (ADMIN_OR_SERVICE, PROJECT),
    'placement:overview:providers': (ADMIN_OR_SERVICE, PROJECT),
    'placement:overview:provider': (ADMIN_OR_SERVICE, PROJECT),
}

RP = '/resource_providers/{uuid}'
INV = RP + '/inventories'

# Documented (method, path) pairs for every API rule.
EXPECTED_OPERATIONS = {
    'placement:resource_providers:list': [('GET', '/resource_providers')],
    'placement:resource_providers:create': [('POST', '/resource_providers')],
    'placement:resource_providers:show': [('GET', RP)],
    'placement:resource_providers:update': [('PUT', RP)],
    'placement:resource_providers:delete': [('DELETE', RP)],
    'placement:resource_classes:list': [('GET', '/resource_classes')],
    'placement:resource_classes:create': [('POST', '/resource_classes')],
    'placement:resource_classes:show': [('GET', '/resource_classes/{name}')],
    'placement:resource_classes:update': [
        ('PUT', '/resource_classes/{name}')],
    'placement:resource_classes:delete': [
        ('DELETE', '/resource_classes/{name}')],
    'placement:resource_providers:inventories:list': [('GET', INV)],
    'placement:resource_providers:inventories:create': [('POST', INV)],
    'placement:resource_providers:inventories:show': [
        ('GET', INV + '/{resource_class}')],
    'placement:resource_providers:inventories:update': [
        ('PUT', INV), ('PUT', INV + '/{resource_class}')],
    'placement:resource_providers:inventories:delete': [
        ('DELETE', INV), ('DELETE', INV + '/{resource_class}')],
    'placement:resource_providers:aggregates:list': [
        ('GET', RP + '/aggregates')],
    'placement:resource_providers:aggregates:update': [
        ('PUT', RP + '/aggregates')],
    'placement:resource_providers:usages': [('GET', RP + '/usages')],
    'placement:usages': [('GET', '/usages')],
    'placement:traits:list': [('GET', '/traits')],
    'placement:traits:show': [('GET', '/traits/{name}')],
    'placement:traits:update': [('PUT', '/traits/{name}')],
    'placement:traits:delete': [('DELETE', '/traits/{name}')],
    'placement:resource_providers:traits:list': [('GET', RP + '/traits')],
    'placement:resource_providers:traits:update': [('PUT', RP + '/traits')],
    'placement:resource_providers:traits:delete': [
        ('DELETE', RP + '/traits')],
    'placement:allocations:manage': [('POST', '/allocations')],
    'placement:allocations:list': [('GET', '/allocations/{consumer_uuid}')],
    'placement:allocations:update': [('PUT', '/allocations/{consumer_uuid}')],
    'placement:allocations:delete': [
        ('DELETE', '/allocations/{consumer_uuid}')],
    'placement:resource_providers:allocations:list': [
        ('GET', RP + '/allocations')],
    'placement:allocation_candidates:list': [
        ('GET', '/allocation_candidates')],
    'placement:reshaper:reshape': [('POST', '/reshaper')],
    'placement:allocation_candidates:explain': [
        ('GET', '/allocation_candidates/explain')],
    'placement:allocation_candidates:capacity': [
        ('GET', '/allocation_candidates/capacity')],
    'placement:audit': [('GET', '/audit')],
    'placement:audit:what_if': [('POST', '/audit/what_if')],
    'placement:overview': [('GET', '/overview')],
    'placement:overview:providers': [('GET', '/overview/providers')],
    'placement:overview:provider': [('GET', '/overview/providers/{uuid}')],
}

# Base rules that fall back to the pre-Wallaby admin-only default.
DEPRECATED_TO_ADMIN = {
    'service_api', 'admin_or_service_api', 'project_reader_api',
    'admin_or_project_reader_or_service_api',
}


def _rules_by_name():
    return {rule.name: rule for rule in policies.list_rules()}


def _enforcer(tmp_path, policy_yaml=None, new_defaults=True):
    """Build an enforcer on a private config, optionally with a file.

    ``enforce_new_defaults`` is pinned so results don't depend on the
    installed oslo.policy's choice of default for it.
    """
    conf = cfg.ConfigOpts()
    policy_opts.set_defaults(conf)
    conf([], default_config_files=[])
    conf.set_override('enforce_new_defaults', new_defaults,
                      group='oslo_policy')
    # Keep the enforcer from picking up any policy.d on the host.
    conf.set_override('policy_dirs', [], group='oslo_policy')
    if policy_yaml is not None:
        path = tmp_path / 'policy.yaml'
        path.write_text(policy_yaml)
        conf.set_override('policy_file', str(path), group='oslo_policy')
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    enforcer.load_rules()
    return enforcer


def test_rule_names_check_strings_and_scopes():
    actual = {rule.name: (rule.check_str, rule.scope_types)
              for rule in policies.list_rules()}
    assert actual == EXPECTED_RULES


def test_rule_order_matches_upstream():
    names = [rule.name for rule in policies.list_rules()]
    assert names == list(EXPECTED_RULES)


def test_no_duplicate_names():
    names = [rule.name for rule in policies.list_rules()]
    assert len(names) == len(set(names))


def test_documented_operations():
    documented = {
        rule.name: [(op['method'], op['path']) for op in rule.operations]
        for rule in policies.list_rules()
        if isinstance(rule, policy.DocumentedRuleDefault)
    }
    assert documented == EXPECTED_OPERATIONS


def test_every_rule_has_a_description():
    assert all(rule.description for rule in policies.list_rules())


def test_deprecated_rules():
    for name, rule in _rules_by_name().items():
        deprecated = rule.deprecated_rule
        if name not in DEPRECATED_TO_ADMIN:
            assert deprecated is None, name
            continue
        assert deprecated.name == 'rule:admin_api', name
        assert deprecated.check_str == 'role:admin', name
        assert deprecated.deprecated_since == (
            versionutils.deprecated.WALLABY), name
        assert deprecated.deprecated_reason, name


def test_module_constants_match_rule_names():
    rules = _rules_by_name()
    for name in (policies.resource_provider.LIST,
                 policies.inventory.UPDATE,
                 policies.aggregate.UPDATE,
                 policies.trait.RP_TRAIT_LIST,
                 policies.trait.TRAITS_DELETE,
                 policies.allocation.ALLOC_MANAGE,
                 policies.allocation.RP_ALLOC_LIST,
                 policies.allocation_candidate.LIST,
                 policies.usage.PROVIDER_USAGES,
                 policies.usage.TOTAL_USAGES,
                 policies.reshaper.RESHAPE):
        assert name in rules


def test_enforcer_registers_and_loads_defaults(tmp_path):
    enforcer = _enforcer(tmp_path)
    assert set(EXPECTED_RULES) <= set(enforcer.rules)


@pytest.mark.parametrize('roles, allowed', [
    (['admin'], True),
    (['service'], True),
    (['reader'], False),
    ([], False),
])
def test_default_admin_or_service(tmp_path, roles, allowed):
    enforcer = _enforcer(tmp_path)
    creds = {'roles': roles, 'project_id': 'p1'}
    assert enforcer.enforce(
        policies.resource_provider.LIST, {}, creds) is allowed


def test_reshaper_is_service_only(tmp_path):
    enforcer = _enforcer(tmp_path)
    rule = policies.reshaper.RESHAPE
    assert enforcer.enforce(rule, {}, {'roles': ['service']})
    assert not enforcer.enforce(rule, {}, {'roles': ['admin']})


def test_deprecated_admin_fallback(tmp_path):
    # Without the new defaults the old admin-only rule is OR-ed in (with a
    # warning), so admins keep access to service-only APIs meanwhile.
    with pytest.warns(UserWarning, match='was deprecated'):
        enforcer = _enforcer(tmp_path, new_defaults=False)
    creds = {'roles': ['admin']}
    assert enforcer.enforce(policies.reshaper.RESHAPE, {}, creds)


def test_project_reader_sees_only_own_usages(tmp_path):
    enforcer = _enforcer(tmp_path)
    creds = {'roles': ['reader'], 'project_id': 'p1'}
    rule = policies.usage.TOTAL_USAGES
    assert enforcer.enforce(rule, {'project_id': 'p1'}, creds)
    assert not enforcer.enforce(rule, {'project_id': 'p2'}, creds)


def test_policy_file_override_is_honoured(tmp_path):
    enforcer = _enforcer(
        tmp_path, '"placement:resource_providers:list": "@"\n')
    anyone = {'roles': [], 'project_id': 'p1'}
    assert enforcer.enforce(policies.resource_provider.LIST, {}, anyone)
    # Rules not named in the file keep their defaults.
    assert not enforcer.enforce(policies.resource_provider.CREATE, {}, anyone)
