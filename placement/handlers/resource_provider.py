"""Handlers for /resource_providers and /resource_providers/{uuid}."""

import functools

import falcon

from placement import errors
from placement import json_encoding
from placement import microversion
from placement.candidates import filters as candidate_filters
from placement.state import listing
from placement.handlers import base
from placement.handlers import json_pieces
from placement import query_params
from placement.policies import resource_provider as policies
from placement.schemas import resource_provider as schemas
from placement.storage import providers_core
from placement.storage import resource_providers as storage


def shape_of(req):
    relations = ['inventories', 'usages']
    for version, relation in (('1.1', 'aggregates'), ('1.6', 'traits'),
                              ('1.11', 'allocations')):
        if microversion.is_at_least(req, version):
            relations.append(relation)
    return listing.Shape(root=base.url(req, 'resource_providers') + '/',
                 suffixes=tuple((relation, '/' + relation)
                                for relation in relations),
                 with_tree=microversion.is_at_least(req, '1.14'))


def serializer(req):
    """A function giving a provider's body for this request."""
    return functools.partial(listing.shaped, shape_of(req))


def serialize(req, provider):
    """One provider's body for this request."""
    return serializer(req)(provider)


def last_modified(provider):
    return provider['updated_at'] or provider['created_at']


def _list_filters(req):
    """The filters of a list request, validated for its microversion."""
    version = tuple(req.context.microversion)
    query = base.read_query(req)
    filters = storage.Filters(name=query.get('name'), uuid=query.get('uuid'),
                              in_tree=query.get('in_tree'))
    if 'member_of' in query:
        filters.member_of, filters.forbidden_aggregates = (
            query_params.member_of(query, version))
    if 'required' in query:
        filters.required_traits, filters.forbidden_traits = (
            query_params.required_traits(query, version))
    if 'resources' in query:
        filters.resources = query_params.resources(query.get('resources'))
    return filters


class ResourceProviders(base.Resource):

    @base.operation('List resource providers', query=schemas.GET_BY_VERSION,
                    responses={200: schemas.PROVIDERS})
    def on_get(self, req, resp):
        req.context.can(policies.LIST)
        filters = _list_filters(req)
        try:
            if listing.answers_from_state(filters) and self._list_from_state(
                    req, resp, filters):
                return
            providers = req.context.db.read(storage.list_providers, filters)
        except (storage.UnknownResourceClass,
                candidate_filters.UnknownResourceClass) as exc:
            raise errors.BadRequest(
                'Invalid resource class in resources parameter: %s'
                % exc.message)
        except storage.UnknownTrait as exc:
            raise errors.BadRequest(
                'Invalid trait(s) in "required" parameter: %s' % exc.message)
        # Sent as pieces are: a large body goes out in writes of its own,
        # and once it has, the heap's free pages go back to the system
        # (at 100,000 providers the rows read left a worker 34 MB larger).
        json_pieces.send_json_pieces(req, resp, [json_encoding.encode_json(
            {'resource_providers': list(map(serializer(req), providers))})])
        base.send_cache_headers(req, resp, base.newest_change(
            providers, base.utcnow()))

    @staticmethod
    def _list_from_state(req, resp, filters):
        """The listing from the in-memory state (``state.listing``);
        False, nothing sent, when that is left to SQL."""
        body, changed = listing.body(req.context.db, filters, shape_of(req))
        if body is None:
            return False
        json_pieces.send_json_pieces(req, resp, body)
        base.send_cache_headers(req, resp, changed or base.utcnow())
        return True

    @base.operation('Create a resource provider',
                    body=(((1, 14), schemas.POST_1_14),
                          ((1, 0), schemas.POST_1_0)),
                    responses={200: schemas.PROVIDER, 201: None})
    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.CREATE)
        data = base.read_body(req)
        provider = req.context.db.write(
            storage.create, data['name'], uuid=data.get('uuid'),
            parent_provider_uuid=data.get('parent_provider_uuid'))
        resp.location = base.absolute_url(
            req, 'resource_providers', provider['uuid'])
        if microversion.is_at_least(req, '1.20'):
            base.send_json(req, resp, serialize(req, provider))
            base.send_cache_headers(req, resp, last_modified(provider))
        else:
            resp.status = falcon.HTTP_201


class ResourceProvider(base.Resource):

    allow_order = ('GET', 'DELETE', 'PUT')

    @base.operation('Show a resource provider',
                    responses={200: schemas.PROVIDER})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.SHOW)
        provider = req.context.db.read(providers_core.get_by_uuid, uuid)
        base.send_json(req, resp, serialize(req, provider))
        base.send_cache_headers(req, resp, last_modified(provider))

    @base.operation('Update a resource provider',
                    body=(((1, 14), schemas.PUT_1_14),
                          ((1, 0), schemas.PUT_1_0)),
                    responses={200: schemas.PROVIDER})
    @base.require_json
    def on_put(self, req, resp, uuid):
        req.context.can(policies.UPDATE)
        # Upstream answers 404 for an unknown provider before reading the
        # body, so a bad body to a missing provider is a 404 too.
        req.context.db.read(providers_core.get_by_uuid, uuid)
        data = base.read_body(req)
        before, provider = req.context.db.write(
            storage.update, uuid, data['name'],
            parent_provider_uuid=data.get('parent_provider_uuid',
                                          storage.UNCHANGED),
            allow_reparenting=microversion.is_at_least(req, '1.37'))
        base.send_json(req, resp, serialize(req, provider))
        # Upstream sends the time of the change before this one (none if
        # there was none): it answers from the object it read first.
        base.send_cache_headers(req, resp, before['updated_at'])

    @base.operation('Delete a resource provider', responses={204: None})
    def on_delete(self, req, resp, uuid):
        req.context.can(policies.DELETE)
        req.context.db.write(storage.delete, uuid)
        resp.status = falcon.HTTP_204
