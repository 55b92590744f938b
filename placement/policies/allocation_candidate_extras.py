"""Policy for the extensions beside /allocation_candidates: explain and
capacity.  They tell who could place what where across the whole cloud,
so they are admin-only by default, on top of the candidates rule."""

from oslo_policy import policy

from placement.policies import base

EXPLAIN = 'placement:allocation_candidates:explain'
CAPACITY = 'placement:allocation_candidates:capacity'

rules = [
    policy.DocumentedRuleDefault(
        name=EXPLAIN,
        check_str=base.RULE_ADMIN_API,
        description='Explain which constraints of an allocation-candidates '
                    'request removed which providers (an extension of '
                    'this service).',
        operations=[{'method': 'GET',
                     'path': '/allocation_candidates/explain'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=CAPACITY,
        check_str=base.RULE_ADMIN_API,
        description='Count how many copies of an allocation-candidates '
                    'request fit in each tree (an extension of this '
                    'service).',
        operations=[{'method': 'GET',
                     'path': '/allocation_candidates/capacity'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
