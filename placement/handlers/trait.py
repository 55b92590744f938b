"""Handlers for /traits, /traits/{name} and a provider's traits (1.6+)."""

import falcon

from placement import errors
from placement.state import provider_reads
from placement.handlers import base
from placement.policies import trait as policies
from placement.schemas import trait as schemas
from placement.schemas import validation
from placement.storage import exceptions as storage_exc
from placement.storage import traits as storage

_INVALID_NAME = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')
_BAD_NAME_FILTER = (
    'Badly formatted name parameter. Expected name query string parameter '
    'in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"')


def _list_filters(req):
    """storage.list_traits keyword arguments from the query string."""
    params = base.read_query(req).as_dict()
    filters = {}
    if 'name' in params:
        operator, sep, value = params['name'].partition(':')
        if not sep:
            raise errors.BadRequest(_BAD_NAME_FILTER % params['name'])
        # Any other operator is no filter at all, as upstream has it.
        if operator == 'in':
            filters['name_in'] = value.split(',')
        elif operator == 'startswith':
            filters['prefix'] = value
    if 'associated' in params:
        associated = params['associated'].lower()
        if associated not in ('true', 'false'):
            raise errors.BadRequest(
                'The query parameter "associated" only accepts '
                '"true" or "false"')
        filters['associated'] = associated == 'true'
    return filters


def _send_traits(req, resp, traits, generation=None):
    _send_names(req, resp, [t['name'] for t in traits], generation,
                base.newest_change(traits))


def _send_names(req, resp, names, generation, changed):
    """The traits ``names``; Last-Modified the newest trait's ``changed``
    time, else now."""
    body = {'traits': names}
    if generation is not None:
        body['resource_provider_generation'] = generation
    base.send_json(req, resp, body)
    base.send_cache_headers(req, resp, changed or base.utcnow())


class Traits(base.Resource):

    @base.operation('List traits', since='1.6', query=schemas.LIST_QUERY,
                    responses={200: schemas.TRAITS})
    def on_get(self, req, resp):
        req.context.can(policies.TRAITS_LIST)
        filters = _list_filters(req)
        _send_traits(req, resp, req.context.db.read(
            storage.list_traits, **filters))


class Trait(base.Resource):

    @base.operation('Make sure a custom trait exists', since='1.6',
                    responses={201: None, 204: None})
    def on_put(self, req, resp, name):
        req.context.can(policies.TRAITS_UPDATE)
        try:
            validation.check(name, schemas.CUSTOM_NAME)
        except validation.Invalid:
            raise errors.BadRequest(_INVALID_NAME)
        trait, created = req.context.db.write(storage.ensure, name)
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_204
        resp.location = base.absolute_url(req, 'traits', name)
        base.send_cache_headers(req, resp, trait['created_at'])

    @base.operation('Check that a trait exists', since='1.6',
                    responses={204: None})
    def on_get(self, req, resp, name):
        req.context.can(policies.TRAITS_SHOW)
        trait = req.context.db.read(storage.get_by_name, name)
        resp.status = falcon.HTTP_204
        base.send_cache_headers(req, resp, trait['created_at'])

    @base.operation('Delete a custom trait', since='1.6',
                    responses={204: None})
    def on_delete(self, req, resp, name):
        req.context.can(policies.TRAITS_DELETE)
        req.context.db.write(storage.delete, name)
        resp.status = falcon.HTTP_204


class ProviderTraits(base.Resource):

    @base.operation("List a provider's traits", since='1.6',
                    responses={200: schemas.PROVIDER_TRAITS})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.RP_TRAIT_LIST)
        try:
            generation, names, changed = provider_reads.traits(
                req.context.db, uuid)
        except storage_exc.NotFound as exc:
            # Upstream repeats the reason after its own prefix.
            raise errors.NotFound('%s: %s' % (exc.message, exc.message))
        _send_names(req, resp, names, generation, changed)

    @base.operation("Replace a provider's traits", since='1.6',
                    body=schemas.SET_PROVIDER_TRAITS,
                    responses={200: schemas.PROVIDER_TRAITS})
    @base.require_json
    def on_put(self, req, resp, uuid):
        req.context.can(policies.RP_TRAIT_UPDATE)
        data = base.read_body(req)
        traits, generation = req.context.db.write(
            storage.set_provider_traits, uuid, data['traits'],
            data['resource_provider_generation'])
        _send_traits(req, resp, traits, generation)

    @base.operation("Remove all of a provider's traits", since='1.6',
                    responses={204: None})
    def on_delete(self, req, resp, uuid):
        req.context.can(policies.RP_TRAIT_DELETE)
        req.context.db.write(storage.clear_provider_traits, uuid)
        resp.status = falcon.HTTP_204
