"""JSON schemas for resource provider bodies and query strings."""

import copy

_UUID = {'type': 'string', 'format': 'uuid'}
_NULLABLE_UUID = {'anyOf': [_UUID, {'type': 'null'}]}

POST_1_0 = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'maxLength': 200},
        'uuid': _UUID,
    },
    'required': ['name'],
    'additionalProperties': False,
}

POST_1_14 = copy.deepcopy(POST_1_0)
POST_1_14['properties']['parent_provider_uuid'] = _NULLABLE_UUID

PUT_1_0 = copy.deepcopy(POST_1_0)
del PUT_1_0['properties']['uuid']

PUT_1_14 = copy.deepcopy(POST_1_14)
del PUT_1_14['properties']['uuid']

# Query strings of GET /resource_providers: each microversion adds a filter.
# Property order matters to clients only through error texts, which print
# the schema; it follows the order the filters were introduced in.
GET_1_0 = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'uuid': {'type': 'string', 'format': 'uuid'},
    },
    'additionalProperties': False,
}

GET_1_3 = copy.deepcopy(GET_1_0)
GET_1_3['properties']['member_of'] = {'type': 'string'}

# Amounts are checked by the query parser, not here.
GET_1_4 = copy.deepcopy(GET_1_3)
GET_1_4['properties']['resources'] = {'type': 'string'}

GET_1_14 = copy.deepcopy(GET_1_4)
GET_1_14['properties']['in_tree'] = {'type': 'string', 'format': 'uuid'}

GET_1_18 = copy.deepcopy(GET_1_14)
GET_1_18['properties']['required'] = {'type': 'string'}


GET_BY_VERSION = (((1, 18), GET_1_18), ((1, 14), GET_1_14),
                  ((1, 4), GET_1_4), ((1, 3), GET_1_3), ((1, 0), GET_1_0))

# Answers, as published in the OpenAPI document (placement.openapi).
LINKS = {
    'type': 'array',
    'items': {
        'type': 'object',
        'properties': {'rel': {'type': 'string'},
                       'href': {'type': 'string'}},
        'required': ['rel', 'href'],
    },
}

PROVIDER = {
    'type': 'object',
    'properties': {
        'uuid': _UUID,
        'name': {'type': 'string'},
        'generation': {'type': 'integer'},
        'links': LINKS,
        'parent_provider_uuid': _NULLABLE_UUID,  # 1.14
        'root_provider_uuid': _UUID,  # 1.14
    },
    'required': ['uuid', 'name', 'generation', 'links'],
}

PROVIDERS = {
    'type': 'object',
    'properties': {'resource_providers': {'type': 'array',
                                          'items': PROVIDER}},
    'required': ['resource_providers'],
}
