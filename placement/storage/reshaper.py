"""Reshaping: inventories and allocations of a provider tree replaced in
one transaction, so that inventory can move (say from a compute node to
a new child provider) together with the allocations that consume it.

Inventory cannot be removed while allocated, and allocations cannot be
made against inventory that does not exist yet.  So the inventories are
first widened to the union of old and new, then the allocations are
replaced (with every capacity check a claim gets), and only then do the
inventories become exactly what was asked for.  Any failure rolls all of
it back.
"""

from placement import error_codes
from placement.storage import allocations
from placement.storage import exceptions
from placement.storage import inventories as inventory_storage
from placement.storage import providers_core


class ProviderNotFound(exceptions.InvalidInput):
    """A provider whose inventory is to be reshaped does not exist."""
    code = error_codes.RESOURCE_PROVIDER_NOT_FOUND


class StaleGeneration(exceptions.ConcurrentUpdate):
    """A provider's generation is not the one the request names."""


def _providers(conn, inventories):
    """{uuid: provider} for the providers in ``inventories``, each at the
    generation the request names."""
    providers = {}
    for uuid, (generation, _) in inventories.items():
        provider = providers_core.find_by_uuid(conn, uuid)
        if provider is None:
            raise ProviderNotFound(
                'Resource provider %s in inventories not found: No resource '
                'provider with uuid %s found' % (uuid, uuid))
        if provider['generation'] != generation:
            raise StaleGeneration(
                'resource provider generation conflict for provider %s: '
                'actual: %s, given: %s'
                % (uuid, provider['generation'], generation))
        providers[uuid] = provider
    return providers


def reshape(conn, inventories, writes, check_generation):
    """Make ``inventories`` ({provider uuid: (generation, {class:
    record})}) and the allocations of ``writes`` (ConsumerWrite) true;
    {provider uuid: [inventories.Excess]} of the classes left allocated
    beyond capacity."""
    providers = _providers(conn, inventories)
    prepared = allocations.prepare(conn, writes, check_generation)
    for uuid, (_, records) in inventories.items():
        if not records:
            continue
        provider = providers[uuid]
        union = {record['resource_class']: record for record in
                 inventory_storage.list_for_provider(conn, provider['id'])}
        union.update(records)
        inventory_storage.replace_all(conn, provider, union)
    allocations.apply(conn, writes, prepared)
    excesses = {}
    for uuid, (_, records) in inventories.items():
        _, excesses[uuid] = inventory_storage.replace_all(
            conn, providers_core.get_by_uuid(conn, uuid), records)
    return excesses
