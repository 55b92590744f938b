"""Handler for /reshaper (1.30): POST moves inventories and allocations
of a provider tree in one all-or-nothing transaction.

The body's inventories are read as a PUT of a provider's whole inventory
is, and its allocations as a POST /allocations is; the error messages
keep upstream's wording for each failure.
"""

import falcon

from placement import error_codes
from placement import errors
from placement.handlers import allocation
from placement.handlers import base
from placement.handlers import inventory
from placement.policies import reshaper as policies
from placement.schemas import reshaper as schemas
from placement.storage import allocations as allocation_storage
from placement.storage import consumers
from placement.storage import exceptions as storage_exc
from placement.storage import inventories as inventory_storage
from placement.storage import reshaper as storage


def _inventories(req, data):
    """{provider uuid: (generation, {class: record})}, each record
    complete and checked as an inventory PUT checks it (upstream stores
    a reshaped inventory whose reserved exceeds its total; we refuse it
    as the inventory API does)."""
    result = {}
    for uuid, body in data['inventories'].items():
        records = inventory.parse_records(body)
        inventory.validate_capacities(req, uuid, records,
                                      'update')
        result[uuid] = (body['resource_provider_generation'], records)
    return result


class Reshaper(base.Resource):

    @base.operation('Move inventories and allocations in one change',
                    since='1.30', body=schemas.POST_BY_VERSION,
                    responses={204: None})
    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.RESHAPE)
        version = tuple(req.context.microversion)
        data = base.read_body(req)
        inventories = _inventories(req, data)
        writes = [allocation.consumer_write(req, consumer_uuid, body)
                  for consumer_uuid, body in data['allocations'].items()]
        try:
            excesses = allocation_storage.retrying(
                req.context.db,
                req.context.conf.placement.allocation_conflict_retry_count,
                storage.reshape, inventories, writes,
                version >= allocation.GENERATION_VERSION)
        except storage.ProviderNotFound as exc:
            raise errors.BadRequest(exc.message, code=exc.code)
        except allocation_storage.ProviderNotFound as exc:
            raise errors.BadRequest(exc.message)
        except (consumers.GenerationConflict, storage.StaleGeneration) as exc:
            raise errors.Conflict(exc.message, code=exc.code)
        except storage_exc.ConcurrentUpdate as exc:
            raise errors.Conflict('update conflict: %s' % exc.message,
                                  code=error_codes.CONCURRENT_UPDATE)
        except storage_exc.NotFound as exc:
            raise errors.BadRequest('malformed reshaper data: %s'
                                    % exc.message)
        except inventory_storage.InventoryInUse as exc:
            raise errors.Conflict('update conflict: %s' % exc.message,
                                  code=error_codes.INVENTORY_INUSE)
        except allocation_storage.CannotAllocate as exc:
            raise errors.Conflict('Unable to allocate inventory: %s'
                                  % exc.message)
        for uuid, excess in excesses.items():
            inventory.warn_over_capacity(uuid, excess)
        resp.status = falcon.HTTP_204
