"""Handlers for /resource_providers and /resource_providers/{uuid}."""

import falcon

from placement import microversion
from placement.handlers import base
from placement.policies import resource_provider as policies
from placement.schemas import resource_provider as schemas
from placement.storage import providers_core
from placement.storage import resource_providers as storage


def _links(req, provider):
    """Links to the provider and its sub-resources at this microversion."""
    href = base.url(req, 'resource_providers', provider['uuid'])
    relations = ['inventories', 'usages']
    for version, relation in (('1.1', 'aggregates'), ('1.6', 'traits'),
                              ('1.11', 'allocations')):
        if microversion.is_at_least(req, version):
            relations.append(relation)
    return [{'rel': 'self', 'href': href}] + [
        {'rel': relation, 'href': '%s/%s' % (href, relation)}
        for relation in relations]


def serialize(req, provider):
    body = {
        'uuid': provider['uuid'],
        'name': provider['name'],
        'generation': provider['generation'],
        'links': _links(req, provider),
    }
    if microversion.is_at_least(req, '1.14'):
        body['parent_provider_uuid'] = provider['parent_provider_uuid']
        body['root_provider_uuid'] = provider['root_provider_uuid']
    return body


def last_modified(provider):
    return provider['updated_at'] or provider['created_at']


class ResourceProviders(base.Resource):

    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.CREATE)
        schema = (schemas.POST_1_14 if microversion.is_at_least(req, '1.14')
                  else schemas.POST_1_0)
        data = base.read_json(req, schema)
        provider = req.context.db.write(
            storage.create, data['name'], uuid=data.get('uuid'),
            parent_provider_uuid=data.get('parent_provider_uuid'))
        resp.location = base.url(req, 'resource_providers', provider['uuid'])
        if microversion.is_at_least(req, '1.20'):
            base.send_json(req, resp, serialize(req, provider))
            base.send_cache_headers(req, resp, last_modified(provider))
        else:
            resp.status = falcon.HTTP_201


class ResourceProvider(base.Resource):

    def on_get(self, req, resp, uuid):
        req.context.can(policies.SHOW)
        provider = req.context.db.read(providers_core.get_by_uuid, uuid)
        base.send_json(req, resp, serialize(req, provider))
        base.send_cache_headers(req, resp, last_modified(provider))
