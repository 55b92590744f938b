"""Handlers for allocations.

/allocations                               POST (1.13)
/allocations/{consumer_uuid}               GET PUT DELETE, PATCH (1.28,
                                           an extension: JSON merge patch)
/resource_providers/{uuid}/allocations     GET

Every write goes through ``storage.allocations.replace``: all consumers of
a request in one transaction, all or nothing, retried on the server when
it loses a provider generation race.  The error messages keep upstream's
wording, which clients and upstream's tests match on.
"""

import contextlib
import uuid as uuidlib

import falcon

from placement import error_codes
from placement import errors
from placement import json_encoding
from placement.handlers import base
from placement.handlers import json_pieces
from placement.policies import allocation as policies
from placement.schemas import allocation as schemas
from placement.state import provider_allocations
from placement.storage import allocations as storage
from placement.storage import consumers
from placement.storage import exceptions as storage_exc
from placement.storage import inventories

MERGE_PATCH = 'application/merge-patch+json'
GENERATION_VERSION = (1, 28)
CONSUMER_TYPE_VERSION = (1, 38)


def _version(req):
    return tuple(req.context.microversion)


def _last_modified(allocations):
    return base.newest_change(allocations, base.utcnow())


# -- reading ---------------------------------------------------------------

def _serialize_for_consumer(req, consumer, allocations):
    by_provider = {}
    for allocation in allocations:
        entry = by_provider.setdefault(
            allocation['resource_provider_uuid'], {'resources': {}})
        entry['generation'] = allocation['resource_provider_generation']
        entry['resources'][allocation['resource_class']] = allocation['used']
    body = {'allocations': by_provider}
    version = _version(req)
    if consumer is not None and version >= (1, 12):
        body['project_id'] = consumer['project_id']
        body['user_id'] = consumer['user_id']
        if version >= GENERATION_VERSION:
            body['consumer_generation'] = consumer['generation']
        if version >= CONSUMER_TYPE_VERSION:
            body['consumer_type'] = (consumer['consumer_type']
                                     or consumers.UNKNOWN_TYPE)
    return body


def _provider_body(generation, allocations, with_generation):
    """The shape ``provider_allocations`` keeps of a provider's
    allocations: (the JSON body, with each consumer's generation or not,
    as bytes; the newest allocation's change time, or None)."""
    by_consumer = {}
    for allocation in allocations:
        entry = by_consumer.setdefault(allocation['consumer_uuid'],
                                       {'resources': {}})
        entry['resources'][allocation['resource_class']] = (
            allocation['used'])
        if with_generation:
            entry['consumer_generation'] = allocation['consumer_generation']
    return json_encoding.encode_json({
        'allocations': by_consumer,
        'resource_provider_generation': generation,
    }), base.newest_change(allocations)


def _provider_body_with_generations(generation, allocations):
    return _provider_body(generation, allocations, True)


def _provider_body_before_generations(generation, allocations):
    return _provider_body(generation, allocations, False)


PROVIDER_BODIES = {True: _provider_body_with_generations,
                    False: _provider_body_before_generations}


# -- writing ---------------------------------------------------------------

def _as_dict_form(allocations):
    """The list form of before 1.12 as the dict form of after it."""
    return {item['resource_provider']['uuid']: {
        'resources': item['resources']} for item in allocations}


def consumer_write(req, consumer_uuid, data):
    """A ConsumerWrite from one consumer's part of a (validated) body.

    Clients older than 1.8 name no project or user: the configured
    "incomplete consumer" ones stand in.
    """
    version = _version(req)
    allocations = data['allocations']
    if version < (1, 12):
        allocations = _as_dict_form(allocations)
    project_id, user_id = data.get('project_id'), data.get('user_id')
    if project_id is None:
        placement_conf = req.context.conf.placement
        project_id = placement_conf.incomplete_consumer_project_id
        user_id = placement_conf.incomplete_consumer_user_id
    return storage.ConsumerWrite(
        uuid=consumer_uuid, project_id=project_id, user_id=user_id,
        allocations={provider: entry['resources']
                     for provider, entry in allocations.items()},
        generation=data.get('consumer_generation'),
        consumer_type=(data['consumer_type']
                       if version >= CONSUMER_TYPE_VERSION else None))


def write(req, writes, class_not_found):
    """Apply ``writes`` as one all-or-nothing change; map its failures.

    ``class_not_found`` formats the 400 for an unknown resource class,
    which upstream words differently for PUT and POST.
    """
    check_generation = _version(req) >= GENERATION_VERSION
    with _write_failures(class_not_found):
        storage.retrying(
            req.context.db,
            req.context.conf.placement.allocation_conflict_retry_count,
            storage.replace, writes, check_generation)


@contextlib.contextmanager
def _write_failures(class_not_found):
    """Allocation write failures as their HTTP errors."""
    try:
        yield
    except inventories.ResourceClassNotFound as exc:
        raise errors.BadRequest(class_not_found % exc.message)
    except storage.CannotAllocate as exc:
        raise errors.Conflict('Unable to allocate inventory: %s'
                              % exc.message)
    except storage.ProviderNotFound as exc:
        raise errors.BadRequest(exc.message)
    except consumers.GenerationConflict as exc:
        raise errors.Conflict(exc.message, code=exc.code)
    except storage_exc.ConcurrentUpdate as exc:
        raise errors.Conflict(
            'Inventory and/or allocations changed while attempting to '
            'allocate: %s' % exc.message,
            code=error_codes.CONCURRENT_UPDATE)


def _canonical_consumer_uuid(consumer_uuid):
    try:
        return str(uuidlib.UUID(consumer_uuid))
    except ValueError:
        raise errors.BadRequest('Malformed consumer_uuid: %s'
                                % consumer_uuid)


class ConsumerAllocations(base.Resource):

    @base.operation("Show a consumer's allocations",
                    responses={200: schemas.CONSUMER_ALLOCATIONS})
    def on_get(self, req, resp, consumer_uuid):
        req.context.can(policies.ALLOC_LIST)
        consumer, allocations = storage.read_for_consumer(
            req.context.db, consumer_uuid)
        base.send_json(req, resp, _serialize_for_consumer(
            req, consumer, allocations))
        base.send_cache_headers(req, resp, _last_modified(allocations))

    @base.operation("Replace a consumer's allocations",
                    body=schemas.PUT_BY_VERSION, responses={204: None})
    @base.require_json
    def on_put(self, req, resp, consumer_uuid):
        req.context.can(policies.ALLOC_UPDATE)
        consumer_uuid = _canonical_consumer_uuid(consumer_uuid)
        data = base.read_body(req)
        write(req, [consumer_write(req, consumer_uuid, data)],
              'Unable to allocate inventory for consumer %s: %%s'
              % consumer_uuid)
        resp.status = falcon.HTTP_204

    @base.operation(
        "Change some of a consumer's allocations: a JSON merge patch of the "
        "dict form", since='1.28', outside=405, body=schemas.PATCH_BY_VERSION,
        responses={200: schemas.CONSUMER_ALLOCATIONS},
        media_types=(MERGE_PATCH, base.JSON), extension=True)
    @base.require_media(MERGE_PATCH, base.JSON)
    def on_patch(self, req, resp, consumer_uuid):
        """Add or change amounts per provider and class, ``null`` to
        remove one; checked as a PUT of the result would be."""
        req.context.can(policies.ALLOC_UPDATE)
        consumer_uuid = _canonical_consumer_uuid(consumer_uuid)
        data = base.read_body(req)
        with _write_failures('Unable to allocate inventory for consumer %s: '
                             '%%s' % consumer_uuid):
            try:
                consumer, allocations = storage.retrying(
                    req.context.db,
                    req.context.conf.placement.allocation_conflict_retry_count,
                    storage.patch, consumer_uuid, data['allocations'],
                    data['consumer_generation'], data.get('project_id'),
                    data.get('user_id'), data.get('consumer_type'))
            except storage.MissingOwner as exc:
                raise errors.BadRequest(exc.message)
        base.send_json(req, resp, _serialize_for_consumer(
            req, consumer, allocations))

    @base.operation("Delete a consumer's allocations", responses={204: None})
    def on_delete(self, req, resp, consumer_uuid):
        req.context.can(policies.ALLOC_DELETE)
        storage.retrying(
            req.context.db,
            req.context.conf.placement.allocation_conflict_retry_count,
            storage.delete_for_consumer, consumer_uuid)
        resp.status = falcon.HTTP_204


class Allocations(base.Resource):

    @base.operation('Replace the allocations of many consumers at once',
                    since='1.13', body=schemas.POST_BY_VERSION,
                    responses={204: None})
    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.ALLOC_MANAGE)
        data = base.read_body(req)
        write(req, [consumer_write(req, consumer_uuid, body)
                    for consumer_uuid, body in data.items()],
              'Unable to allocate inventory %s')
        resp.status = falcon.HTTP_204


class ProviderAllocations(base.Resource):

    @base.operation("List the allocations against a provider",
                    responses={200: schemas.PROVIDER_ALLOCATIONS})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.RP_ALLOC_LIST)
        shape = PROVIDER_BODIES[_version(req) >= GENERATION_VERSION]
        try:
            body, changed = provider_allocations.answer(
                req.context.db, uuid, shape)
        except storage_exc.NotFound as exc:
            raise errors.NotFound("Resource provider '%s' not found: %s"
                                  % (uuid, exc.message))
        json_pieces.send_json_pieces(req, resp, [body])
        base.send_cache_headers(req, resp, changed or base.utcnow())
