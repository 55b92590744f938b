"""Policies for the /resource_classes collection and its members."""

from oslo_policy import policy

from placement.policies import base

PREFIX = 'placement:resource_classes:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

COLLECTION = '/resource_classes'
MEMBER = COLLECTION + '/{name}'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Enumerate standard and custom resource classes.',
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Define a custom resource class.',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.ADMIN_OR_SERVICE,
        description='Fetch a single resource class.',
        operations=[{'method': 'GET', 'path': MEMBER}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Rename a custom resource class (microversions 1.2-1.6) '
                    'or create one idempotently (1.7 and later).',
        operations=[{'method': 'PUT', 'path': MEMBER}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Remove a custom resource class.',
        operations=[{'method': 'DELETE', 'path': MEMBER}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
