"""JSON schemas for resource class bodies.

Only custom classes can be named by clients: ``CUSTOM_`` followed by
upper-case letters, digits and underscores.
"""

CUSTOM_NAME_PATTERN = '^CUSTOM_[A-Z0-9_]+$'

# POST /resource_classes (1.2+) and the renaming PUT of 1.2-1.6; from 1.7
# the PUT has no body and its URL name is checked against this same schema.
NAME_BODY = {
    'type': 'object',
    'properties': {
        'name': {
            'type': 'string',
            'pattern': CUSTOM_NAME_PATTERN,
            'maxLength': 255,
        },
    },
    'required': ['name'],
    'additionalProperties': False,
}

# Answers, as published in the OpenAPI document (placement.openapi).
RESOURCE_CLASS = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'links': {'type': 'array', 'items': {'type': 'object'}},
    },
    'required': ['name', 'links'],
}

RESOURCE_CLASSES = {
    'type': 'object',
    'properties': {'resource_classes': {'type': 'array',
                                        'items': RESOURCE_CLASS}},
    'required': ['resource_classes'],
}
