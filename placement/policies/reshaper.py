"""Policy for the /reshaper endpoint.

Reshaping moves inventory and allocations between providers in one
transaction; only services (e.g. nova-compute) are expected to do that,
hence the service-only default.
"""

from oslo_policy import policy

from placement.policies import base

PREFIX = 'placement:reshaper:%s'
RESHAPE = PREFIX % 'reshape'

rules = [
    policy.DocumentedRuleDefault(
        name=RESHAPE,
        check_str=base.SERVICE,
        description='Atomically rewrite inventories and allocations '
                    'across resource providers.',
        operations=[{'method': 'POST', 'path': '/reshaper'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
