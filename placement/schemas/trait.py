"""JSON schemas for traits: names, provider trait bodies, list queries."""

CUSTOM_NAME_PATTERN = '^CUSTOM_[A-Z0-9_]+$'

NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}

# PUT /traits/{name} validates the bare name against this.
CUSTOM_NAME = dict(NAME, pattern=CUSTOM_NAME_PATTERN)

# PUT /resource_providers/{uuid}/traits
SET_PROVIDER_TRAITS = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': NAME},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}

# GET /traits query string
LIST_QUERY = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'associated': {'type': 'string'},
    },
    'additionalProperties': False,
}

# Answers, as published in the OpenAPI document (placement.openapi).
TRAITS = {
    'type': 'object',
    'properties': {'traits': {'type': 'array', 'items': {'type': 'string'}}},
    'required': ['traits'],
}

PROVIDER_TRAITS = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
}
