"""Policy for the overview (an extension of this service, what the
dashboard at /ui/ reads).

Each answer summarises data upstream's API already guards, so each rule
defaults to what guards that data (``rule:admin_or_service_api``), and
the handler checks those rules too: a token sees no more through the
overview than through the endpoints it summarises.  To open the
dashboard to readers, open both (e.g. ``rule:admin_api or role:reader``
for this rule and the ones its description names).
"""

from oslo_policy import policy

from placement.policies import base

SUMMARY = 'placement:overview'
PROVIDERS = 'placement:overview:providers'
PROVIDER = 'placement:overview:provider'

rules = [
    policy.DocumentedRuleDefault(
        name=SUMMARY,
        check_str=base.ADMIN_OR_SERVICE,
        description='Summarise capacity and usage per resource class over '
                    'every provider (an extension of this service; also '
                    'needs placement:resource_providers:list, '
                    'placement:resource_providers:inventories:list and '
                    'placement:resource_providers:usages).',
        operations=[{'method': 'GET', 'path': '/overview'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=PROVIDERS,
        check_str=base.ADMIN_OR_SERVICE,
        description='List providers with their capacity and usage, a page '
                    'at a time (an extension of this service; also needs '
                    'placement:resource_providers:list, '
                    'placement:resource_providers:inventories:list and '
                    'placement:resource_providers:usages).',
        operations=[{'method': 'GET', 'path': '/overview/providers'}],
        scope_types=['project'],
    ),
    policy.DocumentedRuleDefault(
        name=PROVIDER,
        check_str=base.ADMIN_OR_SERVICE,
        description='Show a provider\'s whole tree, the sharing providers '
                    'it reaches and the consumers holding there (an '
                    'extension of this service; also needs '
                    'placement:resource_providers:show, '
                    'placement:resource_providers:inventories:list, '
                    'placement:resource_providers:usages, '
                    'placement:resource_providers:traits:list, '
                    'placement:resource_providers:aggregates:list, '
                    'placement:resource_providers:allocations:list and '
                    'placement:allocations:list).',
        operations=[{'method': 'GET', 'path': '/overview/providers/{uuid}'}],
        scope_types=['project'],
    ),
]


def list_rules():
    return rules
