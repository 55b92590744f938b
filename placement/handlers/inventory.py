"""Handlers for a provider's inventories.

/resource_providers/{uuid}/inventories                  GET POST PUT DELETE
/resource_providers/{uuid}/inventories/{resource_class} GET PUT DELETE

The provider is read first (a missing one is a 404 whatever the body),
then the body is checked, then one write transaction applies the change as
a compare-and-swap on the generation that was read (or that the client
sent, when it must send one).  The error messages keep upstream's wording,
which clients and upstream's tests match on.
"""

import logging
import re

import falcon

from placement import error_codes
from placement import errors
from placement import inventory_rules
from placement import microversion
from placement.handlers import base
from placement.policies import inventory as policies
from placement.schemas import inventory as schemas
from placement.storage import exceptions as storage_exc
from placement.storage import inventories as storage
from placement.storage import providers_core
from placement.storage import tables

LOG = logging.getLogger(__name__)

def parse_records(data):
    """{class name: record} from the body of a PUT of all inventory.

    A record under a name the schema does not see as a class name is
    checked here, so that a malformed one is refused as such rather than
    failing later; the name is then reported as an unknown class.
    """
    records = {}
    for name, fields in data['inventories'].items():
        if not re.match(schemas.RESOURCE_CLASS_PATTERN, name):
            base.validate(fields, schemas.PUT_ALL_RECORD)
        records[name] = inventory_rules.with_defaults(fields)
    return records


def _provider(req, uuid):
    return req.context.db.read(providers_core.get_by_uuid, uuid)


def _check_generation(provider, data):
    if data['resource_provider_generation'] != provider['generation']:
        raise _generation_conflict()


def _generation_conflict():
    return errors.Conflict('resource provider generation conflict',
                           code=error_codes.CONCURRENT_UPDATE)


def validate_capacities(req, uuid, records, action):
    """BadRequest for the first of ``records`` (to be stored on the
    provider ``uuid``) whose capacity the request's microversion
    refuses."""
    reserved_can_be_total = microversion.is_at_least(req, '1.26')
    for resource_class, record in records.items():
        problem = inventory_rules.problem(uuid, resource_class, record,
                                          reserved_can_be_total)
        if problem:
            raise errors.BadRequest(
                'Unable to %s inventory for resource provider %s: %s'
                % (action, uuid, problem))


def warn_over_capacity(provider_uuid, excesses):
    """A warning for each class a committed write left allocated beyond
    its capacity (``storage.Excess``): the operator's cue to move
    consumers (``GET /audit?kind=over_capacity`` names them)."""
    for excess in excesses:
        LOG.warning('Resource provider %s is now over-capacity for %s: '
                    '%d used, capacity %s', provider_uuid,
                    excess.resource_class, excess.used, excess.capacity)


def _serialize(record):
    return {field: record[field] for field in inventory_rules.FIELDS}


def _send_one(req, resp, record, generation, last_modified,
              status=falcon.HTTP_200):
    body = _serialize(record)
    body['resource_provider_generation'] = generation
    base.send_json(req, resp, body, status)
    base.send_cache_headers(req, resp, last_modified)


def _send_all(req, resp, records, generation, last_modified):
    base.send_json(req, resp, {
        'resource_provider_generation': generation,
        'inventories': {name: _serialize(record)
                        for name, record in records.items()},
    })
    base.send_cache_headers(req, resp, last_modified)


def _read_all(req, uuid):
    """(the provider's generation, its records), or upstream's GET 404."""
    try:
        return req.context.db.read(storage.for_provider_uuid, uuid)
    except storage_exc.NotFound as exc:
        raise errors.NotFound('No resource provider with uuid %s found : %s'
                              % (uuid, exc.message))


class Inventories(base.Resource):

    @base.operation("List a provider's inventories",
                    responses={200: schemas.INVENTORIES})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.LIST)
        generation, records = _read_all(req, uuid)
        _send_all(req, resp, {r['resource_class']: r for r in records},
                  generation, base.newest_change(records))

    @base.operation('Create one inventory of a provider', body=schemas.POST,
                    responses={201: schemas.INVENTORY})
    @base.require_json
    def on_post(self, req, resp, uuid):
        req.context.can(policies.CREATE)
        provider = _provider(req, uuid)
        data = base.read_body(req)
        resource_class = data['resource_class']
        record = inventory_rules.with_defaults(data)
        validate_capacities(req, provider['uuid'], {resource_class: record},
                             'create')
        try:
            generation = req.context.db.write(
                storage.create, provider, resource_class, record)
        except storage.ResourceClassNotFound as exc:
            raise errors.BadRequest(
                'Unable to create inventory for resource provider %s: %s'
                % (uuid, exc.message))
        except storage_exc.Conflict as exc:
            raise errors.Conflict('Update conflict: %s' % exc.message,
                                  code=error_codes.CONCURRENT_UPDATE)
        resp.location = base.absolute_url(
            req, 'resource_providers', uuid, 'inventories', resource_class)
        _send_one(req, resp, record, generation, tables.utcnow(),
                  status=falcon.HTTP_201)

    @base.operation("Replace all of a provider's inventories",
                    body=schemas.PUT_ALL,
                    responses={200: schemas.INVENTORIES})
    @base.require_json
    def on_put(self, req, resp, uuid):
        """Checked in upstream's order (a missing provider, a bad body, a
        stale generation, a bad record), but without reading the provider
        first where all is well (nova's resource trackers send this): the
        body is checked first, and only when it is refused is the
        provider read, to answer 404 or 409 instead where they come
        first; the write then reads the provider with its records."""
        req.context.can(policies.UPDATE)
        try:
            data = base.read_body(req)
        except errors.BadRequest:
            _provider(req, uuid)
            raise
        try:
            records = parse_records(data)
            validate_capacities(req, uuid, records, 'update')
        except errors.BadRequest:
            _check_generation(_provider(req, uuid), data)
            raise
        try:
            generation, over = req.context.db.write(
                storage.replace_all_at, uuid,
                data['resource_provider_generation'], records)
        except storage.GenerationConflict:
            raise _generation_conflict()
        except storage.ResourceClassNotFound as exc:
            raise errors.BadRequest(
                'Unknown resource class in inventory for resource provider '
                '%s: %s' % (uuid, exc.message))
        except storage.InventoryInUse as exc:
            raise errors.Conflict('update conflict: %s' % exc.message,
                                  code=error_codes.INVENTORY_INUSE)
        except storage_exc.ConcurrentUpdate as exc:
            raise errors.Conflict('update conflict: %s' % exc.message,
                                  code=error_codes.CONCURRENT_UPDATE)
        warn_over_capacity(uuid, over)
        _send_all(req, resp, records, generation, tables.utcnow())

    @base.operation("Delete all of a provider's inventories", since='1.5',
                    outside=405, responses={204: None})
    def on_delete(self, req, resp, uuid):
        req.context.can(policies.DELETE)
        provider = _provider(req, uuid)
        try:
            req.context.db.write(storage.replace_all, provider, {})
        except storage.InventoryInUse as exc:
            raise errors.Conflict(exc.message,
                                  code=error_codes.INVENTORY_INUSE)
        except storage_exc.ConcurrentUpdate:
            raise errors.Conflict(
                'Unable to delete inventory for resource provider %s '
                'because the inventory was updated by another process. '
                'Please retry your request.' % uuid,
                code=error_codes.CONCURRENT_UPDATE)
        resp.status = falcon.HTTP_204


class Inventory(base.Resource):

    @base.operation('Show one inventory of a provider',
                    responses={200: schemas.INVENTORY})
    def on_get(self, req, resp, uuid, resource_class):
        req.context.can(policies.SHOW)
        generation, records = _read_all(req, uuid)
        record = next((r for r in records
                       if r['resource_class'] == resource_class), None)
        if record is None:
            raise errors.NotFound('No inventory of class %s for %s'
                                  % (resource_class, uuid))
        _send_one(req, resp, record, generation,
                  base.newest_change([record]))

    @base.operation('Update one inventory of a provider',
                    body=schemas.PUT_ONE, responses={200: schemas.INVENTORY})
    @base.require_json
    def on_put(self, req, resp, uuid, resource_class):
        req.context.can(policies.UPDATE)
        provider = _provider(req, uuid)
        data = base.read_body(req)
        _check_generation(provider, data)
        record = inventory_rules.with_defaults(data)
        validate_capacities(req, provider['uuid'], {resource_class: record},
                             'update')
        try:
            generation, over = req.context.db.write(
                storage.update, provider, resource_class, record)
        except storage.ResourceClassNotFound as exc:
            raise errors.NotFound(exc.message)
        except storage.InventoryNotFound as exc:
            raise errors.BadRequest(
                'No inventory record with resource class for resource '
                'provider %s: %s' % (uuid, exc.message))
        except storage_exc.ConcurrentUpdate as exc:
            raise errors.Conflict('update conflict: %s' % exc.message,
                                  code=error_codes.CONCURRENT_UPDATE)
        warn_over_capacity(provider['uuid'], over)
        _send_one(req, resp, record, generation, tables.utcnow())

    @base.operation('Delete one inventory of a provider',
                    responses={204: None})
    def on_delete(self, req, resp, uuid, resource_class):
        req.context.can(policies.DELETE)
        provider = _provider(req, uuid)
        try:
            req.context.db.write(storage.delete, provider, resource_class)
        except storage_exc.NotFound as exc:
            raise errors.NotFound('No inventory of class %s found for '
                                  'delete: %s' % (resource_class, exc.message))
        except storage_exc.Conflict as exc:
            # Upstream labels "in use" with the concurrent update code here.
            raise errors.Conflict('Unable to delete inventory of class %s: %s'
                                  % (resource_class, exc.message),
                                  code=error_codes.CONCURRENT_UPDATE)
        resp.status = falcon.HTTP_204
