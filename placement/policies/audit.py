"""Policy for the audit (an extension of this service): it shows every
project's consumers and the whole cloud's capacity, so it is admin-only
by default."""

from oslo_policy import policy

from placement.policies import base

AUDIT = 'placement:audit'
WHAT_IF = 'placement:audit:what_if'

rules = [
    policy.DocumentedRuleDefault(
        name=AUDIT,
        check_str=base.RULE_ADMIN_API,
        description='List allocations over capacity, consumers split '
                    'across trees, stale migrations and unusable '
                    'inventory (an extension of this service).',
        operations=[{'method': 'GET', 'path': '/audit'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=WHAT_IF,
        check_str=base.RULE_ADMIN_API,
        description='Say what changed inventories would do, writing '
                    'nothing (an extension of this service).',
        operations=[{'method': 'POST', 'path': '/audit/what_if'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
