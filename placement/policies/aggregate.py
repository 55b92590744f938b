"""Policies for a resource provider's aggregate associations."""

from oslo_policy import policy

from placement.policies import base

PREFIX = 'placement:resource_providers:aggregates:%s'
LIST = PREFIX % 'list'
UPDATE = PREFIX % 'update'

BASE_PATH = '/resource_providers/{uuid}/aggregates'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read the aggregates a resource provider belongs to.',
        operations=[{'method': 'GET', 'path': BASE_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Replace the aggregates of a resource provider.',
        operations=[{'method': 'PUT', 'path': BASE_PATH}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
