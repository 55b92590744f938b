"""The enforcer: its policy-file reload throttle and its kept decisions."""

import os

from oslo_context import context as oslo_context

from placement import conf as placement_conf
from placement import policy

RULE = 'placement:resource_providers:list'


def _enforcer(tmp_path, rules):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(rules)
    conf = placement_conf.new_config()
    conf([], project='placement', default_config_files=[])
    conf.set_override('policy_file', str(policy_file), group='oslo_policy')
    return policy_file, policy.build_enforcer(conf)


def _allowed(enforcer):
    creds = oslo_context.RequestContext(user_id='u', project_id='p',
                                        roles=['member'])
    return enforcer.authorize(RULE, {'project_id': 'p'}, creds,
                              do_raise=False)


def _edit(policy_file, rules):
    policy_file.write_text(rules)
    # Make sure the modification time moves even on coarse filesystems.
    stat = policy_file.stat()
    os.utime(policy_file, (stat.st_atime, stat.st_mtime + 5))


def test_policy_file_is_not_re_read_within_the_interval(tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(policy, 'RULES_CHECK_INTERVAL', 3600)
    policy_file, enforcer = _enforcer(tmp_path, '{}\n')
    assert not _allowed(enforcer)
    _edit(policy_file, '"%s": "@"\n' % RULE)
    assert not _allowed(enforcer)


def test_policy_file_change_applies_after_the_interval(tmp_path,
                                                       monkeypatch):
    monkeypatch.setattr(policy, 'RULES_CHECK_INTERVAL', 0)
    policy_file, enforcer = _enforcer(tmp_path, '{}\n')
    assert not _allowed(enforcer)
    _edit(policy_file, '"%s": "@"\n' % RULE)
    assert _allowed(enforcer)


def _counting_enforce(monkeypatch):
    calls = []
    original = policy.oslo_policy.Enforcer.enforce
    monkeypatch.setattr(policy.oslo_policy.Enforcer, 'enforce',
                        lambda self, *args, **kwargs: calls.append(args[0])
                        or original(self, *args, **kwargs))
    return calls


def test_an_allowed_decision_is_kept_and_a_refusal_is_not(tmp_path,
                                                          monkeypatch):
    calls = _counting_enforce(monkeypatch)
    _, enforcer = _enforcer(tmp_path, '"%s": "@"\n' % RULE)
    assert _allowed(enforcer) and _allowed(enforcer)
    assert len(calls) == 1
    creds = oslo_context.RequestContext(user_id='u', project_id='other',
                                        roles=['member'])
    assert enforcer.authorize(RULE, {'project_id': 'other'}, creds)
    assert len(calls) == 2      # other credentials, other target
    refused = 'placement:resource_providers:create'
    for _ in range(2):
        assert not enforcer.authorize(refused, {'project_id': 'p'}, creds)
    assert len(calls) == 4


def test_kept_decisions_go_with_the_rules_they_were_made_by(tmp_path,
                                                            monkeypatch):
    monkeypatch.setattr(policy, 'RULES_CHECK_INTERVAL', 0)
    policy_file, enforcer = _enforcer(tmp_path, '"%s": "@"\n' % RULE)
    assert _allowed(enforcer)
    _edit(policy_file, '"%s": "!"\n' % RULE)
    assert not _allowed(enforcer)


def test_kept_decisions_go_with_the_scope_option(tmp_path):
    """A system-scoped admin token on a project-scoped rule: allowed
    while scope is not enforced, refused as soon as it is."""
    _, enforcer = _enforcer(tmp_path, '{}\n')
    enforcer.conf.set_override('enforce_new_defaults', True,
                               group='oslo_policy')
    enforcer.load_rules(force_reload=True)
    creds = oslo_context.RequestContext(user_id='u', system_scope='all',
                                        roles=['admin'])
    for enforce_scope, allowed in ((False, True), (True, False)):
        enforcer.conf.set_override('enforce_scope', enforce_scope,
                                   group='oslo_policy')
        assert enforcer.authorize(
            'placement:allocation_candidates:explain', {'project_id': 'p'},
            creds) is allowed


def test_credentials_differing_in_any_policy_value_are_decided_apart():
    """The kept decision's key reads the context's attributes straight:
    every value ``to_policy_values`` gives policy must move it."""
    base = dict(user_id='u', project_id='p', roles=['reader'],
                system_scope=None, domain_id=None, user_domain_id='d',
                project_domain_id='d', is_admin_project=True,
                service_user_id=None, service_user_domain_id=None,
                service_project_id=None, service_project_domain_id=None,
                service_roles=[])
    key = policy._credentials_key(oslo_context.RequestContext(**base))
    assert key == policy._credentials_key(oslo_context.RequestContext(
        **base))
    hash(key)
    others = dict(user_id='v', project_id='q', roles=['admin'],
                  system_scope='all', domain_id='x', user_domain_id='e',
                  project_domain_id='e', is_admin_project=False,
                  service_user_id='s', service_user_domain_id='e',
                  service_project_id='q', service_project_domain_id='e',
                  service_roles=['service'])
    assert set(others) == set(policy._POLICY_NAMES)
    for name, value in others.items():
        changed = oslo_context.RequestContext(**dict(base, **{name: value}))
        assert changed.to_policy_values()[name] != \
            oslo_context.RequestContext(**base).to_policy_values()[name]
        assert policy._credentials_key(changed) != key, name
