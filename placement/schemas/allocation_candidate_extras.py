"""JSON schemas of the answers of GET /allocation_candidates/explain and
GET /allocation_candidates/capacity (extensions; their query string is
that of GET /allocation_candidates)."""

_COUNTS = {
    'type': 'object',
    'properties': {'kept': {'type': 'integer'},
                   'removed': {'type': 'integer'}},
    'required': ['kept', 'removed'],
}

_EXAMPLES = {
    'type': 'array',
    'maxItems': 5,
    'items': {
        'type': 'object',
        'properties': {'uuid': {'type': 'string'},
                       'name': {'type': ['string', 'null']},
                       'reason': {'type': 'string'}},
        'required': ['uuid', 'name', 'reason'],
    },
}

EXPLAIN = {
    'type': 'object',
    'properties': {
        'allocation_requests': {'type': 'integer'},
        'trees': {'type': 'integer'},
        'trees_satisfying': {'type': 'integer'},
        'summary': {'type': 'string'},
        'reasons': {
            'type': 'array',
            'items': {'type': 'object',
                      'properties': {'trees': {'type': 'integer'},
                                     'reason': {'type': 'string'}},
                      'required': ['trees', 'reason']},
        },
        'groups': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'suffix': {'type': 'string'},
                    'constraints': {
                        'type': 'array',
                        'items': {
                            'type': 'object',
                            'properties': {
                                'constraint': {'type': 'string', 'enum': [
                                    'resource_class', 'capacity',
                                    'required_traits', 'any_of_traits',
                                    'forbidden_traits', 'member_of',
                                    'forbidden_aggregates', 'in_tree']},
                                'providers': _COUNTS,
                                'trees': _COUNTS,
                                'examples': _EXAMPLES,
                            },
                            'required': ['constraint', 'providers', 'trees',
                                         'examples'],
                        },
                    },
                },
                'required': ['suffix', 'constraints'],
            },
        },
        'combination': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'step': {'type': 'string', 'enum': [
                        'sharing', 'root_required', 'together',
                        'group_policy_isolate', 'same_subtree',
                        'single_provider_per_tree', 'limit']},
                    'trees': _COUNTS,
                    'examples': _EXAMPLES,
                },
                'required': ['step', 'trees', 'examples'],
            },
        },
    },
    'required': ['allocation_requests', 'trees', 'trees_satisfying',
                 'summary', 'reasons', 'groups', 'combination'],
}

_COPIES = {'type': 'object',
           'additionalProperties': {'type': 'integer', 'minimum': 0}}

CAPACITY = {
    'type': 'object',
    'properties': {
        'roots': _COPIES,
        'sharing': _COPIES,
        'total': {'type': 'integer', 'minimum': 0},
        'limited_by_sharing': {'type': 'boolean'},
        'bounded': {'type': 'array', 'items': {'type': 'string'}},
    },
    'required': ['roots', 'sharing', 'total', 'limited_by_sharing',
                 'bounded'],
}
