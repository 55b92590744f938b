"""Policies for the /resource_providers collection and its members."""

from oslo_policy import policy

from placement.policies import base

PREFIX = 'placement:resource_providers:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

COLLECTION = '/resource_providers'
MEMBER = COLLECTION + '/{uuid}'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Query resource providers.',
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Add a new resource provider.',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.ADMIN_OR_SERVICE,
        description='Fetch a single resource provider.',
        operations=[{'method': 'GET', 'path': MEMBER}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Change the name or parent of a resource provider.',
        operations=[{'method': 'PUT', 'path': MEMBER}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Remove a resource provider.',
        operations=[{'method': 'DELETE', 'path': MEMBER}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
