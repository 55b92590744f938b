"""Provider lookups and the generation compare-and-swap every writer uses.

Inventories, traits and aggregates all change "a provider's view", and each
such write must bump the provider's generation exactly when the caller's
generation is current.  Keeping that one statement here means no module can
get it subtly wrong.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from placement.storage import changes
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


def generation_and_rows(conn, statement, uuid):
    """(the generation of the provider ``uuid``, its rows as dicts) from
    ``statement``, which selects that generation first and, left-joined,
    the provider's rows (the second column None where it has none), with
    ``uuid`` bound: one statement (a ``prepared.Statement``), so that
    both are of one moment.  NotFound if there is no provider ``uuid``."""
    result = statement.execute(conn, {'uuid': uuid})
    fields = tuple(result.keys())[1:]
    rows = prepared.plain(result)
    if not rows:
        raise not_found(uuid)
    return rows[0][0], [dict(zip(fields, row[1:]))
                        for row in rows if row[1] is not None]


def not_found(uuid):
    """The error for an unknown provider ``uuid``.  Upstream answers it
    with the undefined code; placement.resource_provider.not_found is
    the reshaper's alone."""
    return exceptions.NotFound(
        'No resource provider with uuid %s found' % uuid)


# Every write to a provider runs it: built once, prepared.
_BUMP = prepared.Statement(
    RP.update()
    .where(RP.c.id == sa.bindparam('provider'),
           RP.c.generation == sa.bindparam('expected'))
    .values(generation=sa.bindparam('next'), updated_at=sa.bindparam('now')))


def increment_generation(conn, provider_id, expected_generation):
    """Bump the generation iff it is still ``expected_generation``.

    Returns the new generation; raises ConcurrentUpdate when another
    writer got there first (the caller's transaction then rolls back).
    """
    result = _BUMP.execute(conn, {
        'provider': provider_id, 'expected': expected_generation,
        'next': expected_generation + 1, 'now': tables.utcnow()})
    if result.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            'resource provider generation conflict')
    changes.touch(conn, provider_id)
    return expected_generation + 1


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


def ids_in(conn, column, ids):
    """``column IN ids``.  On PostgreSQL, as one array parameter: a long
    list of ids bound one by one costs SQLAlchemy milliseconds to render
    on every execution."""
    ids = sorted(ids)
    if conn.dialect.name == 'postgresql':
        return column == sa.any_(sa.bindparam(
            None, ids, type_=postgresql.ARRAY(sa.Integer)))
    return column.in_(ids)
