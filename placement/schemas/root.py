"""The answer of GET / (version discovery), as published in the OpenAPI
document (placement.openapi)."""

VERSIONS = {
    'type': 'object',
    'properties': {
        'versions': {
            'type': 'array',
            'items': {
                'type': 'object',
                'properties': {
                    'id': {'type': 'string'},
                    'min_version': {'type': 'string'},
                    'max_version': {'type': 'string'},
                    'status': {'type': 'string'},
                    'links': {'type': 'array'},
                },
                'required': ['id', 'min_version', 'max_version', 'status',
                             'links'],
            },
        },
    },
    'required': ['versions'],
}
