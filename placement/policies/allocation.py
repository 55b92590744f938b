"""Policies for consumer allocations and a provider's allocations."""

from oslo_policy import policy

from placement.policies import base

RP_ALLOC_LIST = 'placement:resource_providers:allocations:list'

ALLOC_PREFIX = 'placement:allocations:%s'
ALLOC_LIST = ALLOC_PREFIX % 'list'
ALLOC_MANAGE = ALLOC_PREFIX % 'manage'
ALLOC_UPDATE = ALLOC_PREFIX % 'update'
ALLOC_DELETE = ALLOC_PREFIX % 'delete'

CONSUMER_PATH = '/allocations/{consumer_uuid}'

rules = [
    policy.DocumentedRuleDefault(
        name=ALLOC_MANAGE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Write allocations for several consumers at once.',
        operations=[{'method': 'POST', 'path': '/allocations'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=ALLOC_LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read the allocations held by a consumer.',
        operations=[{'method': 'GET', 'path': CONSUMER_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=ALLOC_UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Replace the allocations held by a consumer.',
        operations=[{'method': 'PUT', 'path': CONSUMER_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=ALLOC_DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Remove every allocation held by a consumer.',
        operations=[{'method': 'DELETE', 'path': CONSUMER_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=RP_ALLOC_LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read the allocations made against a resource '
                    'provider.',
        operations=[{'method': 'GET',
                     'path': '/resource_providers/{uuid}/allocations'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
