"""JSON schemas for POST /reshaper (1.30 on)."""

import copy

from placement.schemas import allocation
from placement.schemas import inventory


def _schema(allocations):
    allocations = copy.deepcopy(allocations)
    # There may be nothing allocated (yet) of the inventory being moved.
    allocations['minProperties'] = 0
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {
                    allocation.UUID_PATTERN: inventory.PUT_ALL,
                },
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': allocations,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


POST_1_30 = _schema(allocation.POST_1_28)
POST_1_34 = _schema(allocation.POST_1_34)
POST_1_38 = _schema(allocation.POST_1_38)

POST_BY_VERSION = (((1, 38), POST_1_38), ((1, 34), POST_1_34),
                   ((1, 30), POST_1_30))
