"""Provider lookups every writer and reader uses, and the conditions
every provider filter shares.  (A provider's generation compare-and-swap
is ``generations``'.)"""

import sqlalchemy as sa

from placement.storage import exceptions
from placement.storage import prepared
from placement.storage import tables
from placement.storage.tables import (
    AGG, AGGREGATE_MEMBERSHIPS, ALLOC, INV, RP, RP_AGG, RP_TRAIT)

_PARENT = RP.alias('parent')
_ROOT = RP.alias('root')

PROVIDER_COLUMNS = (
    RP.c.id, RP.c.uuid, RP.c.name, RP.c.generation,
    RP.c.parent_provider_id, tables.root_of(RP).label('root_provider_id'),
    RP.c.created_at, RP.c.updated_at,
    _PARENT.c.uuid.label('parent_provider_uuid'),
    _ROOT.c.uuid.label('root_provider_uuid'),
)


def provider_select():
    """SELECT of providers with parent and root uuids joined in."""
    return sa.select(*PROVIDER_COLUMNS).select_from(
        RP.outerjoin(_PARENT, RP.c.parent_provider_id == _PARENT.c.id)
        .outerjoin(_ROOT, tables.root_of(RP) == _ROOT.c.id))


# Built once: every write to a provider reads it first.
_BY_UUID = prepared.Statement(
    provider_select().where(RP.c.uuid == sa.bindparam('uuid')))


def find_by_uuid(conn, uuid):
    """The provider as a dict, or None."""
    rows = _BY_UUID.execute(conn, {'uuid': uuid}).all()
    return rows[0]._asdict() if rows else None


def get_by_uuid(conn, uuid):
    """The provider as a dict; NotFound names the uuid."""
    provider = find_by_uuid(conn, uuid)
    if provider is None:
        raise not_found(uuid)
    return provider


def generation_and_rows(conn, statement, uuid, leading=1):
    """(the generation of the provider ``uuid``, its rows as dicts) from
    ``statement``, which selects that generation first and, left-joined,
    the provider's rows (the column after it None where it has none), with
    ``uuid`` bound: one statement (a ``prepared.Statement``), so that
    both are of one moment.  NotFound if there is no provider ``uuid``.
    With ``leading`` columns of the provider's first (its id, then its
    generation, say), (each of them, the rows)."""
    result = statement.execute(conn, {'uuid': uuid})
    fields = tuple(result.keys())[leading:]
    rows = prepared.plain(result)
    if not rows:
        raise not_found(uuid)
    return (*rows[0][:leading], [dict(zip(fields, row[leading:]))
                                 for row in rows if row[leading] is not None])


def not_found(uuid):
    """The error for an unknown provider ``uuid``.  Upstream answers it
    with the undefined code; placement.resource_provider.not_found is
    the reshaper's alone."""
    return exceptions.NotFound(
        'No resource provider with uuid %s found' % uuid)


# -- conditions every provider filter shares --------------------------------

def having_any_trait(trait_ids, provider=RP.c.id):
    """Providers (``provider``: a column of provider ids) having any of
    ``trait_ids``."""
    return provider.in_(sa.select(RP_TRAIT.c.resource_provider_id)
                        .where(RP_TRAIT.c.trait_id.in_(trait_ids)))


def in_any_aggregate(aggregate_uuids, provider=RP.c.id):
    """Providers (``provider``: a column of provider ids) in any of the
    aggregates (unknown uuids match nothing)."""
    return provider.in_(
        sa.select(RP_AGG.c.resource_provider_id)
        .select_from(AGGREGATE_MEMBERSHIPS)
        .where(AGG.c.uuid.in_(set(aggregate_uuids))))


def inventory_usage():
    """What is allocated of the inventory row's class on its provider.

    Correlated to the inventory row, so it reads just that (provider,
    class) range of the covering allocations index: the cost grows with
    the rows inspected, never with all allocations times all inventories,
    whatever plan the database picks (even before it has statistics).
    """
    return sa.func.coalesce(
        sa.select(sa.func.sum(ALLOC.c.used))
        .where(ALLOC.c.resource_provider_id == INV.c.resource_provider_id,
               ALLOC.c.resource_class_id == INV.c.resource_class_id)
        .correlate(INV)
        .scalar_subquery(), 0)
