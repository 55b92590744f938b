"""Consumers and the projects, users and consumer types they refer to.

A consumer row exists while it holds allocations (and, as with upstream,
when a write created it but left it without any).  Its generation guards
its allocations the way a provider's guards the provider's view.

Projects, users and consumer types are created on first mention.  Two
requests may mention the same new one at once: the INSERT runs in a
SAVEPOINT, and the loser of the unique-key race reads the winner's row, so
neither fails.
"""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import error_codes
from placement.storage import exceptions
from placement.storage import tables

_CONSUMER = tables.consumers
_PROJECT = tables.projects
_USER = tables.users
_TYPE = tables.consumer_types
_ALLOC = tables.allocations

# How a consumer without a type is named in usage reports.
UNKNOWN_TYPE = 'unknown'


class GenerationConflict(exceptions.ConcurrentUpdate):
    """The consumer generation the client sent is not the current one."""
    code = error_codes.CONCURRENT_UPDATE


def _get_or_create(conn, table, key_column, value):
    """The id of ``table``'s row whose ``key_column`` is ``value``."""
    column = table.c[key_column]
    found = conn.scalar(sa.select(table.c.id).where(column == value))
    if found is not None:
        return found
    try:
        with conn.begin_nested():
            return conn.execute(table.insert().values(
                {key_column: value, 'created_at': tables.utcnow()})
            ).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        # A concurrent request created it first; its row is committed.
        return conn.scalar(sa.select(table.c.id).where(column == value))


def project_id(conn, external_id):
    return _get_or_create(conn, _PROJECT, 'external_id', external_id)


def user_id(conn, external_id):
    return _get_or_create(conn, _USER, 'external_id', external_id)


def consumer_type_id(conn, name):
    return _get_or_create(conn, _TYPE, 'name', name)


def find(conn, uuid):
    """The consumer as a dict (internal ids and generation), or None."""
    row = conn.execute(
        sa.select(_CONSUMER.c.id, _CONSUMER.c.uuid, _CONSUMER.c.generation,
                  _CONSUMER.c.project_id, _CONSUMER.c.user_id,
                  _CONSUMER.c.consumer_type_id)
        .where(_CONSUMER.c.uuid == uuid)).first()
    return dict(row._mapping) if row else None


def _generation_conflict(expected, given):
    return GenerationConflict(
        'consumer generation conflict - expected %s but got %s'
        % ('null' if expected is None else expected,
           'None' if given is None else given))


def ensure(conn, uuid, project, user, *, check_generation=False,
           generation=None, consumer_type=None):
    """The consumer ``uuid`` as it is about to be written, created if new.

    ``project`` and ``user`` are external ids.  With ``check_generation``
    (microversion 1.28 on) ``generation`` must be the consumer's current
    one, or None for a consumer that does not exist yet.  Project, user
    and ``consumer_type`` (when given) of an existing consumer are changed
    to those of the request, without touching its generation: that is
    bumped by the allocation write itself.

    Returns the consumer as ``find`` does.
    """
    wanted = {'project_id': project_id(conn, project),
              'user_id': user_id(conn, user)}
    if consumer_type is not None:
        wanted['consumer_type_id'] = consumer_type_id(conn, consumer_type)
    consumer = find(conn, uuid)
    if consumer is None:
        if check_generation and generation is not None:
            raise _generation_conflict(None, generation)
        consumer = _create(conn, uuid, wanted)
        if consumer is not None:
            return consumer
        # Created concurrently since we looked: the client's "new
        # consumer" is stale when it says so with a generation.
        consumer = find(conn, uuid)
        if check_generation:
            raise _generation_conflict(consumer['generation'], generation)
    elif check_generation and consumer['generation'] != generation:
        raise _generation_conflict(consumer['generation'], generation)
    changes = {key: value for key, value in wanted.items()
               if consumer[key] != value}
    if changes:
        conn.execute(_CONSUMER.update()
                     .where(_CONSUMER.c.id == consumer['id'])
                     .values(updated_at=tables.utcnow(), **changes))
        consumer.update(changes)
    return consumer


def _create(conn, uuid, values):
    """The new consumer, or None if another request created it first."""
    try:
        with conn.begin_nested():
            consumer_id = conn.execute(_CONSUMER.insert().values(
                uuid=uuid, generation=0, created_at=tables.utcnow(),
                **values)).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        return None
    consumer = dict(values, id=consumer_id, uuid=uuid, generation=0)
    consumer.setdefault('consumer_type_id', None)
    return consumer


def increment_generation(conn, consumer):
    """Compare-and-swap the consumer's generation to the next one."""
    result = conn.execute(
        _CONSUMER.update()
        .where(_CONSUMER.c.id == consumer['id'],
               _CONSUMER.c.generation == consumer['generation'])
        .values(generation=consumer['generation'] + 1,
                updated_at=tables.utcnow()))
    if result.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            'Another thread concurrently updated the data. Please retry '
            'your update')
    consumer['generation'] += 1


def delete_if_unused(conn, uuids):
    """Delete those of the consumers ``uuids`` that hold no allocation."""
    uuids = sorted(set(uuids))
    if not uuids:
        return
    conn.execute(_CONSUMER.delete().where(
        _CONSUMER.c.uuid.in_(uuids),
        ~sa.exists().where(_ALLOC.c.consumer_id == _CONSUMER.c.uuid)))
