"""The audit's reads of allocations: who holds what, which consumers span
trees, which migrations are old.

The audit's other facts (inventories, usage, trees, sharing) come from
the candidate state in memory; what only the allocation rows know is
read here, each in one statement over the whole table or in statements
narrowed to the few consumers or providers a finding names.  Plain
values in and out; nothing here knows about HTTP.
"""

import collections

import os_traits
import sqlalchemy as sa

from placement.storage import tables
from placement.storage.tables import (
    ALLOC, CONSUMER, CONSUMER_TYPE, PROJECT, RC, RP, RP_TRAIT, TRAIT, USER)


# When a consumer's allocations were last written: allocations are
# replaced whole on every write, so the newest row says.
_WRITTEN = sa.func.coalesce(ALLOC.c.updated_at, ALLOC.c.created_at)

# PostgreSQL's work_mem while every allocation is grouped by consumer.
_GROUPING_MEMORY = '128MB'
# Consumers or providers named in one IN list at most.
_CHUNK = 1000

Holding = collections.namedtuple('Holding', 'consumer used written')
# Where a consumer holds: a provider, its root, whether it shares.
Placement = collections.namedtuple('Placement', 'provider root sharing')
Consumer = collections.namedtuple(
    'Consumer', 'uuid consumer_type project_id user_id')


def holdings(conn, pairs):
    """{(provider id, class id): [Holding]} for ``pairs``, each list
    largest first, then newest, then by consumer uuid."""
    found = collections.defaultdict(list)
    providers = sorted({provider for provider, _ in pairs})
    wanted = set(pairs)
    for chunk in _chunks(providers):
        rows = conn.execute(
            sa.select(ALLOC.c.resource_provider_id,
                      ALLOC.c.resource_class_id, ALLOC.c.consumer_id,
                      sa.func.sum(ALLOC.c.used), sa.func.max(_WRITTEN))
            .where(ALLOC.c.resource_provider_id.in_(chunk))
            .group_by(ALLOC.c.resource_provider_id,
                      ALLOC.c.resource_class_id, ALLOC.c.consumer_id))
        for provider, class_id, consumer, used, written in rows:
            if (provider, class_id) in wanted:
                found[provider, class_id].append(
                    Holding(consumer, int(used), written))
    for held in found.values():
        held.sort(key=_largest_then_newest)
    return found


def _largest_then_newest(holding):
    written = holding.written
    return (-holding.used, -written.timestamp() if written else 0,
            holding.consumer)


def _sharing_trait():
    return (sa.select(TRAIT.c.id)
            .where(TRAIT.c.name == os_traits.MISC_SHARES_VIA_AGGREGATE)
            .scalar_subquery())


def _with_sharing():
    """(shares, allocations joined to their providers and to ``shares``,
    the provider's MISC_SHARES_VIA_AGGREGATE trait if it has it)."""
    shares = RP_TRAIT.alias('shares')
    joined = ALLOC.join(RP, RP.c.id == ALLOC.c.resource_provider_id)
    return shares, joined.outerjoin(shares, sa.and_(
        shares.c.resource_provider_id == ALLOC.c.resource_provider_id,
        shares.c.trait_id == _sharing_trait()))


def spanning(conn):
    """Every consumer holding in two or more trees, in one pass over the
    allocations (grouped by consumer: a second at 1,000,000, which
    ``consumer_spans`` spends once per process): ({consumer uuid: (root
    id, sharing provider id)} of those holding in one tree of their own
    and on one sharing provider outside it, [consumer uuid] of the
    others)."""
    shares, joined = _with_sharing()
    not_sharing = shares.c.trait_id.is_(None)
    root = tables.root_of(RP)
    own_root = sa.case((not_sharing, root), else_=None)
    sharing = sa.case((not_sharing, None),
                      else_=ALLOC.c.resource_provider_id)
    if conn.dialect.name == 'postgresql':
        # Room to group a million rows in memory, for this transaction
        # only: with the default 4 MB they spill to disk, a third slower.
        conn.exec_driver_sql("SET LOCAL work_mem = '%s'" % _GROUPING_MEMORY)
    pairs, others = {}, []
    for consumer, low, high, sharing_low, sharing_high in conn.execute(
            sa.select(ALLOC.c.consumer_id, sa.func.min(own_root),
                      sa.func.max(own_root), sa.func.min(sharing),
                      sa.func.max(sharing))
            .select_from(joined)
            .group_by(ALLOC.c.consumer_id)
            .having(sa.func.min(root) != sa.func.max(root))):
        pair = pair_of(low, high, sharing_low, sharing_high)
        if pair is None:
            others.append(consumer)
        else:
            pairs[consumer] = pair
    return pairs, others


def pair_of(low, high, sharing_low, sharing_high):
    """(root, sharing provider) of a consumer holding in two or more
    trees, from the lowest and highest root of its providers that do not
    share and the lowest and highest of its sharing providers: when those
    are one root and one sharing provider (which is then outside that
    root's tree), else None.  The one rule ``spanning`` classifies by in
    SQL and ``consumer_spans`` by what it reads again."""
    if (low is not None and low == high and sharing_low is not None
            and sharing_low == sharing_high):
        return low, sharing_low
    return None


def placements(conn, consumers):
    """{consumer uuid: [Placement]} of ``consumers`` (those holding
    nothing left out)."""
    shares, joined = _with_sharing()
    found = collections.defaultdict(list)
    for chunk in _chunks(sorted(consumers)):
        for consumer, provider, root, sharing in conn.execute(
                sa.select(ALLOC.c.consumer_id,
                          ALLOC.c.resource_provider_id,
                          tables.root_of(RP),
                          shares.c.trait_id.isnot(None))
                .distinct().select_from(joined)
                .where(ALLOC.c.consumer_id.in_(chunk))):
            found[consumer].append(Placement(provider, root, sharing))
    return found


def roots_of(conn, providers):
    """The root ids of ``providers`` (ids) that exist."""
    return _distinct(conn, tables.root_of(RP), RP.c.id, providers)


def consumers_on(conn, providers):
    """The consumers holding on any of ``providers`` (ids)."""
    return _distinct(conn, ALLOC.c.consumer_id,
                     ALLOC.c.resource_provider_id, providers)


def _distinct(conn, column, key, values):
    """The distinct values of ``column`` in the rows whose ``key`` is one
    of ``values``."""
    found = set()
    for chunk in _chunks(sorted(values)):
        found.update(conn.scalars(
            sa.select(column).distinct().where(key.in_(chunk))))
    return found


Held = collections.namedtuple(
    'Held', 'consumer provider provider_uuid root root_uuid resource_class '
            'used written')


def allocations_of(conn, consumers):
    """{consumer uuid: [Held]}: what each of ``consumers`` holds, where
    (provider and root, by id and uuid) and since when."""
    root = RP.alias('root')
    found = collections.defaultdict(list)
    for chunk in _chunks(sorted(consumers)):
        for row in conn.execute(
                sa.select(ALLOC.c.consumer_id,
                          ALLOC.c.resource_provider_id, RP.c.uuid,
                          tables.root_of(RP), root.c.uuid, RC.c.name,
                          ALLOC.c.used, _WRITTEN)
                .select_from(tables.ALLOC_WITH_PROVIDER_AND_CLASS.join(
                    root, root.c.id == tables.root_of(RP)))
                .where(ALLOC.c.consumer_id.in_(chunk))):
            found[row[0]].append(Held(*row))
    return found


def consumers(conn, uuids):
    """{uuid: Consumer} of those of ``uuids`` with a consumer record
    (allocations written before consumers were recorded have none)."""
    found = {}
    columns = (CONSUMER.c.uuid, CONSUMER_TYPE.c.name, PROJECT.c.external_id,
               USER.c.external_id)
    joined = tables.with_consumer_names(CONSUMER)
    for chunk in _chunks(sorted(uuids)):
        for row in conn.execute(sa.select(*columns).select_from(joined)
                                .where(CONSUMER.c.uuid.in_(chunk))):
            found[row[0]] = Consumer(*row)
    return found


def migrations_written_before(conn, cutoff):
    """{consumer uuid: when its allocations were last written} for the
    consumers of type MIGRATION whose allocations were all last written
    before ``cutoff`` (a naive UTC datetime).  The migrations first (by
    the index on their type), then their allocations (by consumer): not
    a pass over every allocation."""
    migrations = (sa.select(CONSUMER.c.uuid)
                  .where(CONSUMER.c.consumer_type_id == (
                      sa.select(CONSUMER_TYPE.c.id)
                      .where(CONSUMER_TYPE.c.name == 'MIGRATION')
                      .scalar_subquery())))
    written = sa.func.max(_WRITTEN)
    found = {}
    for chunk in _chunks(sorted(conn.scalars(migrations))):
        found.update(conn.execute(
            sa.select(ALLOC.c.consumer_id, written)
            .where(ALLOC.c.consumer_id.in_(chunk))
            .group_by(ALLOC.c.consumer_id)
            .having(written < cutoff)).all())
    return found


def _chunks(values, size=_CHUNK):
    for start in range(0, len(values), size):
        yield values[start:start + size]
