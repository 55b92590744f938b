"""JSON schemas for allocation bodies, per microversion.

Their structure follows upstream's, because jsonschema's error messages
(which name the failing part of the schema) reach clients verbatim.
Amounts are capped at the database column's range so that anything the
schema lets through can be stored on every backend.
"""

import copy

from placement.schemas import inventory

UUID_PATTERN = '^[0-9a-fA-F-]{36}$'
RESOURCE_CLASS_PATTERN = inventory.RESOURCE_CLASS_PATTERN
CONSUMER_TYPE_PATTERN = RESOURCE_CLASS_PATTERN
# A request group suffix, as named in ``mappings`` (1.34).
GROUP_SUFFIX_PATTERN = r'[a-zA-Z0-9_-]{1,64}'

_EXTERNAL_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_RESOURCES = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        # No maximum, as upstream: an amount no inventory can hold is the
        # capacity check's 409, before anything is stored.
        RESOURCE_CLASS_PATTERN: {'type': 'integer', 'minimum': 1},
    },
    'additionalProperties': False,
}

# PUT /allocations/{consumer_uuid} before 1.8: a list, one item a provider.
PUT_1_0 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {
                            'uuid': {'type': 'string', 'format': 'uuid'},
                        },
                        'additionalProperties': False,
                        'required': ['uuid'],
                    },
                    'resources': _RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}

# 1.8: who the consumer belongs to is required.
PUT_1_8 = copy.deepcopy(PUT_1_0)
PUT_1_8['properties']['project_id'] = _EXTERNAL_ID
PUT_1_8['properties']['user_id'] = _EXTERNAL_ID
PUT_1_8['required'] += ['project_id', 'user_id']

# 1.12: a dict keyed by provider uuid, the form GET returns.
PUT_1_12 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'minProperties': 1,
            'patternProperties': {
                UUID_PATTERN: {
                    'type': 'object',
                    'properties': {
                        # Accepted (GET returns it) but not checked.
                        'generation': {'type': 'integer'},
                        'resources': _RESOURCES,
                    },
                    'required': ['resources'],
                    'additionalProperties': False,
                },
            },
            'additionalProperties': False,
        },
        'project_id': _EXTERNAL_ID,
        'user_id': _EXTERNAL_ID,
    },
    'additionalProperties': False,
    'required': ['allocations', 'project_id', 'user_id'],
}

# One consumer of POST /allocations: it may be emptied.
_EMPTYABLE = copy.deepcopy(PUT_1_12)
_EMPTYABLE['properties']['allocations']['minProperties'] = 0

_GENERATION = {'type': ['integer', 'null'], 'additionalProperties': False}

# 1.28: the consumer generation is required, and {} empties.
PUT_1_28 = copy.deepcopy(_EMPTYABLE)
PUT_1_28['properties']['consumer_generation'] = _GENERATION
PUT_1_28['required'].append('consumer_generation')

# 1.34: which request group each provider satisfied (accepted, not kept).
PUT_1_34 = copy.deepcopy(PUT_1_28)
PUT_1_34['properties']['mappings'] = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        GROUP_SUFFIX_PATTERN: {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'string', 'format': 'uuid'},
        },
    },
}

# 1.38: the consumer type is required.
PUT_1_38 = copy.deepcopy(PUT_1_34)
PUT_1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': CONSUMER_TYPE_PATTERN,
    'minLength': 1, 'maxLength': 255,
}
PUT_1_38['required'].append('consumer_type')


def _many(consumer_schema):
    return {
        'type': 'object',
        'minProperties': 1,
        'additionalProperties': False,
        'patternProperties': {UUID_PATTERN: consumer_schema},
    }


_EMPTYABLE_1_28 = copy.deepcopy(_EMPTYABLE)
_EMPTYABLE_1_28['properties']['consumer_generation'] = _GENERATION
_EMPTYABLE_1_28['required'].append('consumer_generation')

# POST /allocations (1.13): many consumers, keyed by uuid.
POST_1_13 = _many(_EMPTYABLE)
POST_1_28 = _many(_EMPTYABLE_1_28)
POST_1_34 = _many(PUT_1_34)
POST_1_38 = _many(PUT_1_38)

# (first microversion, schema), newest first.
PUT_BY_VERSION = (((1, 38), PUT_1_38), ((1, 34), PUT_1_34),
                  ((1, 28), PUT_1_28), ((1, 12), PUT_1_12),
                  ((1, 8), PUT_1_8), ((1, 0), PUT_1_0))
POST_BY_VERSION = (((1, 38), POST_1_38), ((1, 34), POST_1_34),
                   ((1, 28), POST_1_28), ((1, 13), POST_1_13))


# PATCH /allocations/{consumer_uuid} (an extension, from 1.28): a JSON
# merge patch (RFC 7396) of the dict form. ``null`` removes a provider or
# a class; the consumer generation is required, the owner only for a
# consumer that holds nothing yet.
_NULLABLE_AMOUNT = {'anyOf': [
    {'type': 'null'},
    {'type': 'integer', 'minimum': 1}]}
PATCH_1_28 = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'patternProperties': {
                UUID_PATTERN: {'anyOf': [{'type': 'null'}, {
                    'type': 'object',
                    'properties': {
                        'generation': {'type': 'integer'},
                        'resources': {
                            'type': 'object',
                            'patternProperties': {
                                RESOURCE_CLASS_PATTERN: _NULLABLE_AMOUNT},
                            'additionalProperties': False,
                        },
                    },
                    'additionalProperties': False,
                }]},
            },
            'additionalProperties': False,
        },
        'consumer_generation': _GENERATION,
        'project_id': _EXTERNAL_ID,
        'user_id': _EXTERNAL_ID,
    },
    'required': ['allocations', 'consumer_generation'],
    'additionalProperties': False,
}
PATCH_1_38 = copy.deepcopy(PATCH_1_28)
PATCH_1_38['properties']['consumer_type'] = PUT_1_38['properties'][
    'consumer_type']
PATCH_BY_VERSION = (((1, 38), PATCH_1_38), ((1, 28), PATCH_1_28))

# Answers, as published in the OpenAPI document (placement.openapi).
# Amounts by resource class (usages answer in this shape too).
AMOUNTS = {'type': 'object', 'additionalProperties': {'type': 'integer'}}

# GET /allocations/{consumer_uuid}: the dict form (1.12); owner from 1.12,
# consumer generation from 1.28, consumer type from 1.38.
CONSUMER_ALLOCATIONS = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'additionalProperties': {
                'type': 'object',
                'properties': {'generation': {'type': 'integer'},
                               'resources': AMOUNTS},
                'required': ['resources'],
            },
        },
        'project_id': {'type': 'string'},
        'user_id': {'type': 'string'},
        'consumer_generation': {'type': ['integer', 'null']},
        'consumer_type': {'type': 'string'},
    },
    'required': ['allocations'],
}

# GET /resource_providers/{uuid}/allocations
PROVIDER_ALLOCATIONS = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'additionalProperties': {
                'type': 'object',
                'properties': {'resources': AMOUNTS},
                'required': ['resources'],
            },
        },
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['allocations', 'resource_provider_generation'],
}
