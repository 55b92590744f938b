"""Policies for /traits and for the traits of a resource provider.

Two families share this module because both act on traits; the
``TRAITS_*`` names cover the global trait catalogue and the ``RP_TRAIT_*``
names cover the traits set on one provider.
"""

from oslo_policy import policy

from placement.policies import base

RP_TRAIT_PREFIX = 'placement:resource_providers:traits:%s'
RP_TRAIT_LIST = RP_TRAIT_PREFIX % 'list'
RP_TRAIT_UPDATE = RP_TRAIT_PREFIX % 'update'
RP_TRAIT_DELETE = RP_TRAIT_PREFIX % 'delete'

TRAITS_PREFIX = 'placement:traits:%s'
TRAITS_LIST = TRAITS_PREFIX % 'list'
TRAITS_SHOW = TRAITS_PREFIX % 'show'
TRAITS_UPDATE = TRAITS_PREFIX % 'update'
TRAITS_DELETE = TRAITS_PREFIX % 'delete'

TRAIT_PATH = '/traits/{name}'
RP_TRAIT_PATH = '/resource_providers/{uuid}/traits'

rules = [
    policy.DocumentedRuleDefault(
        name=TRAITS_LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Enumerate standard and custom traits.',
        operations=[{'method': 'GET', 'path': '/traits'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=TRAITS_SHOW,
        check_str=base.ADMIN_OR_SERVICE,
        description='Check whether a trait exists.',
        operations=[{'method': 'GET', 'path': TRAIT_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=TRAITS_UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Create a custom trait.',
        operations=[{'method': 'PUT', 'path': TRAIT_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=TRAITS_DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Remove a custom trait.',
        operations=[{'method': 'DELETE', 'path': TRAIT_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=RP_TRAIT_LIST,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read the traits set on a resource provider.',
        operations=[{'method': 'GET', 'path': RP_TRAIT_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=RP_TRAIT_UPDATE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Replace the traits set on a resource provider.',
        operations=[{'method': 'PUT', 'path': RP_TRAIT_PATH}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=RP_TRAIT_DELETE,
        check_str=base.ADMIN_OR_SERVICE,
        description='Clear all traits from a resource provider.',
        operations=[{'method': 'DELETE', 'path': RP_TRAIT_PATH}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
