"""Allocations: reading them, and replacing consumers' allocations at once.

A write names consumers and, for each, the allocations it should hold
from now on (none removes them).  All of it is applied in one transaction
or none of it is, so a move (one consumer emptied while another is
written, as nova does for migrations) never leaves half a claim.

Overcommit is prevented by compare-and-swap on generations, not by locks
held while deciding: the write reads each provider's generation, its
inventory and its usage in one statement (one snapshot), checks capacity,
writes, and finally bumps each provider's generation only if it is still
the one read.  Any other writer to those providers in between bumped it
first, so this attempt rolls back and is retried from the start, up to
``[placement] allocation_conflict_retry_count`` times.  Consumers are
guarded the same way by their own generations.
"""

import collections
import dataclasses
import logging

import sqlalchemy as sa

from placement import inventory_rules
from placement.storage import changes
from placement.storage import consumers as consumer_storage
from placement.storage import exceptions
from placement.storage import generations as provider_generations
from placement.storage import inventories
from placement.storage import prepared
from placement.storage import providers_core
from placement.storage import resource_classes
from placement.storage import tables
from placement.storage.tables import (
    ALLOC, CONSUMER, CONSUMER_OF_ALLOC, CONSUMER_TYPE, INV, PROJECT, RC, RP,
    USER)

LOG = logging.getLogger(__name__)

# The statements every claim runs, built once: constructing a statement
# costs SQLAlchemy about ten times what executing a built one does.
_NAMED_IDS = sa.union_all(
    sa.select(sa.literal(0, sa.Integer).label('is_class'),
              RP.c.uuid.label('key'), RP.c.id)
    .where(RP.c.uuid.in_(sa.bindparam('uuids', expanding=True))),
    sa.select(sa.literal(1, sa.Integer), RC.c.name, RC.c.id)
    .where(RC.c.name.in_(sa.bindparam('names', expanding=True))))
_PROVIDER_STATE = (
    sa.select(RP.c.id, RP.c.generation, INV.c.resource_class_id,
              *inventories.FIELD_COLUMNS,
              providers_core.inventory_usage().label('used'))
    .select_from(RP.outerjoin(INV, sa.and_(
        INV.c.resource_provider_id == RP.c.id,
        INV.c.resource_class_id.in_(
            sa.bindparam('class_ids', expanding=True)))))
    .where(RP.c.id.in_(sa.bindparam('provider_ids', expanding=True))))
_CONSUMER_WITH_PROVIDERS = (
    sa.select(CONSUMER.c.id, CONSUMER.c.generation,
              CONSUMER.c.project_id, ALLOC.c.resource_provider_id)
    .select_from(CONSUMER.join(ALLOC, CONSUMER_OF_ALLOC))
    .where(CONSUMER.c.uuid == sa.bindparam('uuid')))
_DELETE_CONSUMER_ALLOCATIONS = ALLOC.delete().where(
    ALLOC.c.consumer_id == sa.bindparam('uuid'))
_DELETE_CONSUMER = CONSUMER.delete().where(
    CONSUMER.c.id == sa.bindparam('consumer_id'),
    CONSUMER.c.generation == sa.bindparam('expected'))


class ProviderNotFound(exceptions.InvalidInput):
    """An allocation names a provider that does not exist."""


class CannotAllocate(exceptions.Conflict):
    """The inventory cannot take the allocation (missing, too small, or
    the amount breaks min_unit, max_unit or step_size)."""


class _LostRace(exceptions.ConcurrentUpdate):
    """A generation changed under this attempt: worth trying again."""


@dataclasses.dataclass
class ConsumerWrite:
    """What one consumer's allocations become.

    ``allocations`` is ``{provider uuid: {resource class: amount}}``; an
    empty dict removes the consumer's allocations.  ``generation`` is only
    checked when the write is made with ``check_generation``; None then
    means "a consumer that does not exist yet".  ``consumer_type`` None
    leaves the type as it is.
    """
    uuid: str
    project_id: str
    user_id: str
    allocations: dict
    generation: int | None = None
    consumer_type: str | None = None


# -- reading ---------------------------------------------------------------

# Built once, as _FOR_PROVIDER below.
_FOR_CONSUMER = prepared.Statement(
    sa.select(RP.c.uuid.label('resource_provider_uuid'),
              RP.c.generation.label('resource_provider_generation'),
              RC.c.name.label('resource_class'), ALLOC.c.used,
              ALLOC.c.created_at, ALLOC.c.updated_at,
              CONSUMER.c.generation.label('consumer_generation'),
              PROJECT.c.external_id.label('project_id'),
              USER.c.external_id.label('user_id'),
              CONSUMER_TYPE.c.name.label('consumer_type'))
    .select_from(tables.with_consumer_names(
        tables.ALLOC_WITH_PROVIDER_AND_CLASS.join(
            CONSUMER, CONSUMER_OF_ALLOC)))
    .where(ALLOC.c.consumer_id == sa.bindparam('consumer'))
    .order_by(ALLOC.c.id))
_CONSUMER_ALLOCATION_FIELDS = tuple(
    column.name for column in _FOR_CONSUMER.statement.selected_columns)


def for_consumer(conn, consumer_uuid):
    """(consumer, its allocations), or (None, []) if it holds none.

    The consumer is a dict with ``uuid``, ``generation``, ``project_id``
    and ``user_id`` (external ids) and ``consumer_type`` (None if untyped);
    each allocation has ``resource_provider_uuid``,
    ``resource_provider_generation``, ``resource_class``, ``used`` and
    timestamps.
    """
    return _consumer_allocations(
        consumer_uuid,
        _FOR_CONSUMER.execute(conn, {'consumer': consumer_uuid}).all())


def read_for_consumer(db, consumer_uuid):
    """``for_consumer`` in a read of its own: its one statement outside a
    transaction where ``db`` can (``Database.peek_rows``), else in
    ``db.read``."""
    rows = db.peek_rows(_FOR_CONSUMER, {'consumer': consumer_uuid})
    if rows is None:
        return db.read(for_consumer, consumer_uuid)
    return _consumer_allocations(consumer_uuid, rows.all())


def _consumer_allocations(consumer_uuid, rows):
    if not rows:
        return None, []
    first = rows[0]
    consumer = {'uuid': consumer_uuid,
                'generation': first.consumer_generation,
                'project_id': first.project_id, 'user_id': first.user_id,
                'consumer_type': first.consumer_type}
    return consumer, [dict(zip(_CONSUMER_ALLOCATION_FIELDS, row))
                      for row in rows]


# Built once: nova-compute asks every minute, and building the statement
# cost more than the database's work.  The provider comes along in the
# same statement, so that its generation and the allocations are of one
# moment, at one round trip.  Only allocations with a consumer row count;
# a consumer always has its project and user (foreign keys, NOT NULL), so
# joining those too only cost PostgreSQL two index probes an allocation.
_FOR_PROVIDER = prepared.Statement(
    sa.select(RP.c.id, RP.c.generation.label('resource_provider_generation'),
              ALLOC.c.consumer_id.label('consumer_uuid'),
              CONSUMER.c.generation.label('consumer_generation'),
              RC.c.name.label('resource_class'), ALLOC.c.used,
              ALLOC.c.created_at, ALLOC.c.updated_at)
    .select_from(RP.outerjoin(
        ALLOC.join(RC, ALLOC.c.resource_class_id == RC.c.id)
        .join(CONSUMER, CONSUMER_OF_ALLOC),
        ALLOC.c.resource_provider_id == RP.c.id))
    .where(RP.c.uuid == sa.bindparam('uuid'))
    .order_by(ALLOC.c.id))


def for_provider(conn, uuid):
    """(the provider's id, its generation, the allocations against it,
    each with ``consumer_uuid``, ``consumer_generation``,
    ``resource_class``, ``used`` and timestamps), all of one moment;
    NotFound if there is no provider ``uuid``."""
    return providers_core.generation_and_rows(conn, _FOR_PROVIDER, uuid,
                                              leading=2)


# -- writing ---------------------------------------------------------------

@dataclasses.dataclass
class _Entry:
    """One (consumer, provider, class, amount) of a write; amount 0 marks
    an existing allocation being removed."""
    consumer: dict
    provider_uuid: str
    resource_class: str
    amount: int
    provider_id: int = None
    class_id: int = None


def _existing(conn, consumer_uuids):
    """The current allocations of the consumers, with provider uuids and
    class names, in the order they were made (the caller leaves out the
    fresh consumers, which have none)."""
    if not consumer_uuids:
        return []
    return conn.execute(
        sa.select(ALLOC.c.consumer_id, ALLOC.c.resource_provider_id,
                  ALLOC.c.resource_class_id, ALLOC.c.used,
                  RP.c.uuid.label('provider_uuid'),
                  RC.c.name.label('resource_class'))
        .select_from(tables.ALLOC_WITH_PROVIDER_AND_CLASS)
        .where(ALLOC.c.consumer_id.in_(sorted(consumer_uuids)))
        .order_by(ALLOC.c.id)).all()


def _named_ids(conn, writes):
    """({uuid: id} of the providers the writes allocate from, {name: id}
    of the classes they name that exist), in one statement; the first
    missing provider (in request order) is a ProviderNotFound."""
    wanted = sorted({uuid for write in writes for uuid in write.allocations})
    if not wanted:
        return {}, {}
    names = sorted({name for write in writes
                    for resources in write.allocations.values()
                    for name in resources})
    rows = conn.execute(_NAMED_IDS, {'uuids': wanted, 'names': names}).all()
    ids = {row.key: row.id for row in rows if not row.is_class}
    class_ids = {row.key: row.id for row in rows if row.is_class}
    for write in writes:
        for uuid in write.allocations:
            if uuid not in ids:
                raise ProviderNotFound(
                    "Allocation for resource provider '%s' that does not "
                    "exist." % uuid)
    return ids, class_ids


def _entries(writes, consumers, provider_ids, existing):
    """Every (consumer, provider, class, amount) the write decides on.

    A consumer whose allocations become empty contributes its current
    allocations with amount 0: those providers and the consumer count as
    changed (their generations move), as with upstream.
    """
    entries = []
    for write in writes:
        consumer = consumers[write.uuid]
        if write.allocations:
            for provider_uuid, resources in write.allocations.items():
                for resource_class, amount in resources.items():
                    entries.append(_Entry(
                        consumer, provider_uuid, resource_class, amount,
                        provider_id=provider_ids[provider_uuid]))
            continue
        for row in existing:
            if row.consumer_id == write.uuid:
                entries.append(_Entry(
                    consumer, row.provider_uuid, row.resource_class, 0,
                    provider_id=row.resource_provider_id,
                    class_id=row.resource_class_id))
    return entries


def _resolve_classes(conn, entries, known):
    """Set each entry's class id from ``known`` ({name: id}, looked up
    with the providers) or a lookup of the rest; the first unknown class
    (in request order) is a ResourceClassNotFound."""
    ids = dict(known)
    rest = {entry.resource_class for entry in entries} - ids.keys()
    if rest:
        ids.update(resource_classes.ids_by_name(conn, rest))
    for entry in entries:
        if entry.resource_class not in ids:
            raise inventories.ResourceClassNotFound(
                'No such resource class %s.' % entry.resource_class)
        entry.class_id = ids[entry.resource_class]


def _provider_state(conn, provider_ids, class_ids):
    """({provider id: generation}, {(provider id, class id): inventory
    record with its current ``used``}), read in one statement so that
    generations and usage come from the same snapshot."""
    rows = conn.execute(_PROVIDER_STATE, {
        'provider_ids': sorted(provider_ids),
        'class_ids': sorted(class_ids)}).all()
    generations = {row.id: row.generation for row in rows}
    records = {(row.id, row.resource_class_id): row._mapping
               for row in rows if row.resource_class_id is not None}
    return generations, records


def _check_capacity(entries, records, freed, class_names):
    """Refuse (CannotAllocate) unless every provider can take its share.

    ``freed`` is what the consumers being rewritten hold now, per
    (provider id, class id): it is released by the write.  A provider
    already over capacity (its inventory shrank) may still be written to
    if the write leaves it no worse off than before, as upstream allows.
    """
    with_inventory = {provider_id for provider_id, _ in records}
    missing = []
    for entry in entries:
        if (entry.provider_id not in with_inventory
                and entry.provider_uuid not in missing):
            missing.append(entry.provider_uuid)
    if missing:
        raise _invalid(', '.join(class_names), ', '.join(missing))
    wanted = collections.Counter()
    for entry in entries:
        if entry.amount == 0:
            continue
        key = (entry.provider_id, entry.class_id)
        record = records.get(key)
        if record is None:
            raise _invalid(entry.resource_class, entry.provider_uuid)
        if (entry.amount < record['min_unit']
                or entry.amount > record['max_unit']
                or entry.amount % record['step_size']):
            raise CannotAllocate(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would violate inventory "
                "constraints." % (entry.resource_class, entry.provider_uuid))
        wanted[key] += entry.amount
        before = record['used']
        after = before - freed[key] + wanted[key]
        capacity = inventory_rules.capacity_of(record)
        if after > capacity and after > before:
            LOG.warning('Over capacity for %s on resource provider %s: '
                        'would use %s of %s', entry.resource_class,
                        entry.provider_uuid, after, capacity)
            raise CannotAllocate(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would exceed the capacity."
                % (entry.resource_class, entry.provider_uuid))


def _invalid(resource_class, provider):
    return CannotAllocate("Inventory for '%s' on resource provider '%s' "
                          "invalid." % (resource_class, provider))


def _bump_providers(conn, generations):
    """Compare-and-swap every provider's generation, in id order so that
    concurrent writers lock rows in the same order."""
    for provider_id in sorted(generations):
        try:
            provider_generations.bump(conn, provider_id,
                                      generations[provider_id])
        except exceptions.ConcurrentUpdate as exc:
            raise _LostRace(exc.message)


def _bump_consumers(conn, consumers):
    """Compare-and-swap the consumers' generations; a fresh one already
    has the generation it ends with (see ``consumers.ensure``)."""
    for consumer in sorted(consumers, key=lambda c: c['id']):
        if consumer.get('fresh'):
            continue
        try:
            consumer_storage.increment_generation(conn, consumer)
        except exceptions.ConcurrentUpdate as exc:
            raise _LostRace(exc.message)


def _create_fresh(conn, consumers):
    """Insert the consumers new to this write, now that it passed its
    checks; one created meanwhile by another transaction sends this
    attempt back to the start, where it is no longer new."""
    for uuid in sorted(consumers):
        consumer = consumers[uuid]
        if (consumer.get('fresh')
                and not consumer_storage.create_fresh(conn, consumer)):
            raise _LostRace('consumer %s created concurrently' % uuid)


def prepare(conn, writes, check_generation=False):
    """The checks of a write that come before any change, in upstream's
    order: consumer generations (creating new consumers and recording
    their project, user and type), then the providers named.

    Returns the state ``apply`` needs.
    """
    consumers = {}
    for write in writes:
        consumers[write.uuid] = consumer_storage.ensure(
            conn, write.uuid, write.project_id, write.user_id,
            check_generation=check_generation, generation=write.generation,
            consumer_type=write.consumer_type,
            allocating=any(write.allocations.values()))
    return (consumers, *_named_ids(conn, writes))


def apply(conn, writes, prepared):
    """Replace the consumers' allocations: classes, then capacity, then
    the rows, then the generations' compare-and-swap."""
    consumers, provider_ids, known_classes = prepared
    rewritten = sorted(uuid for uuid, consumer in consumers.items()
                       if not consumer.get('fresh'))
    existing = _existing(conn, rewritten)
    entries = _entries(writes, consumers, provider_ids, existing)
    if not entries:
        _create_fresh(conn, consumers)
        return
    _resolve_classes(conn, entries, known_classes)
    class_ids = {entry.class_id for entry in entries}
    generations, records = _provider_state(
        conn, {entry.provider_id for entry in entries}, class_ids)
    freed = collections.Counter()
    for row in existing:
        freed[(row.resource_provider_id, row.resource_class_id)] += row.used
    changes.touch(conn, *generations,
                  *(row.resource_provider_id for row in existing))
    class_names = [name for _, name in sorted(
        {(entry.class_id, entry.resource_class) for entry in entries})]
    _check_capacity(entries, records, freed, class_names)
    _create_fresh(conn, consumers)
    if rewritten:
        conn.execute(ALLOC.delete().where(
            ALLOC.c.consumer_id.in_(rewritten)))
    now = tables.utcnow()
    new_rows = [{'resource_provider_id': entry.provider_id,
                 'resource_class_id': entry.class_id,
                 'consumer_id': entry.consumer['uuid'],
                 'used': entry.amount, 'created_at': now}
                for entry in entries if entry.amount]
    if new_rows:
        conn.execute(ALLOC.insert(), new_rows)
    _bump_providers(conn, generations)
    touched = {entry.consumer['uuid']: entry.consumer for entry in entries}
    changes.projects_changed(
        conn, *{consumer['project_id'] for consumer in touched.values()})
    _bump_consumers(conn, touched.values())
    consumer_storage.delete_if_unused(
        conn, [write.uuid for write in writes
               if write.uuid in touched and not write.allocations])


def replace(conn, writes, check_generation=False):
    """Apply ``writes`` (ConsumerWrite, in request order) in ``conn``'s
    transaction: ``prepare`` then ``apply``."""
    apply(conn, writes, prepare(conn, writes, check_generation))


class MissingOwner(exceptions.InvalidInput):
    """A consumer with nothing allocated yet needs a project and user."""


def merge(current, changes):
    """``current`` ({provider: {class: amount}}) with ``changes`` merged
    in as a JSON merge patch of the dict form (RFC 7396): ``None`` for a
    provider or a class removes it; a provider left with nothing goes."""
    merged = {provider: dict(amounts) for provider, amounts in
              current.items()}
    for provider, change in changes.items():
        if change is None:
            merged.pop(provider, None)
            continue
        amounts = merged.setdefault(provider, {})
        for resource_class, amount in change.get('resources', {}).items():
            if amount is None:
                amounts.pop(resource_class, None)
            else:
                amounts[resource_class] = amount
        if not amounts:
            del merged[provider]
    return merged


def patch(conn, consumer_uuid, changes, generation, project_id=None,
          user_id=None, consumer_type=None):
    """Merge ``changes`` into the consumer's allocations and write the
    result as ``replace`` does (generation checked), in ``conn``'s
    transaction: the read and the write see the same state, and a
    concurrent writer of the same consumer makes this one lose the
    generation race. Returns the consumer and allocations written, as
    ``for_consumer`` does."""
    consumer, rows = for_consumer(conn, consumer_uuid)
    current = {}
    for row in rows:
        current.setdefault(row['resource_provider_uuid'], {})[
            row['resource_class']] = row['used']
    if consumer is not None:
        project_id = project_id or consumer['project_id']
        user_id = user_id or consumer['user_id']
    if project_id is None or user_id is None:
        raise MissingOwner(
            'project_id and user_id are required for consumer %s, which '
            'holds no allocations' % consumer_uuid)
    replace(conn, [ConsumerWrite(
        uuid=consumer_uuid, project_id=project_id, user_id=user_id,
        allocations=merge(current, changes), generation=generation,
        consumer_type=consumer_type)], check_generation=True)
    return for_consumer(conn, consumer_uuid)


def retrying(db, retries, fn, *args):
    """``fn(conn, *args)`` in a write transaction of ``db``, tried again
    from the start (re-reading everything) each time it loses a
    generation race, at most ``retries`` times in all."""
    for attempt in range(1, max(retries, 1) + 1):
        try:
            return db.write(fn, *args)
        except _LostRace:
            LOG.debug('Allocation write lost a generation race (attempt '
                      '%d of %d)', attempt, retries)
    LOG.warning('Exceeded retry limit of %d on allocations write', retries)
    raise exceptions.ConcurrentUpdate(
        'Another thread concurrently updated the resource provider data. '
        'Please retry your update')


def delete_for_consumer(conn, consumer_uuid):
    """Remove every allocation of the consumer and the consumer itself.

    Provider generations are not touched, as upstream: freeing can never
    overcommit.  The consumer row goes by compare-and-swap on the
    generation read with its allocations, after them: a concurrent
    rewrite of the same consumer (which bumps that generation) makes this
    attempt roll back and retry instead of freeing allocations it did not
    read, or freeing them twice.
    """
    rows = conn.execute(_CONSUMER_WITH_PROVIDERS,
                        {'uuid': consumer_uuid}).all()
    if not rows:
        raise exceptions.NotFound(
            "No allocations for consumer '%s'" % consumer_uuid)
    changes.touch(conn, *{row.resource_provider_id for row in rows})
    changes.projects_changed(conn, rows[0].project_id)
    conn.execute(_DELETE_CONSUMER_ALLOCATIONS, {'uuid': consumer_uuid})
    deleted = conn.execute(_DELETE_CONSUMER, {
        'consumer_id': rows[0].id, 'expected': rows[0].generation})
    if deleted.rowcount != 1:
        raise _LostRace('consumer generation conflict')
