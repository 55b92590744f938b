"""JSON schemas for inventory bodies.

The numeric bounds are those of the database columns (32-bit integers and
a single-precision float), so that anything the schema lets through can be
stored on every backend.  Relations between fields (reserved against total,
the allocation ratio) are checked by the handler, which knows the
microversion.
"""

import copy

MAX_INT = 0x7FFFFFFF
MAX_FLOAT = 3.40282e+38
RESOURCE_CLASS_PATTERN = '^[A-Z0-9_]+$'


def _counter(minimum):
    return {'type': 'integer', 'maximum': MAX_INT, 'minimum': minimum}


# PUT /resource_providers/{uuid}/inventories/{resource_class}
PUT_ONE = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': _counter(1),
        'reserved': _counter(0),
        'min_unit': _counter(1),
        'max_unit': _counter(1),
        'step_size': _counter(1),
        'allocation_ratio': {'type': 'number', 'maximum': MAX_FLOAT},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}

# POST /resource_providers/{uuid}/inventories: the class is in the body and
# the generation, though accepted, is not needed.
POST = copy.deepcopy(PUT_ONE)
POST['properties']['resource_class'] = {
    'type': 'string', 'pattern': RESOURCE_CLASS_PATTERN}
POST['required'] = ['total', 'resource_class']

# One record of PUT /resource_providers/{uuid}/inventories.
PUT_ALL_RECORD = copy.deepcopy(PUT_ONE)
PUT_ALL_RECORD['required'] = ['total']

# PUT /resource_providers/{uuid}/inventories.  Only records under class-like
# names are checked here (as upstream does, which keeps its error messages);
# the handler checks the others.
PUT_ALL = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {RESOURCE_CLASS_PATTERN: PUT_ALL_RECORD},
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}

# Answers, as published in the OpenAPI document (placement.openapi).
_RECORD = {
    'type': 'object',
    'properties': dict(
        {name: {'type': 'integer'} for name in (
            'total', 'reserved', 'min_unit', 'max_unit', 'step_size')},
        allocation_ratio={'type': 'number'}),
    'required': ['total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio'],
}

INVENTORY = copy.deepcopy(_RECORD)
INVENTORY['properties']['resource_provider_generation'] = {'type': 'integer'}
INVENTORY['required'].append('resource_provider_generation')

INVENTORIES = {
    'type': 'object',
    'properties': {
        'inventories': {'type': 'object', 'additionalProperties': _RECORD},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['inventories', 'resource_provider_generation'],
}
