"""Which aggregates a provider belongs to.

An aggregate is nothing but a uuid that providers share: Placement keeps
no other data about it, so a ``placement_aggregates`` row is created the
first time any provider is put into that aggregate and is never removed.
Membership rows live in ``resource_provider_aggregates``.

Lists come back ordered by the aggregate's internal id (the order in which
Placement first saw each aggregate), which is stable on every backend.
"""

import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import exceptions
from placement.storage import generations
from placement.storage import providers_core
from placement.storage import tables
from placement.storage.tables import AGG, AGGREGATE_MEMBERSHIPS, RP, RP_AGG

_UUID_COLUMN_WIDTH = AGG.c.uuid.type.length


def _memberships(conn, provider_id):
    """{uuid: internal id} of the provider's aggregates, in id order."""
    query = (sa.select(AGG.c.uuid, AGG.c.id)
             .select_from(AGGREGATE_MEMBERSHIPS)
             .where(RP_AGG.c.resource_provider_id == provider_id)
             .order_by(AGG.c.id))
    return {row.uuid: row.id for row in conn.execute(query)}


def get_aggregate_uuids(conn, provider_id):
    """The uuids of the aggregates the provider is a member of."""
    return list(_memberships(conn, provider_id))


def aggregate_ids_by_uuid(conn, uuids):
    """{uuid: internal id} for those of ``uuids`` Placement knows.

    Unknown uuids are simply absent: no provider can be in them, which is
    what ``member_of`` filtering needs to know.
    """
    uuids = set(uuids)
    if not uuids:
        return {}
    query = sa.select(AGG.c.uuid, AGG.c.id).where(AGG.c.uuid.in_(uuids))
    return {row.uuid: row.id for row in conn.execute(query)}


def get_provider_aggregates(conn, provider_uuid):
    """(provider, aggregate uuids) for the provider; NotFound if absent."""
    provider = providers_core.get_by_uuid(conn, provider_uuid)
    return provider, get_aggregate_uuids(conn, provider['id'])


def _storable(aggregate_uuid):
    """The uuid as it will be stored: exactly as the client wrote it.

    Braced or URN spellings are valid uuids but do not fit the column, so
    those (and only those) are stored in canonical form rather than
    failing the write.
    """
    if len(aggregate_uuid) <= _UUID_COLUMN_WIDTH:
        return aggregate_uuid
    return str(uuidlib.UUID(aggregate_uuid))


def _ensure_aggregate(conn, aggregate_uuid):
    """The aggregate's internal id, creating its row if it is new.

    Two writers may create the same new aggregate at once (for different
    providers). The loser's INSERT violates the unique uuid; doing it in
    a SAVEPOINT keeps the transaction usable, and reading again then
    finds the winner's committed row.
    """
    existing = aggregate_ids_by_uuid(conn, [aggregate_uuid])
    if existing:
        return existing[aggregate_uuid]
    try:
        with conn.begin_nested():
            return conn.execute(AGG.insert().values(
                uuid=aggregate_uuid, created_at=tables.utcnow())
            ).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        existing = aggregate_ids_by_uuid(conn, [aggregate_uuid])
        if not existing:
            raise
        return existing[aggregate_uuid]


def _lock_provider(conn, provider_uuid):
    """The provider's id and generation, its row locked until commit.

    Holding the lock serialises concurrent membership writes to one
    provider (on PostgreSQL; SQLite already serialises all writers), so
    the generation checked here is the one the compare-and-swap sees and
    two writers never insert the same membership row.
    """
    row = conn.execute(
        sa.select(RP.c.id, RP.c.generation)
        .where(RP.c.uuid == provider_uuid).with_for_update()).first()
    if row is None:
        # Gone (or never there): answer with the usual not-found error.
        providers_core.get_by_uuid(conn, provider_uuid)
    return row


def set_provider_aggregates(conn, provider_uuid, aggregate_uuids,
                            expected_generation=None):
    """Make the provider a member of exactly ``aggregate_uuids``.

    With ``expected_generation`` (microversion 1.19 on) the write is
    refused with ConcurrentUpdate unless the provider is still at that
    generation, and then bumps it; without it the generation is left
    alone, as the older API promised. Returns the provider's generation
    after the write.
    """
    provider_id, generation = _lock_provider(conn, provider_uuid)
    changes.touch(conn, provider_id)
    if expected_generation is not None and generation != expected_generation:
        raise exceptions.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update "
            "the generation and try again.")
    # Request order, so aggregates new to Placement get ids (and thus
    # list positions) in the order the client gave them.
    wanted = dict.fromkeys(_storable(u) for u in aggregate_uuids)
    current = _memberships(conn, provider_id)
    stale_ids = [agg_id for agg_uuid, agg_id in current.items()
                 if agg_uuid not in wanted]
    if stale_ids:
        conn.execute(RP_AGG.delete().where(
            RP_AGG.c.resource_provider_id == provider_id,
            RP_AGG.c.aggregate_id.in_(stale_ids)))
    now = tables.utcnow()
    for agg_uuid in (u for u in wanted if u not in current):
        conn.execute(RP_AGG.insert().values(
            resource_provider_id=provider_id,
            aggregate_id=_ensure_aggregate(conn, agg_uuid),
            created_at=now))
    if expected_generation is None:
        return generation
    # The stored value, not the client's: JSON's 1.0 is a valid integer.
    return generations.bump(conn, provider_id, generation)
