"""The change log: which providers each write changed, in commit order.

Processes that keep the candidate-relevant state in memory (see
``placement.candidates.snapshot``) must answer as a fresh read of the
database would.  Every write transaction therefore ends by advancing a
single-row stamp and logging, under the new stamp, the providers it
changed.  The stamp's row lock is taken last and held only until commit,
so stamps are handed out in commit order: a reader that sees stamp N sees
every change up to N, and one short query tells it whether anything
changed since it last looked.

Storage functions say what they changed with ``touch`` (provider ids) or
``names_changed`` (resource classes or traits were created, renamed or
deleted).  A write transaction that says nothing is logged as
``EVERYTHING``: forgetting to say costs a full reload, never a stale
answer.

Writes made by anything else (SQL run by hand, upstream Placement on the
same database) are logged as ``EVERYTHING`` by triggers (migration 0004),
which tell this service's writes apart by a setting its connections make
when opened (``engine``), or on SQLite by the stamp row's ``own_write``,
set only inside this service's write transactions (``begin``, ``record``).
"""

import sqlalchemy as sa

from placement.storage import tables

_STAMP = tables.change_stamp
_LOG = tables.provider_changes

# Pseudo provider ids in the log.
NAMES = 0
EVERYTHING = -1

# The log keeps this many stamps; a reader further behind reloads whole.
KEEP = 20000
# Pruning runs on every PRUNE_EVERY-th stamp.
PRUNE_EVERY = 1000

_KEY = 'placement.changed'

# The triggers migration 0004 makes on MySQL (8 tables, 3 operations),
# where the server may refuse them.
_MYSQL_TRIGGERS = 24


def begin(conn):
    """Start collecting what the write transaction on ``conn`` changes;
    its first statement.

    On SQLite, also mark the transaction as this service's own, so that
    the triggers for foreign writes stay quiet: writers are serialised
    there, so no other connection's write can see the mark, and it is
    removed again before commit.
    """
    conn.info[_KEY] = None
    if conn.dialect.name == 'sqlite':
        _mark_own_write(conn, 1)


def _mark_own_write(conn, value):
    """Set or clear the SQLite mark; plain SQL, as a Core statement here
    costs more (about 70 us each) than the database's work."""
    conn.exec_driver_sql('UPDATE placement_change_stamp SET own_write = %d '
                         'WHERE id = 1' % value)


def touch(conn, *provider_ids):
    """The transaction changed these providers (their rows, inventories,
    usage, traits, aggregates or place in a tree); with none named, it
    changed nothing that candidates see."""
    changed = conn.info.get(_KEY)
    if changed is None:
        changed = conn.info[_KEY] = set()
    changed.update(provider_ids)


def names_changed(conn):
    """The transaction created, renamed or deleted resource classes or
    traits."""
    touch(conn, NAMES)


def record(conn):
    """Advance the stamp and log what changed; the last statements of a
    write transaction, just before its commit."""
    if conn.dialect.name == 'sqlite':
        _mark_own_write(conn, 0)
    changed = conn.info.pop(_KEY, None)
    if changed is None:
        changed = {EVERYTHING}
    elif not changed:
        return
    conn.execute(_STAMP.update().where(_STAMP.c.id == 1)
                 .values(stamp=_STAMP.c.stamp + 1))
    stamp = conn.scalar(sa.select(_STAMP.c.stamp).where(_STAMP.c.id == 1))
    conn.execute(_LOG.insert(), [{'stamp': stamp, 'provider_id': provider}
                                 for provider in sorted(changed)])
    if stamp % PRUNE_EVERY == 0 and stamp > KEEP:
        floor = stamp - KEEP
        conn.execute(_LOG.delete().where(_LOG.c.stamp < floor))
        conn.execute(_STAMP.update().where(_STAMP.c.id == 1)
                     .values(pruned_below=floor))


def current(conn):
    """(stamp, pruned_below, epoch): the last change, the oldest one the
    log still names, and the stamp row's identity (a new one means a new
    database, whose stamps say nothing about the old one's)."""
    return tuple(conn.execute(
        sa.select(_STAMP.c.stamp, _STAMP.c.pruned_below, _STAMP.c.epoch)
        .where(_STAMP.c.id == 1)).one())


_CURRENT_SQL = str(
    sa.select(_STAMP.c.stamp, _STAMP.c.pruned_below, _STAMP.c.epoch)
    .where(_STAMP.c.id == 1).compile(compile_kwargs={'literal_binds': True}))


def current_outside_transaction(db):
    """``current()`` in one round trip, where ``db`` can read outside a
    transaction (``Database.peek``); None where it cannot."""
    row = db.peek(_CURRENT_SQL)
    return None if row is None else tuple(row)


def changed_between(conn, after, upto):
    """The provider ids (or NAMES, EVERYTHING) changed by stamps in
    (after, upto]."""
    return set(conn.scalars(
        sa.select(_LOG.c.provider_id).distinct()
        .where(_LOG.c.stamp > after, _LOG.c.stamp <= upto)))


def foreign_writes_logged(conn):
    """Whether writes made by anything else reach the log: the triggers
    of migration 0004 are all there.  Only a MySQL server refuses them
    (binary logging without SUPER); the migration then goes on without.
    """
    if conn.dialect.name != 'mysql':
        return True
    return conn.scalar(sa.text(
        "SELECT COUNT(*) FROM information_schema.triggers WHERE "
        "trigger_schema = DATABASE() AND trigger_name LIKE "
        "'placement_foreign_%'")) == _MYSQL_TRIGGERS
