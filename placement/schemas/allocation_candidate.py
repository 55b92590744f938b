"""JSON schemas for the query string of GET /allocation_candidates.

Each microversion that adds a parameter has its schema; their structure
follows upstream's, since jsonschema's messages reach clients verbatim.
"""

import copy

# Request group suffixes: numbers before 1.33, short names from it.
NUMERIC_SUFFIX = r'[1-9][0-9]*'
NAMED_SUFFIX = r'[a-zA-Z0-9_-]{1,64}'
GROUPED = ('resources', 'required', 'member_of', 'in_tree')

GET_1_10 = {
    'type': 'object',
    'properties': {'resources': {'type': 'string'}},
    'required': ['resources'],
    'additionalProperties': False,
}

GET_1_16 = copy.deepcopy(GET_1_10)
GET_1_16['properties']['limit'] = {
    'type': ['integer', 'string'],
    'pattern': '^[1-9][0-9]*$',
    'minimum': 1,
    'minLength': 1,
}

GET_1_17 = copy.deepcopy(GET_1_16)
GET_1_17['properties']['required'] = {'type': ['string']}

GET_1_21 = copy.deepcopy(GET_1_17)
GET_1_21['properties']['member_of'] = {'type': ['string']}


def _grouped(suffix, names):
    return {'^%s(%s)?$' % (name, suffix): {'type': 'string'}
            for name in names}


# 1.25: granular request groups; no group is required any more.
GET_1_25 = copy.deepcopy(GET_1_21)
for _name in ('resources', 'required', 'member_of'):
    del GET_1_25['properties'][_name]
del GET_1_25['required']
GET_1_25['patternProperties'] = _grouped(
    NUMERIC_SUFFIX, ('resources', 'required', 'member_of'))
GET_1_25['properties']['group_policy'] = {
    'type': 'string', 'enum': ['none', 'isolate']}

GET_1_31 = copy.deepcopy(GET_1_25)
GET_1_31['patternProperties'] = _grouped(NUMERIC_SUFFIX, GROUPED)

GET_1_33 = copy.deepcopy(GET_1_31)
GET_1_33['patternProperties'] = _grouped(NAMED_SUFFIX, GROUPED)

GET_1_35 = copy.deepcopy(GET_1_33)
GET_1_35['properties']['root_required'] = {'type': ['string']}

GET_1_36 = copy.deepcopy(GET_1_35)
GET_1_36['properties']['same_subtree'] = {'type': ['string']}

GET_BY_VERSION = (
    ((1, 36), GET_1_36), ((1, 35), GET_1_35), ((1, 33), GET_1_33),
    ((1, 31), GET_1_31), ((1, 25), GET_1_25), ((1, 21), GET_1_21),
    ((1, 17), GET_1_17), ((1, 16), GET_1_16), ((1, 10), GET_1_10))

# The answer, as published in the OpenAPI document (placement.openapi):
# allocation requests are a list before 1.12 and keyed by provider after.
CANDIDATES = {
    'type': 'object',
    'properties': {
        'allocation_requests': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'allocations': {'type': ['array', 'object']},
                    'mappings': {'type': 'object'},
                },
                'required': ['allocations'],
            },
        },
        'provider_summaries': {
            'type': 'object',
            'additionalProperties': {
                'type': 'object',
                'properties': {
                    'resources': {'type': 'object'},
                    'traits': {'type': 'array',
                               'items': {'type': 'string'}},
                    'parent_provider_uuid': {'type': ['string', 'null']},
                    'root_provider_uuid': {'type': 'string'},
                },
                'required': ['resources'],
            },
        },
    },
    'required': ['allocation_requests', 'provider_summaries'],
}
