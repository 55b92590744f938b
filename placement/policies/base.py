"""Generic rules that the per-resource policies are built from.

Resource policies reference these by ``rule:<name>`` rather than spelling
out roles, so an operator can retune access for the whole API by
overriding a handful of base rules.
"""

from oslo_log import versionutils
from oslo_policy import policy

RULE_ADMIN_API = 'rule:admin_api'

# Check strings the resource modules use as their defaults.
ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api')

_DEPRECATED_REASON = (
    'The placement defaults now distinguish admin, service and project '
    'reader roles and declare scope types. The previous admin-only '
    'default is deprecated and will stop being honoured in a future '
    'release.')

# Before the role-aware defaults existed everything was admin-only; keep
# that as the deprecated alternative so existing deployments keep working
# while they migrate.
DEPRECATED_ADMIN_POLICY = policy.DeprecatedRule(
    name=RULE_ADMIN_API,
    check_str='role:admin',
    deprecated_reason=_DEPRECATED_REASON,
    deprecated_since=versionutils.deprecated.WALLABY,
)

rules = [
    policy.RuleDefault(
        'admin_api',
        'role:admin',
        description='Base rule granting access to administrators.',
        scope_types=['project'],
    ),
    policy.RuleDefault(
        'service_api',
        'role:service',
        description='Base rule for APIs meant only for other services.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'admin_or_service_api',
        'role:admin or role:service',
        description='Base rule for APIs open to administrators and '
                    'services; the default for most placement APIs.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'project_reader_api',
        'role:reader and project_id:%(project_id)s',
        description='Base rule matching a reader of the targeted project.',
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'admin_or_project_reader_or_service_api',
        'role:admin or rule:project_reader_api or role:service',
        description='Base rule for read APIs that a project reader may '
                    'use on its own project, besides admins and services.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
]


def list_rules():
    return rules
