"""JSON schemas of GET /audit and POST /audit/what_if (extensions)."""

import copy

from placement.audit import findings
from placement.schemas import inventory

_KIND = '(%s)' % '|'.join(findings.KINDS)
_UUID = {'type': 'string', 'format': 'uuid'}

# GET /audit: each value as the query string gives it.
GET_QUERY = {
    'type': 'object',
    'properties': {
        'kind': {'type': 'string', 'pattern': '^%s(,%s)*$' % (_KIND, _KIND)},
        'stale_after': {'type': 'string', 'pattern': '^[0-9]{1,10}$'},
        'in_tree': _UUID,
        'member_of': {'type': 'string'},
        'project_id': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'limit': {'type': 'string', 'pattern': '^[1-9][0-9]{0,8}$'},
    },
    'additionalProperties': False,
}

# The fields of one class's change: any of a record's, merged over the
# current record (a new class needs ``total``); null removes the class.
_CHANGE = copy.deepcopy(inventory.PUT_ALL_RECORD)
_CHANGE['required'] = []
del _CHANGE['properties']['resource_provider_generation']
_CHANGES = {
    'type': 'object',
    'patternProperties': {inventory.RESOURCE_CLASS_PATTERN: {
        'anyOf': [_CHANGE, {'type': 'null'}]}},
    'additionalProperties': False,
}

WHAT_IF = {
    'type': 'object',
    'properties': {
        'inventories': {
            'type': 'object',
            'patternProperties': {'^.*$': _CHANGES},
        },
        'by_aggregate': {
            'type': 'object',
            'patternProperties': {'^.*$': _CHANGES},
        },
        'by_trait': {
            'type': 'object',
            'patternProperties': {inventory.RESOURCE_CLASS_PATTERN: _CHANGES},
            'additionalProperties': False,
        },
        'resources': {'type': 'string', 'minLength': 1},
    },
    'anyOf': [{'required': ['inventories']}, {'required': ['by_aggregate']},
              {'required': ['by_trait']}],
    'additionalProperties': False,
}

# Answers, as published in the OpenAPI document (placement.openapi).
_PROVIDER = {
    'type': 'object',
    'properties': {'uuid': {'type': 'string'},
                   'name': {'type': ['string', 'null']}},
    'required': ['uuid', 'name'],
}
_UUIDS = {'type': 'array', 'items': {'type': 'string'}}
_CONSUMER = {
    'consumer': {'type': 'string'},
    'consumer_type': {'type': ['string', 'null']},
    'project_id': {'type': ['string', 'null']},
    'user_id': {'type': ['string', 'null']},
}


def _list_of(properties, required):
    return {'type': 'array', 'items': {
        'type': 'object', 'properties': properties,
        'required': required + ['reason']}}


AUDIT = {
    'type': 'object',
    'properties': {
        'over_capacity': _list_of({
            'resource_provider': _PROVIDER,
            'resource_class': {'type': 'string'},
            'capacity': {'type': 'integer'},
            'used': {'type': 'integer'},
            'over': {'type': 'integer'},
            'consumers': _UUIDS,
            'used_by_consumer': {'type': 'object',
                                 'additionalProperties': {
                                     'type': 'integer'}},
            'reason': {'type': 'string'},
        }, ['resource_provider', 'resource_class', 'capacity', 'used',
            'over', 'consumers']),
        'split_consumers': _list_of(dict(_CONSUMER, **{
            'roots': _UUIDS,
            'trees': {'type': 'array', 'items': {
                'type': 'object',
                'properties': {'root': {'type': 'string'},
                               'resources': {'type': 'object'}},
                'required': ['root', 'resources']}},
            'reason': {'type': 'string'},
        }), ['consumer', 'consumer_type', 'project_id', 'user_id',
             'roots']),
        'stale_migrations': _list_of(dict(_CONSUMER, **{
            'age_seconds': {'type': 'integer'},
            'written_at': {'type': 'string'},
            'resource_providers': _UUIDS,
            'reason': {'type': 'string'},
        }), ['consumer', 'age_seconds', 'resource_providers']),
        'unusable_inventory': _list_of({
            'resource_provider': _PROVIDER,
            'resource_class': {'type': 'string'},
            'reason': {'type': 'string'},
        }, ['resource_provider', 'resource_class']),
        'counts': {'type': 'object',
                   'additionalProperties': {'type': 'integer'}},
    },
    'required': ['counts'],
}

WHAT_IF_ANSWER = {
    'type': 'object',
    'properties': {
        'providers': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {
                'resource_provider': _PROVIDER,
                'resource_class': {'type': 'string'},
                'capacity_before': {'type': 'integer'},
                'capacity_after': {'type': 'integer'},
                'used': {'type': 'integer'},
                'over_before': {'type': 'integer'},
                'over_after': {'type': 'integer'},
                'consumers': _UUIDS,
                'refused': {'type': ['string', 'null']},
                'reason': {'type': 'string'},
            },
            'required': ['resource_provider', 'resource_class',
                         'capacity_before', 'capacity_after', 'used',
                         'over_after', 'consumers'],
        }},
        'capacity': {'type': 'object',
                     'properties': {'before': {'type': 'integer'},
                                    'after': {'type': 'integer'}},
                     'required': ['before', 'after']},
    },
    'required': ['providers'],
}
