"""Policies for per-provider and per-project usage reports."""

from oslo_policy import policy

from placement.policies import base

PROVIDER_USAGES = 'placement:resource_providers:usages'
TOTAL_USAGES = 'placement:usages'

rules = [
    policy.DocumentedRuleDefault(
        name=PROVIDER_USAGES,
        check_str=base.ADMIN_OR_SERVICE,
        description='Read how much of each resource class a resource '
                    'provider has allocated.',
        operations=[{'method': 'GET',
                     'path': '/resource_providers/{uuid}/usages'}],
        scope_types=['project'],
    ),
    # Project readers may see their own project's totals; admins and
    # services may query any project.
    policy.DocumentedRuleDefault(
        name=TOTAL_USAGES,
        check_str=base.ADMIN_OR_PROJECT_READER_OR_SERVICE,
        description='Read the total resource consumption of a project '
                    '(optionally narrowed to one user).',
        operations=[{'method': 'GET', 'path': '/usages'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
