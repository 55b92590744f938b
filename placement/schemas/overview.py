"""JSON schemas of the /overview extensions: their query strings (each
value as the query string gives it) and their answers, as published in
the OpenAPI document."""

_UUID = {'type': 'string', 'format': 'uuid'}
_LIMIT = {'type': 'string', 'pattern': '^[1-9][0-9]{0,3}$'}
# A class and the free units wanted of it: ``VCPU:4``.
_FREE = '[A-Z0-9_]{1,255}:[0-9]{1,10}'
MAX_LIMIT = 1000
DEFAULT_LIMIT = 50
DEFAULT_CONSUMER_LIMIT = 100

# GET /overview: no parameters.
SUMMARY_QUERY = {
    'type': 'object',
    'properties': {},
    'additionalProperties': False,
}

# GET /overview/providers
PROVIDERS_QUERY = {
    'type': 'object',
    'properties': {
        'prefix': {'type': 'string', 'minLength': 1, 'maxLength': 200},
        'required': {'type': 'string', 'minLength': 1},
        'member_of': {'type': 'string', 'minLength': 1},
        'in_tree': _UUID,
        'free': {'type': 'string', 'pattern': '^%s(,%s)*$' % (_FREE,
                                                               _FREE)},
        'limit': _LIMIT,
        'marker': _UUID,
    },
    'additionalProperties': False,
}

# GET /overview/providers/{uuid}
PROVIDER_QUERY = {
    'type': 'object',
    'properties': {'consumer_limit': _LIMIT},
    'additionalProperties': False,
}

_COUNT = {'type': 'integer', 'minimum': 0}
_BIN = {
    'type': 'object',
    'properties': {'min': _COUNT, 'max': _COUNT, 'providers': _COUNT},
    'required': ['min', 'max', 'providers'],
}
_CLASS_SUMMARY = {
    'type': 'object',
    'properties': {
        'total': _COUNT, 'reserved': _COUNT, 'capacity': _COUNT,
        'used': _COUNT, 'free': _COUNT, 'over': _COUNT,
        'providers': _COUNT, 'providers_with_free': _COUNT,
        'providers_over_capacity': _COUNT, 'max_free': _COUNT,
        'histogram': {'type': 'array', 'items': _BIN},
    },
    'required': ['total', 'reserved', 'capacity', 'used', 'free', 'over',
                 'providers', 'providers_with_free',
                 'providers_over_capacity', 'max_free', 'histogram'],
}

SUMMARY = {
    'type': 'object',
    'properties': {
        'providers': _COUNT,
        'trees': _COUNT,
        'sharing_providers': _COUNT,
        'providers_over_capacity': _COUNT,
        'resource_classes': {'type': 'object',
                             'additionalProperties': _CLASS_SUMMARY},
    },
    'required': ['providers', 'trees', 'sharing_providers',
                 'providers_over_capacity', 'resource_classes'],
}

_RECORD = {
    'type': 'object',
    'properties': {
        'total': {'type': 'integer'}, 'reserved': {'type': 'integer'},
        'min_unit': {'type': 'integer'}, 'max_unit': {'type': 'integer'},
        'step_size': {'type': 'integer'},
        'allocation_ratio': {'type': 'number'},
        'capacity': {'type': 'integer'}, 'used': {'type': 'integer'},
    },
    'required': ['total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio', 'capacity', 'used'],
}
_NULLABLE_UUID = {'type': ['string', 'null']}
_PROVIDER_PROPERTIES = {
    'uuid': {'type': 'string'},
    'name': {'type': ['string', 'null']},
    'generation': {'type': 'integer'},
    'parent_provider_uuid': _NULLABLE_UUID,
    'root_provider_uuid': {'type': 'string'},
    'sharing': {'type': 'boolean'},
    'resources': {'type': 'object', 'additionalProperties': _RECORD},
    'over_capacity': {'type': 'array', 'items': {'type': 'string'}},
}
_PROVIDER_REQUIRED = list(_PROVIDER_PROPERTIES)
_LISTED = {'type': 'object', 'properties': _PROVIDER_PROPERTIES,
           'required': _PROVIDER_REQUIRED}

PROVIDERS = {
    'type': 'object',
    'properties': {
        'resource_providers': {'type': 'array', 'items': _LISTED},
        'total': _COUNT,
        'next_marker': _NULLABLE_UUID,
    },
    'required': ['resource_providers', 'total', 'next_marker'],
}

_NAMES = {'type': 'array', 'items': {'type': 'string'}}
_IN_TREE = {
    'type': 'object',
    'properties': dict(_PROVIDER_PROPERTIES, traits=_NAMES,
                       aggregates=_NAMES, depth=_COUNT,
                       shares_with_trees=_COUNT),
    'required': _PROVIDER_REQUIRED + ['traits', 'aggregates', 'depth'],
}
_REACHED = {
    'type': 'object',
    'properties': dict(_PROVIDER_PROPERTIES, traits=_NAMES,
                       aggregates=_NAMES, via_aggregates=_NAMES),
    'required': _PROVIDER_REQUIRED + ['traits', 'aggregates',
                                      'via_aggregates'],
}
_CONSUMER = {
    'type': 'object',
    'properties': {
        'consumer': {'type': 'string'},
        'consumer_type': {'type': ['string', 'null']},
        'project_id': {'type': ['string', 'null']},
        'user_id': {'type': ['string', 'null']},
        'resources': {'type': 'object', 'additionalProperties': {
            'type': 'object', 'additionalProperties': {'type': 'integer'}}},
    },
    'required': ['consumer', 'consumer_type', 'project_id', 'user_id',
                 'resources'],
}

PROVIDER = {
    'type': 'object',
    'properties': {
        'provider': {'type': 'string'},
        'root_provider_uuid': {'type': 'string'},
        'providers': {'type': 'array', 'items': _IN_TREE},
        'sharing_providers': {'type': 'array', 'items': _REACHED},
        'consumers': {'type': 'array', 'items': _CONSUMER},
        'consumer_count': _COUNT,
    },
    'required': ['provider', 'root_provider_uuid', 'providers',
                 'sharing_providers', 'consumers', 'consumer_count'],
}
