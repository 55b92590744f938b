"""Policies for a resource provider's inventories."""

from oslo_policy import policy

from placement.policies import base

PREFIX = 'placement:resource_providers:inventories:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

BASE_PATH = '/resource_providers/{uuid}/inventories'
ONE_CLASS = BASE_PATH + '/{resource_class}'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read all inventory records of a resource provider.',
        operations=[{'method': 'GET', 'path': BASE_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=CREATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Add an inventory record for one resource class.',
        operations=[{'method': 'POST', 'path': BASE_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read the inventory record of one resource class.',
        operations=[{'method': 'GET', 'path': ONE_CLASS}],
        scope_types=['project'],
    ),
    # Replacing the whole set and changing one record share a rule.
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Replace all inventory or change a single record.',
        operations=[
            {'method': 'PUT', 'path': BASE_PATH},
            {'method': 'PUT', 'path': ONE_CLASS},
        ],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Remove all inventory or a single record.',
        operations=[
            {'method': 'DELETE', 'path': BASE_PATH},
            {'method': 'DELETE', 'path': ONE_CLASS},
        ],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
