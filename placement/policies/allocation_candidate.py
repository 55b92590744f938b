"""Policy for querying /allocation_candidates."""

from oslo_policy import policy

from placement.policies import base

LIST = 'placement:allocation_candidates:list'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Find providers able to satisfy a resource request.',
        operations=[{'method': 'GET', 'path': '/allocation_candidates'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
