"""The change log: which providers each write changed, and when.

Processes that keep the candidate-relevant state in memory (see
``placement.state.snapshot``) must answer as a fresh read of the
database would.  Every write transaction therefore ends by advancing a
stamp and logging, under the new stamp, the providers it changed; one
short query tells a reader whether anything changed since it last looked.

The stamp is sharded: ``placement_change_stamp`` holds SHARDS rows, each
with a stamp of its own, and a write advances whichever row no other
transaction holds (``SKIP LOCKED``), holding that row's lock from its
last statements through its commit.  Within a shard, stamps are thus
handed out in commit order: a reader that sees a shard at stamp N sees
every change that shard logged up to N, whatever the other shards did.
Writes to different providers never queue behind one another (one row
for everything made every write of the cloud commit one flush at a
time), and a reader's check is still one statement: the sum of the
stamps, which grows by one with every change logged anywhere.

On a Galera cluster each node advances only the shards of its own
``auto_increment_offset`` (the cluster keeps those distinct per node),
so that two nodes never certify writes to the same stamp row against
each other.  SQLite serialises writers anyway and uses shard 1.

Storage functions say what they changed with ``touch`` (provider ids),
``names_changed`` (resource classes or traits were created, renamed or
deleted) or ``projects_changed`` (a project's usage moved: see
``placement.state.project_usages``).  A write transaction that says
nothing is logged as ``EVERYTHING``: forgetting to say costs a full
reload, never a stale answer.

Writes made by anything else (SQL run by hand, upstream Placement on the
same database) are logged as ``EVERYTHING`` under shard 1 by triggers
(migration 0004), which tell this service's writes apart by a setting its
connections make when opened (``engine``), or on SQLite by shard 1's
``own_write``, set only inside this service's write transactions
(``begin``, ``record``).

How the log is kept is itself versioned: the stamp rows carry the
``protocol`` their writers follow (migration 0009).  A process reads it
with every check, and when it is not PROTOCOL (a newer release's
migration raised it while this process kept serving) the process can no
longer tell what changed: every check then says "changed, and the log
cannot say what", so that each reader reads the tables again, and the
process says why in its log, once.  A release that changes how writes
are logged raises the number in a migration, so that processes still
running the code before it stay exact through a rolling upgrade.
"""

import logging

import random
import typing

import sqlalchemy as sa

from placement.storage import prepared
from placement.storage import tables

LOG = logging.getLogger(__name__)

_STAMP = tables.change_stamp
_LOG = tables.provider_changes

# How this code logs changes: 1, one stamp row (revisions 0002 to 0004);
# 2, 64 shards (0005 on), a number first recorded by revision 0009; 3, a
# provider created in a tree or moved into one logged with the tree's
# root (revision 0010).
PROTOCOL = 3

# The stamp's rows (migration 0005 made them).
SHARDS = 64

# Pseudo provider ids in the log.
NAMES = 0
EVERYTHING = -1
# A project whose usage changed is logged as this less its id (ids start
# at 1): below the pseudo ids above, apart from every provider.
_PROJECTS_BELOW = -2

# The log keeps this many stamps of each shard; a reader further behind
# reloads whole.
KEEP = 20000
# A shard's log is pruned on every PRUNE_EVERY-th stamp of that shard.
PRUNE_EVERY = 1000

_KEY = 'placement.changed'

# The triggers migrations 0004 and 0008 make on MySQL (12 tables, 3
# operations), where the server may refuse them.
_MYSQL_TRIGGERS = 36

# On PostgreSQL a write's last statement (prepared: every write runs it)
# advances a shard: the first that no other transaction holds or, when
# every shard is held, one picked at random, waiting for it. It logs the
# providers under the shard's new stamp and, on every PRUNE_EVERY-th
# stamp, prunes the shard's log; and it goes with the COMMIT (see
# ``record``). The second pick is made only when the first found none.
# The pick is a CTE the UPDATE joins: as ``WHERE id = (SELECT ... SKIP
# LOCKED)`` inside a WITH, PostgreSQL 15 now and then updated no row (5
# of 3,200 concurrent writes, measured), and such a write committed
# without being logged, its change never seen by a state in memory.
_PG_ADVANCE_AND_LOG = prepared.Statement(sa.text(
    'WITH picked AS (SELECT COALESCE('
    '(SELECT id FROM placement_change_stamp ORDER BY id LIMIT 1 '
    'FOR UPDATE SKIP LOCKED), '
    '(SELECT id FROM placement_change_stamp ORDER BY random() LIMIT 1)) '
    'AS id), '
    'advanced AS (UPDATE placement_change_stamp AS shard SET '
    'stamp = shard.stamp + 1, pruned_below = CASE WHEN '
    'mod(shard.stamp + 1, CAST(:prune_every AS BIGINT)) = 0 '
    'AND shard.stamp + 1 > CAST(:keep AS BIGINT) '
    'THEN shard.stamp + 1 - CAST(:keep AS BIGINT) '
    'ELSE shard.pruned_below END '
    'FROM picked WHERE shard.id = picked.id '
    'RETURNING shard.id, shard.stamp, shard.pruned_below), '
    'logged AS (INSERT INTO placement_provider_changes '
    '(shard, stamp, provider_id) SELECT id, stamp, '
    'unnest(CAST(:providers AS INTEGER[])) FROM advanced), '
    'pruned AS (DELETE FROM placement_provider_changes AS log '
    'USING advanced WHERE log.shard = advanced.id '
    'AND log.stamp < advanced.pruned_below '
    'AND mod(advanced.stamp, CAST(:prune_every AS BIGINT)) = 0) '
    'SELECT id, stamp FROM advanced'))
# MySQL has no UPDATE ... RETURNING: the shard is locked and read first,
# one of this node's only (by its auto_increment_offset, see above), from
# a given id on.
_MYSQL_LOCK_SHARD = (
    'SELECT id, stamp FROM placement_change_stamp WHERE id >= %s AND '
    'MOD(id, @@auto_increment_increment) = '
    'MOD(@@auto_increment_offset, @@auto_increment_increment) '
    'ORDER BY id LIMIT 1 FOR UPDATE')
_MYSQL_ADVANCE = 'UPDATE placement_change_stamp SET stamp = %s WHERE id = %s'
_SQLITE_ADVANCE = ('UPDATE placement_change_stamp SET stamp = stamp + 1, '
                   'own_write = 0 WHERE id = 1')
_SQLITE_STAMP = 'SELECT stamp FROM placement_change_stamp WHERE id = 1'


class Position(typing.NamedTuple):
    """Where the log stood when read."""
    total: int      # the shards' stamps summed: one more per change logged
    epoch: str      # the stamp rows' identity (a new one: a new database)
    protocol: int   # how the writers log (see PROTOCOL)
    shards: dict    # shard -> (stamp, pruned_below)

    def summary(self):
        """What ``summary_outside_transaction`` reads: equal for two
        positions of one database exactly when nothing was logged between
        them, since no shard's stamp ever goes down.  Under a protocol
        not this code's, equal to nothing (not even itself): the stamps
        may no longer move with every change."""
        if self.protocol != PROTOCOL:
            return object()
        return self.total, self.epoch


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


def projects_changed(conn, *project_ids):
    """The transaction changed what these projects' consumers hold (their
    allocations, or the project, user or type of one of them)."""
    touch(conn, *(_PROJECTS_BELOW - project for project in project_ids))


def split(changed):
    """(the provider ids, NAMES and EVERYTHING among the log entries
    ``changed``, the ids of the projects among them)."""
    providers, projects = set(), set()
    for entry in changed:
        if entry >= EVERYTHING:
            providers.add(entry)
        else:
            projects.add(_PROJECTS_BELOW - entry)
    return providers, projects


def record(conn):
    """Advance a shard's stamp and log what changed under it; the last
    statements of a write transaction, just before its commit (on
    PostgreSQL one statement, sent with the COMMIT itself)."""
    changed = conn.info.pop(_KEY, None)
    if changed is None:
        changed = {EVERYTHING}
    elif not changed:
        if conn.dialect.name == 'sqlite':
            _mark_own_write(conn, 0)
        return
    if conn.dialect.name == 'postgresql':
        _PG_ADVANCE_AND_LOG.execute(conn, {
            'providers': sorted(changed), 'keep': KEEP,
            'prune_every': PRUNE_EVERY}, commit=True)
        return
    shard, stamp = _advance_and_log(conn, sorted(changed))
    if stamp % PRUNE_EVERY == 0 and stamp > KEEP:
        floor = stamp - KEEP
        conn.execute(_LOG.delete().where(_LOG.c.shard == shard,
                                         _LOG.c.stamp < floor))
        conn.execute(_STAMP.update().where(_STAMP.c.id == shard)
                     .values(pruned_below=floor))


def _advance_and_log(conn, providers):
    """(shard, stamp) on MySQL and SQLite: a shard advanced by one and
    held until commit, with ``providers`` logged under its new stamp.

    A writer waits, for a shard picked at random, only when every shard
    it may use is held by another transaction, or on a MariaDB before
    10.6 (MySQL before 8.0.1), which cannot skip a held row.
    """
    shard, stamp = _advance(conn)
    conn.execute(_LOG.insert(), [
        {'shard': shard, 'stamp': stamp, 'provider_id': provider}
        for provider in providers])
    return shard, stamp


def _advance(conn):
    """``_advance_and_log``'s advance on MySQL and SQLite."""
    dialect = conn.dialect
    if dialect.name == 'mysql':
        row = None
        if _skips_locked(dialect):
            row = conn.exec_driver_sql(_MYSQL_LOCK_SHARD + ' SKIP LOCKED',
                                       (1,)).first()
        if row is None:
            row = conn.exec_driver_sql(
                _MYSQL_LOCK_SHARD, (random.randint(1, SHARDS),)).first()
        if row is None:     # past this node's last shard: its first
            row = conn.exec_driver_sql(_MYSQL_LOCK_SHARD, (1,)).one()
        shard, stamp = row
        conn.exec_driver_sql(_MYSQL_ADVANCE, (stamp + 1, shard))
        return shard, stamp + 1
    conn.exec_driver_sql(_SQLITE_ADVANCE)
    return 1, conn.exec_driver_sql(_SQLITE_STAMP).scalar()


def _skips_locked(dialect):
    """Whether the MySQL server knows ``SKIP LOCKED``."""
    version = tuple(dialect.server_version_info or ())
    if dialect.is_mariadb:
        return version[:2] >= (10, 6)
    return version[:3] >= (8, 0, 1)


# Read by every catch-up of every copy in memory: prepared.
_CURRENT = prepared.Statement(
    sa.select(_STAMP.c.id, _STAMP.c.stamp, _STAMP.c.pruned_below,
              _STAMP.c.epoch, _STAMP.c.protocol).order_by(_STAMP.c.id))


def current(conn):
    """The Position of the log: every shard, read in one statement."""
    rows = _CURRENT.execute(conn).all()
    protocol = _checked(max(row.protocol for row in rows), conn.engine.url)
    return Position(sum(row.stamp for row in rows),
                    min(row.epoch for row in rows), protocol,
                    {row.id: (row.stamp, row.pruned_below) for row in rows})


# Every request answered from memory runs it first: prepared.
_SUMMARY = prepared.Plain(
    'SELECT SUM(stamp), MIN(epoch), MAX(protocol) '
    'FROM placement_change_stamp')


def summary_outside_transaction(db):
    """``current(...).summary()`` in one round trip, where ``db`` can read
    outside a transaction (``Database.peek``); None where it cannot, and
    under a protocol not this code's."""
    row = db.peek(_SUMMARY)
    if row is None or _checked(row[2], db.engine.url) != PROTOCOL:
        return None
    return int(row[0]), row[1]


_protocols_met = set()     # (database URL, protocol) said once


def _checked(protocol, url):
    """``protocol``, read from the stamp rows of the database at ``url``;
    the first time a process meets one not its own there, it says so."""
    if protocol != PROTOCOL and (url, protocol) not in _protocols_met:
        _protocols_met.add((url, protocol))
        LOG.warning(
            'The database\'s change log follows protocol %s, this process '
            'follows %s: it can no longer tell what other processes '
            'change, so it reads the tables again before every answer it '
            'would give from memory (slower, still exact) and its health '
            'check fails. Restart it with the release that migrated the '
            'database.', protocol, PROTOCOL)
    return protocol


def protocol_mismatch(conn):
    """None when the database's change log follows PROTOCOL, else why
    not, in a sentence (for the health check)."""
    protocol = conn.scalar(sa.select(sa.func.max(_STAMP.c.protocol)))
    if protocol == PROTOCOL:
        return None
    return ('change log protocol %s in the database, this process follows '
            '%s: restart it with the release that migrated the database'
            % (protocol, PROTOCOL))


def changed_between(conn, before, after):
    """The log entries (provider ids, NAMES, EVERYTHING, projects: see
    ``split``) after the Position ``before`` up to ``after``; None when
    the log cannot tell: another database, or a shard pruned past
    ``before``."""
    if (before is None or before.epoch != after.epoch
            or after.protocol != PROTOCOL):
        return None
    ranges = []
    for shard, (stamp, pruned_below) in after.shards.items():
        seen = before.shards.get(shard, (0, 0))[0]
        if stamp == seen:
            continue
        if stamp < seen or pruned_below > seen:
            return None
        ranges.append((shard, seen, stamp))
    if not ranges:
        return set()
    if conn.dialect.name == 'postgresql':
        shards, seen, upto = zip(*ranges)
        return {row[0] for row in _PG_LOGGED_BETWEEN.execute(conn, {
            'shards': list(shards), 'seen': list(seen), 'upto': list(upto)})}
    return set(conn.scalars(
        sa.select(_LOG.c.provider_id).distinct().where(sa.or_(*(
            sa.and_(_LOG.c.shard == shard, _LOG.c.stamp > seen,
                    _LOG.c.stamp <= stamp)
            for shard, seen, stamp in ranges)))))


# The entries of some shards, each between two of its stamps, in one
# prepared statement whatever the number of shards: every process reads
# it after every write it learns of.
_PG_LOGGED_BETWEEN = prepared.Statement(sa.text(
    'SELECT DISTINCT log.provider_id FROM placement_provider_changes log '
    'JOIN unnest(CAST(:shards AS INTEGER[]), CAST(:seen AS BIGINT[]), '
    'CAST(:upto AS BIGINT[])) AS wanted(shard, seen, upto) '
    'ON log.shard = wanted.shard AND log.stamp > wanted.seen '
    'AND log.stamp <= wanted.upto'))


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
