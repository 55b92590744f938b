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

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RP_TRAIT = tables.resource_provider_traits
_RP_AGG = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates
_PARENT = _RP.alias('parent')
_ROOT = _RP.alias('root')

PROVIDER_COLUMNS = (
    _RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation,
    _RP.c.parent_provider_id, _RP.c.root_provider_id,
    _RP.c.created_at, _RP.c.updated_at,
    _PARENT.c.uuid.label('parent_provider_uuid'),
    _ROOT.c.uuid.label('root_provider_uuid'),
)


def provider_select():
    """SELECT of providers with parent and root uuids joined in."""
    return sa.select(*PROVIDER_COLUMNS).select_from(
        _RP.outerjoin(_PARENT, _RP.c.parent_provider_id == _PARENT.c.id)
        .outerjoin(_ROOT, _RP.c.root_provider_id == _ROOT.c.id))


# Built once: every write to a provider reads it first.
_BY_UUID = prepared.Statement(
    provider_select().where(_RP.c.uuid == sa.bindparam('uuid')))


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


_BUMP = (_RP.update()
         .where(_RP.c.id == sa.bindparam('provider'),
                _RP.c.generation == sa.bindparam('expected'))
         .values(generation=sa.bindparam('next'),
                 updated_at=sa.bindparam('now')))


def increment_generation(conn, provider_id, expected_generation):
    """Bump the generation iff it is still ``expected_generation``.

    Returns the new generation; raises ConcurrentUpdate when another
    writer got there first (the caller's transaction then rolls back).
    """
    result = conn.execute(_BUMP, {
        'provider': provider_id, 'expected': expected_generation,
        'next': expected_generation + 1, 'now': tables.utcnow()})
    if result.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            'resource provider generation conflict')
    changes.touch(conn, provider_id)
    return expected_generation + 1


# -- conditions every provider filter shares --------------------------------

def having_any_trait(trait_ids, provider=_RP.c.id):
    """Providers (``provider``: a column of provider ids) having any of
    ``trait_ids``."""
    return provider.in_(sa.select(_RP_TRAIT.c.resource_provider_id)
                        .where(_RP_TRAIT.c.trait_id.in_(trait_ids)))


def in_any_aggregate(aggregate_uuids, provider=_RP.c.id):
    """Providers (``provider``: a column of provider ids) in any of the
    aggregates (unknown uuids match nothing)."""
    return provider.in_(
        sa.select(_RP_AGG.c.resource_provider_id)
        .select_from(_RP_AGG.join(_AGG, _AGG.c.id == _RP_AGG.c.aggregate_id))
        .where(_AGG.c.uuid.in_(set(aggregate_uuids))))


def inventory_usage():
    """What is allocated of the inventory row's class on its provider.

    Correlated to the inventory row, so it reads just that (provider,
    class) range of the covering allocations index: the cost grows with
    the rows inspected, never with all allocations times all inventories,
    whatever plan the database picks (even before it has statistics).
    """
    return sa.func.coalesce(
        sa.select(sa.func.sum(_ALLOC.c.used))
        .where(_ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
               _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
        .correlate(_INV)
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
