"""Consumers and the projects, users and consumer types they refer to.

A consumer row exists while it holds allocations (and, as with upstream,
when a write created it but left it without any).  Its generation guards
its allocations the way a provider's guards the provider's view.

Projects, users and consumer types are created on first mention.  Two
requests may mention the same new one at once: the INSERT runs in a
SAVEPOINT, and the loser of the unique-key race reads the winner's row, so
neither fails.
"""

import importlib

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import error_codes
from placement.storage import changes
from placement.storage import exceptions
from placement.storage import tables
from placement.storage.tables import (
    CONSUMER, CONSUMER_OF_ALLOC, CONSUMER_TYPE, PROJECT, USER)


# How a consumer without a type is named in usage reports.
UNKNOWN_TYPE = 'unknown'

# A consumer as ``find`` reads it: internal ids and generation.
_COLUMNS = (CONSUMER.c.id, CONSUMER.c.uuid, CONSUMER.c.generation,
            CONSUMER.c.project_id, CONSUMER.c.user_id,
            CONSUMER.c.consumer_type_id)


# The dialects whose INSERT can skip a duplicate uuid by itself.
_SKIPPING_DUPLICATES = ('postgresql', 'sqlite')
_insert_new = {}


def _insert_skipping_duplicate(dialect):
    """A new consumer's INSERT on ``dialect`` (one of
    _SKIPPING_DUPLICATES) that skips a duplicate uuid, the id coming back
    only if inserted; built when first needed, so that a process imports
    only its own database's dialect (PostgreSQL's is 2 MB of a worker)."""
    found = _insert_new.get(dialect)
    if found is None:
        insert = importlib.import_module(
            'sqlalchemy.dialects.' + dialect).insert
        found = _insert_new[dialect] = (
            insert(CONSUMER).on_conflict_do_nothing(index_elements=['uuid'])
            .returning(CONSUMER.c.id))
    return found


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
    return _get_or_create(conn, PROJECT, 'external_id', external_id)


def user_id(conn, external_id):
    return _get_or_create(conn, USER, 'external_id', external_id)


def consumer_type_id(conn, name):
    return _get_or_create(conn, CONSUMER_TYPE, 'name', name)


def find(conn, uuid):
    """The consumer as a dict (internal ids and generation), or None."""
    row = conn.execute(
        sa.select(*_COLUMNS).where(CONSUMER.c.uuid == uuid)).first()
    return dict(row._mapping) if row else None


def _generation_conflict(expected, given):
    return GenerationConflict(
        'consumer generation conflict - expected %s but got %s'
        % ('null' if expected is None else expected,
           'None' if given is None else given))


def id_named(table, column, parameter):
    """The id of ``table``'s row whose ``column`` is bound later as
    ``parameter`` (NULL when there is none), as a scalar subquery."""
    return (sa.select(table.c.id)
            .where(table.c[column] == sa.bindparam(parameter))
            .scalar_subquery())


# What a claim usually finds already recorded, in one statement: the ids
# of the project, user and type named (NULL when not recorded yet; a NULL
# type name matches nothing) and the consumer's row (NULLs when new).
# Built once: constructing it costs more than running it.
_KNOWN = (
    sa.select(id_named(PROJECT, 'external_id', 'project').label('project'),
              id_named(USER, 'external_id', 'user').label('user'),
              id_named(CONSUMER_TYPE, 'name', 'type').label('type'),
              *_COLUMNS)
    .select_from(sa.select(sa.literal(1).label('one')).subquery()
                 .outerjoin(CONSUMER,
                            CONSUMER.c.uuid == sa.bindparam('uuid'))))


def _known(conn, uuid, project, user, consumer_type):
    """(project id, user id, type id, consumer) as far as recorded: see
    ``_KNOWN``; the consumer as ``find`` returns it."""
    row = conn.execute(_KNOWN, {'uuid': uuid, 'project': project,
                                'user': user, 'type': consumer_type}).one()
    consumer = None
    if row.id is not None:
        consumer = {column.name: row._mapping[column.name]
                    for column in _COLUMNS}
    return row.project, row.user, row.type, consumer


def ensure(conn, uuid, project, user, *, check_generation=False,
           generation=None, consumer_type=None, allocating=False):
    """The consumer ``uuid`` as it is about to be written, created if new.

    ``project`` and ``user`` are external ids.  With ``check_generation``
    (microversion 1.28 on) ``generation`` must be the consumer's current
    one, or None for a consumer that does not exist yet.  Project, user
    and ``consumer_type`` (when given) of an existing consumer are changed
    to those of the request, without touching its generation: that is
    bumped by the allocation write itself.

    A consumer that does not exist yet comes back ``fresh``, not yet
    inserted (no ``id``): ``create_fresh`` inserts it once the write has
    passed its checks, so a claim refused for capacity costs no insert.
    It holds nothing, so the write skips reading, deleting and
    compare-and-swapping what it cannot have.  With ``allocating`` (the
    write gives it allocations) it starts at the generation that write
    would bump it to.

    Returns the consumer as ``find`` does.
    """
    known_project, known_user, known_type, consumer = _known(
        conn, uuid, project, user, consumer_type)
    wanted = {'project_id': known_project or project_id(conn, project),
              'user_id': known_user or user_id(conn, user)}
    if consumer_type is not None:
        wanted['consumer_type_id'] = (known_type
                                      or consumer_type_id(conn,
                                                          consumer_type))
    if consumer is None:
        if check_generation and generation is not None:
            raise _generation_conflict(None, generation)
        return dict(wanted, id=None, uuid=uuid, fresh=True,
                    generation=1 if allocating else 0,
                    consumer_type_id=wanted.get('consumer_type_id'))
    if check_generation and consumer['generation'] != generation:
        raise _generation_conflict(consumer['generation'], generation)
    differing = {key: value for key, value in wanted.items()
                 if consumer[key] != value}
    if differing:
        conn.execute(CONSUMER.update()
                     .where(CONSUMER.c.id == consumer['id'])
                     .values(updated_at=tables.utcnow(), **differing))
        # What it holds moves from one project, user or type to another.
        changes.projects_changed(conn, consumer['project_id'],
                                 wanted['project_id'])
        consumer.update(differing)
    return consumer


def create_fresh(conn, consumer):
    """Insert the ``fresh`` consumer ``ensure`` returned and set its id;
    False (nothing inserted) if another transaction created that uuid
    since ``ensure`` looked.

    PostgreSQL and SQLite skip the duplicate in the INSERT itself; MySQL
    has no such clause for one key alone (INSERT IGNORE would also hide
    other errors), so there the INSERT runs in a SAVEPOINT.
    """
    values = {key: consumer[key] for key in (
        'uuid', 'generation', 'project_id', 'user_id', 'consumer_type_id')}
    values['created_at'] = tables.utcnow()
    if conn.dialect.name in _SKIPPING_DUPLICATES:
        consumer['id'] = conn.scalar(
            _insert_skipping_duplicate(conn.dialect.name), values)
        return consumer['id'] is not None
    try:
        with conn.begin_nested():
            consumer['id'] = conn.execute(CONSUMER.insert().values(
                values)).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        return False
    return True


def increment_generation(conn, consumer):
    """Compare-and-swap the consumer's generation to the next one."""
    result = conn.execute(
        CONSUMER.update()
        .where(CONSUMER.c.id == consumer['id'],
               CONSUMER.c.generation == consumer['generation'])
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
    conn.execute(CONSUMER.delete().where(
        CONSUMER.c.uuid.in_(uuids),
        ~sa.exists().where(CONSUMER_OF_ALLOC)))
