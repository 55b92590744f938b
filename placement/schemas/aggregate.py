"""JSON schemas for PUT /resource_providers/{uuid}/aggregates.

Before 1.19 the body is the bare list of aggregate uuids; from 1.19 it is
an object that also carries the provider generation the client last saw,
so a stale writer is refused instead of silently overwriting.
"""

import copy

_AGGREGATE_UUIDS = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}

PUT_1_1 = copy.deepcopy(_AGGREGATE_UUIDS)

PUT_1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': copy.deepcopy(_AGGREGATE_UUIDS),
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}

# The answer, as published in the OpenAPI document (placement.openapi):
# the generation comes with the list from 1.19.
AGGREGATES = {
    'type': 'object',
    'properties': {
        'aggregates': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates'],
}
