"""The OpenAPI 3.1 document of the API, built from the route table and the
``Operation`` each responder declares (``handlers.base.operation``).

The schemas in it are the objects the handlers validate with, so the
document cannot say one thing while the service enforces another.  An
operation is described at the newest microversion it is served in; where
its body or query string changed along the way, every variant is listed
under ``x-openstack-schemas-by-microversion``, and
``x-openstack-microversions`` gives the range the operation exists in.

``python -m placement.cmd.openapi`` prints it; api-ref/openapi.json is that
output, checked in (a test keeps it current).
"""

import copy
import http
import re

from placement import microversion

PATH = '/openapi.json'
_VERSION_HEADER = 'OpenStack-API-Version'
_PATH_PARAMETER = re.compile(r'{(\w+)}')

ERROR = {
    'type': 'object',
    'properties': {
        'errors': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'status': {'type': 'integer'},
                    'title': {'type': 'string'},
                    'detail': {'type': 'string'},
                    'code': {'type': 'string'},  # 1.23
                    'request_id': {'type': 'string'},
                    'min_version': {'type': 'string'},
                    'max_version': {'type': 'string'},
                },
                'required': ['status', 'title', 'detail'],
            },
        },
    },
    'required': ['errors'],
}


def _versions_in(spec):
    low, high = spec.versions
    return [(1, minor) for minor in range(low[1], high[1] + 1)]


def _changes(spec, schema_of):
    """The versions at which ``schema_of`` gives another schema than the
    version before (the operation's first version included)."""
    changes, previous = [], object()
    for version in _versions_in(spec):
        schema = schema_of(version)
        if schema is not previous:
            changes.append(version)
            previous = schema
    return changes


def _query_parameters(schema):
    if schema is None:
        return []
    required = set(schema.get('required', ()))
    parameters = [{'name': name, 'in': 'query', 'required': name in required,
                   'schema': copy.deepcopy(prop)}
                  for name, prop in schema.get('properties', {}).items()]
    if schema.get('patternProperties'):
        # Suffixed request groups (resources1, member_ofX, ...): OpenAPI
        # cannot name a parameter by pattern, so they travel as extra
        # properties of one free-form parameter.
        parameters.append({
            'name': 'request_groups', 'in': 'query', 'required': False,
            'style': 'form', 'explode': True,
            'description': 'Parameters named by pattern (granular request '
                           'groups): %s' % ', '.join(
                               sorted(schema['patternProperties'])),
            'schema': {'type': 'object', 'patternProperties':
                       copy.deepcopy(schema['patternProperties']),
                       'additionalProperties': False},
        })
    return parameters


def _variants(spec):
    """Every (range, body, query) variant when the schemas changed."""
    cuts = sorted(set(_changes(spec, spec.body_schema))
                  | set(_changes(spec, spec.query_schema)))
    if len(cuts) == 1:
        return None
    variants = []
    for index, first in enumerate(cuts):
        last = (_previous(cuts[index + 1]) if index + 1 < len(cuts)
                else spec.versions[1])
        variant = {'min_version': microversion.version_string(first),
                   'max_version': microversion.version_string(last)}
        body = spec.body_schema(first)
        if body is not None:
            variant['requestBody'] = copy.deepcopy(body)
        query = spec.query_schema(first)
        if query is not None:
            variant['query'] = copy.deepcopy(query)
        variants.append(variant)
    return variants


def _previous(version):
    return version[0], version[1] - 1


def _responses(spec):
    responses = {}
    for status, schema in sorted(spec.responses.items()):
        response = {'description': http.HTTPStatus(status).phrase}
        if schema is not None:
            response['content'] = {'application/json': {
                'schema': copy.deepcopy(schema)}}
        responses[str(status)] = response
    responses['default'] = {'$ref': '#/components/responses/Error'}
    return responses


def _operation(template, method, spec):
    newest = spec.versions[1]
    operation = {
        'operationId': '%s%s' % (method.lower(), re.sub(
            r'\W+', '_', template.replace('{', 'by_')).rstrip('_') or '_root'),
        'summary': spec.summary,
        'x-openstack-microversions': {
            'min_version': microversion.version_string(spec.versions[0]),
            'max_version': microversion.version_string(newest)},
        'parameters': ([{'$ref': '#/components/parameters/Microversion'}]
                       + _query_parameters(spec.query_schema(newest))),
        'responses': _responses(spec),
    }
    body = spec.body_schema(newest)
    if body is not None:
        operation['requestBody'] = {'required': True, 'content': {
            media_type: {'schema': copy.deepcopy(body)}
            for media_type in spec.media_types}}
    if spec.extension:
        operation['x-openstack-extension'] = True
        operation['description'] = (
            'An extension of this service: upstream Placement has no such '
            'operation, and the microversions advertised are upstream\'s.')
    variants = _variants(spec)
    if variants:
        operation['x-openstack-schemas-by-microversion'] = variants
    return operation


def document(routes):
    """The document for ``routes`` ((URI template, resource) pairs)."""
    paths = {}
    for template, resource in routes:
        item = {}
        names = _PATH_PARAMETER.findall(template)
        if names:
            item['parameters'] = [
                {'name': name, 'in': 'path', 'required': True,
                 'schema': {'type': 'string'}} for name in names]
        for method in resource.allowed_methods():
            responder = getattr(resource, 'on_%s' % method.lower())
            item[method.lower()] = _operation(
                template, method, responder.operation)
        paths[template] = item
    return {
        'openapi': '3.1.0',
        'info': {
            'title': 'Placement API',
            'version': microversion.MAX_VERSION_STRING,
            'description': (
                'The OpenStack Placement API, microversions %s to %s. '
                'Operations are described at the newest microversion they '
                'are served in.' % (microversion.MIN_VERSION_STRING,
                                    microversion.MAX_VERSION_STRING)),
        },
        'paths': paths,
        'components': {
            'parameters': {'Microversion': {
                'name': _VERSION_HEADER, 'in': 'header', 'required': False,
                'description': '"placement X.Y" or "placement latest"; '
                               'the minimum (%s) when absent.'
                               % microversion.MIN_VERSION_STRING,
                'schema': {'type': 'string'},
            }},
            'responses': {'Error': {
                'description': 'An error, in the OpenStack API error format',
                'content': {'application/json': {'schema': ERROR}},
            }},
        },
    }
