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
