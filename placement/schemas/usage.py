"""JSON schemas for the query string of GET /usages."""

import copy

from placement.schemas import allocation

_EXTERNAL_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

GET_1_9 = {
    'type': 'object',
    'properties': {
        'project_id': _EXTERNAL_ID,
        'user_id': _EXTERNAL_ID,
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

# 1.38: narrowed to one consumer type, ``all`` or ``unknown``.
GET_1_38 = copy.deepcopy(GET_1_9)
GET_1_38['properties']['consumer_type'] = {
    'type': 'string',
    'pattern': '%s|^all|^unknown$' % allocation.CONSUMER_TYPE_PATTERN,
    'minLength': 1,
    'maxLength': 255,
}

# Answers, as published in the OpenAPI document (placement.openapi).
PROVIDER_USAGES = {
    'type': 'object',
    'properties': {'usages': allocation.AMOUNTS,
                   'resource_provider_generation': {'type': 'integer'}},
    'required': ['usages', 'resource_provider_generation'],
}

# Amounts by class; from 1.38 amounts (and consumer_count) by consumer type.
USAGES = {
    'type': 'object',
    'properties': {'usages': {
        'type': 'object',
        'additionalProperties': {'type': ['integer', 'object']},
    }},
    'required': ['usages'],
}
