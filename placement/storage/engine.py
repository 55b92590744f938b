"""Engines, transactions and retries.

Every request runs its storage work inside ``Database.run``: one
transaction, committed on success and rolled back on any exception, so a
failed write leaves the database exactly as before.  (Reads on
PostgreSQL run outside one: at READ COMMITTED each statement reads a
snapshot of its own either way, and it saves two round trips.)
Transient failures (a connection the server dropped, a PostgreSQL
serialization failure or deadlock, MySQL's deadlock or lock wait
timeout, a Galera certification failure, SQLite's busy lock) roll back
and run the whole function again, which is why storage functions must be
free of side effects outside the database.  After the last attempt a
database out of reach is a 503, and contention that never cleared a 409
the client may retry; neither a 500.
"""

import collections
import contextlib
import logging
import os
import random
import threading
import time

from oslo_config import cfg
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from placement import metrics
from placement.storage import changes
from placement.storage import exceptions
from placement.storage import prepared

LOG = logging.getLogger(__name__)

# PostgreSQL SQLSTATEs worth a fresh attempt, by cause: 57P0x are a server
# shutting down (fast or crashed) or not yet accepting connections, and
# the last a prepared statement another session holds (``prepared``: the
# attempt after it prepares nothing).
_PG_CAUSES = {'40001': 'serialization_failure', '40P01': 'deadlock',
              '57P01': 'connection_lost', '57P02': 'connection_lost',
              '57P03': 'cannot_connect',
              **dict.fromkeys(prepared.LOST, 'prepared_statement_lost')}
# What libpq says when it cannot reach the server at all ("connection to
# server at ... failed: <why>" covers every way a connection attempt ends,
# a reset by a server shutting down included) ...
_PG_CANNOT_CONNECT = ('connection to server at', 'connection to server on',
                      'connection refused', 'could not connect',
                      'could not translate host name', 'timeout expired',
                      'no route to host', 'the database system is')
# ... and when an established connection breaks.
_PG_CONNECTION_LOST = ('server closed the connection',
                       'connection already closed', 'ssl syscall error',
                       'could not receive data from server',
                       'could not send data to server',
                       'connection reset by peer')
# MySQL/MariaDB error numbers worth one: deadlock (which is also how
# Galera reports a write set that lost certification to another node's),
# lock wait timeout, server gone away, connection lost (mid-query or while
# connecting), and a Galera node that is not (yet, or any more) part of
# the primary component.
_MYSQL_CAUSES = {1213: 'deadlock', 1205: 'lock_wait_timeout',
                 2006: 'connection_lost', 2013: 'connection_lost',
                 2003: 'cannot_connect', 1047: 'galera_not_ready'}
# Causes that mean the database is out of reach rather than busy: once
# the attempts are spent, the request is answered 503.
_UNREACHABLE = frozenset(('connection_lost', 'cannot_connect',
                          'galera_not_ready'))
# Causes that mean other transactions won the race each time: once the
# attempts are spent, the request is a 409 the client may retry.
_CONTENTION = frozenset(('deadlock', 'lock_wait_timeout',
                         'serialization_failure', 'sqlite_busy'))
_ATTEMPTS = 5
_CHAIN_DEPTH = 4
# What marks a connection as this service's for the triggers that log
# foreign writes (migration 0004; SQLite: see changes.begin).
_PG_OWN_WRITER = "SET SESSION placement.writer = 'on'"
_MYSQL_OWN_WRITER = 'SET @placement_writer = 1'


class NoConnection(cfg.RequiredOptError):
    """A configuration file was read, and it names no database.  Upstream
    refuses to start without ``[placement_database] connection`` too;
    falling back to a private SQLite file would leave each API host
    behind a load balancer with a database of its own, and nothing
    saying so."""

    def __init__(self, conf):
        super().__init__('connection', cfg.OptGroup('placement_database'))
        self.files = list(conf.config_file or ()) + (
            [conf.config_dir] if conf.config_dir else [])

    def __str__(self):
        return ('No [placement_database] connection in %s: the database '
                'must be named (connection = an SQLAlchemy URL, such as '
                'postgresql+psycopg2://placement:secret@dbhost/placement) '
                'whenever a configuration file is read. Only with no '
                'configuration file at all does the service run on an '
                'embedded SQLite database.' % ', '.join(self.files))


def check_connection(conf):
    """NoConnection when a configuration file was read and it names no
    database."""
    if not conf.placement_database.connection and (
            conf.config_file or conf.config_dir):
        raise NoConnection(conf)


def build_url(conf):
    """The SQLAlchemy URL from [placement_database]; the embedded one
    only when no configuration file was read (``check_connection``)."""
    url = conf.placement_database.connection
    if not url:
        check_connection(conf)
        state_path = conf.state_path
        os.makedirs(state_path, exist_ok=True)
        url = 'sqlite:///%s' % os.path.join(state_path, 'placement.sqlite')
    params = conf.placement_database.connection_parameters
    if params:
        url += ('&' if '?' in url else '?') + params
    return url


# The driver a URL naming none gets, by backend.  SQLAlchemy 2.1 made
# psycopg (3) the default for postgresql://, which upstream deployments
# (SQLAlchemy 2.0) write meaning psycopg2, the driver installed here.
_DEFAULT_DRIVERS = {'postgresql': 'postgresql+psycopg2'}


def parse_url(url):
    """The SQLAlchemy URL ``url`` names, with this service's driver where
    it names none."""
    url = sa.engine.make_url(url)
    return url.set(drivername=_DEFAULT_DRIVERS.get(url.drivername,
                                                   url.drivername))


def transient_cause(error):
    """Why ``error`` is worth retrying the transaction for (a short name
    for logs and metrics), or None when it is not.

    The errors it was raised while handling count too: on MySQL a deadlock
    (or a Galera abort) inside a savepoint ends the whole transaction, so
    the ROLLBACK TO SAVEPOINT that follows fails with "SAVEPOINT does not
    exist", and that is the error that arrives here.
    """
    for _ in range(_CHAIN_DEPTH):
        if error is None:
            return None
        cause = _direct_cause(error)
        if cause is not None:
            return cause
        error = error.__cause__ or error.__context__
    return None


def _direct_cause(error):
    if not isinstance(error, sa_exc.DBAPIError):
        return None
    if error.connection_invalidated:
        return 'connection_lost'
    orig = error.orig
    pgcode = getattr(orig, 'pgcode', None)
    if pgcode in _PG_CAUSES:
        return _PG_CAUSES[pgcode]
    number = _mysql_error_number(orig)
    if number in _MYSQL_CAUSES:
        return _MYSQL_CAUSES[number]
    message = str(orig).lower()
    if 'database is locked' in message:
        return 'sqlite_busy'
    if any(text in message for text in _PG_CANNOT_CONNECT):
        return 'cannot_connect'
    if any(text in message for text in _PG_CONNECTION_LOST):
        return 'connection_lost'
    return None


def _transient(error):
    """True if ``error`` is worth retrying the transaction for."""
    return transient_cause(error) is not None


def _mysql_error_number(orig):
    """The MySQL error number of a PyMySQL or mysqlclient error (their
    first argument), or None."""
    args = getattr(orig, 'args', ())
    if type(orig).__module__.startswith(('pymysql', 'MySQLdb')) and (
            args and isinstance(args[0], int)):
        return args[0]
    return None


def _configure_sqlite(engine, synchronous):
    """Foreign keys on, WAL, and explicit BEGIN so writers lock up front.

    pysqlite's own transaction handling starts a deferred transaction at
    the first write, which lets two writers each hold a read lock and then
    deadlock on upgrade ("database is locked").  Beginning writes with
    BEGIN IMMEDIATE serialises writers at the start instead, and the busy
    timeout makes the second one wait rather than fail.
    """
    @event.listens_for(engine, 'connect')
    def on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA foreign_keys = ON')
        cursor.execute('PRAGMA busy_timeout = 30000')
        if engine.url.database not in (None, '', ':memory:'):
            cursor.execute('PRAGMA journal_mode = WAL')
        cursor.execute('PRAGMA synchronous = %s'
                       % ('NORMAL' if synchronous else 'OFF'))
        cursor.close()

    @event.listens_for(engine, 'begin')
    def on_begin(connection):
        write = connection.get_execution_options().get('placement_write')
        connection.exec_driver_sql('BEGIN IMMEDIATE' if write else 'BEGIN')


def _configure_postgresql(engine):
    """Mark every new connection as this service's.

    The triggers of migration 0004 log writes by anything else for the
    in-memory candidate state; a session setting made once per connection
    tells them which writes are ours, at no cost per request.  Committed,
    so that the pool's rollback on return does not undo it.
    """
    @event.listens_for(engine, 'connect')
    def on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute(_PG_OWN_WRITER)
        cursor.close()
        dbapi_connection.commit()


def _configure_mysql(engine, sql_mode, wsrep_sync_wait):
    """Session settings every new MySQL connection gets: the mark the
    triggers of migration 0004 know this service's writes by (a user
    variable, which a rollback leaves alone), and the configured ones."""
    statements = [(_MYSQL_OWN_WRITER, ())]
    if sql_mode:
        statements.append(("SET SESSION sql_mode = %s", (sql_mode,)))
    if wsrep_sync_wait is not None:
        statements.append(("SET SESSION wsrep_sync_wait = %s",
                           (wsrep_sync_wait,)))

    @event.listens_for(engine, 'connect')
    def on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        for statement, params in statements:
            cursor.execute(statement, params)
        cursor.close()


def create_engine(url, *, pool_size=5, max_overflow=50, pool_timeout=30,
                  recycle=3600, sqlite_synchronous=True, echo=False,
                  mysql_sql_mode='TRADITIONAL', mysql_wsrep_sync_wait=None):
    """An Engine tuned for its backend.

    No pre-ping on checkout: a connection the server dropped fails on the
    transaction's first statement, before anything was written, and
    ``Database.run`` retries on a fresh one; pinging first would cost a
    round trip on every request to save that rare retry.
    """
    url = parse_url(url)
    if url.get_backend_name() == 'sqlite':
        engine = sa.create_engine(url, echo=echo)
        _configure_sqlite(engine, sqlite_synchronous)
        return engine
    # A server that does not answer at all (a host gone, a partition) must
    # not hold a request past the pool timeout over all its attempts,
    # unless the URL says otherwise.
    connect_args = {}
    if 'connect_timeout' not in url.query:
        connect_args['connect_timeout'] = max(1, pool_timeout // _ATTEMPTS)
    if url.get_backend_name() == 'postgresql':
        # Imported only here: psycopg2 is a worker's megabyte on MySQL.
        from placement.storage import postgresql
        connect_args.update(postgresql.connect_args())
    options = {'connect_args': connect_args}
    if url.get_backend_name() == 'mysql':
        # InnoDB's default, REPEATABLE READ, reads from a snapshot taken at
        # the transaction's first read: a row another writer committed
        # since (the provider that made our INSERT a duplicate, a newer
        # generation) stays invisible to it.  READ COMMITTED is what
        # PostgreSQL gives and what the compare-and-swap writes expect.
        options['isolation_level'] = 'READ COMMITTED'
    engine = sa.create_engine(
        url, echo=echo, pool_size=pool_size,
        max_overflow=max_overflow, pool_timeout=pool_timeout,
        pool_recycle=recycle, **options)
    if url.get_backend_name() == 'mysql':
        _configure_mysql(engine, mysql_sql_mode, mysql_wsrep_sync_wait)
    else:
        _configure_postgresql(engine)
    return engine


@contextlib.contextmanager
def _autocommit(driver):
    """psycopg2's ``driver`` connection in autocommit for the block: each
    statement its own transaction, with no BEGIN or COMMIT sent.  Set and
    reset locally (no round trip) since no transaction is open on either
    side of the block."""
    driver.autocommit = True
    try:
        yield
    finally:
        if not driver.closed:
            driver.autocommit = False


PEEK_SESSIONS = 2
_FAILED = object()


def _first_row(engine, pooled, statement):
    """``statement`` (a ``prepared.Plain``)'s first row on ``pooled``."""
    cursor = pooled.dbapi_connection.cursor()
    statement.execute(engine, pooled, cursor)
    row = cursor.fetchone()
    cursor.close()
    return row


def _all_rows(engine, pooled, statement, params):
    """``statement`` (a ``prepared.Statement``)'s rows on ``pooled``, or
    None where it is not run there."""
    cursor = pooled.dbapi_connection.cursor()
    rows = statement.execute_bare(engine, pooled, cursor, params)
    cursor.close()
    return rows


def _attempt(engine, pooled, run, *args):
    """``run(engine, pooled, *args)``; _FAILED on a driver error (the
    caller gives the session up)."""
    try:
        return run(engine, pooled, *args)
    except engine.dialect.loaded_dbapi.Error:
        return _FAILED


class _PeekSessions:
    """Up to PEEK_SESSIONS connections of a process kept for ``peek``,
    outside the pool and in autocommit for good.

    Every answer from memory first asks where the change log stands;
    through the pool that question cost twice its statement's CPU (the
    checkout, the reset on return, autocommit switched on and off: 70 us
    against 35, measured).  A thread takes a free one, or, when all are
    taken, a pooled connection as before: the process holds at most
    PEEK_SESSIONS more server sessions than its pool.  Each belongs to the
    process that opened it: a forked child forgets its parent's (the
    driver leaves open a connection another process opened when it frees
    it)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._free = []
        self._opened = 0
        self._closing = 0       # sessions taken before ``close``: close

    def take(self, engine):
        """A free session (a detached pooled connection), a new one while
        fewer than PEEK_SESSIONS are open, or None."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._free, self._opened = os.getpid(), [], 0
                self._closing = 0
            if self._free:
                return self._free.pop()
            if self._opened >= PEEK_SESSIONS:
                return None
            self._opened += 1
        try:
            pooled = engine.raw_connection()
            pooled.detach()
            pooled.dbapi_connection.autocommit = True
            return pooled
        except (sa_exc.SQLAlchemyError,
                engine.dialect.loaded_dbapi.Error):
            with self._lock:
                self._opened -= 1
            return None

    def give(self, pooled, healthy):
        """``pooled`` back after use: kept if ``healthy``, else closed."""
        with self._lock:
            if self._pid != os.getpid():
                return      # the parent's, forked while in use: not ours
            if healthy and not self._closing:
                self._free.append(pooled)
                return
            self._opened -= 1
            if self._closing:
                self._closing -= 1
        _close_detached(pooled)

    def close(self):
        """Close the free sessions; those in use close on their return."""
        with self._lock:
            if self._pid != os.getpid():
                return
            free, self._free = self._free, []
            self._opened -= len(free)
            self._closing = self._opened
        for pooled in free:
            _close_detached(pooled)


def _close_detached(pooled):
    connection = pooled.dbapi_connection
    if connection is not None and not connection.closed:
        connection.close()


def _no_connection_free():
    """What a request gets when the pool had no connection for it within
    its timeout."""
    return exceptions.DatabaseUnavailable(
        'No database connection became free in time.')


# Held by database work in a thread of a process that forks meanwhile
# (``Database.between_forks``); a fork made with os.fork waits for it.
_NO_FORK = threading.Lock()
os.register_at_fork(before=_NO_FORK.acquire,
                    after_in_parent=_NO_FORK.release,
                    after_in_child=_NO_FORK.release)


class Database:
    """One engine and the transaction discipline around it.

    Its connection pool belongs to one process.  A WSGI server that loads
    the application before forking its workers (uwsgi without
    ``lazy-apps``, gunicorn ``--preload``) hands each worker a copy of the
    parent's pool: connections opened there (the schema check, the
    standard names' sync) would then be one server session used by two
    processes, each reading the other's answers.  So the first use of the
    engine in a new process replaces the pool with an empty one, leaving
    the parent's connections to the parent.  The process id is compared at
    each use rather than in an ``os.register_at_fork`` hook, which uwsgi's
    own fork from C never calls.
    """

    def __init__(self, engine):
        self._engine = engine
        self._pid = os.getpid()
        # What reads outside a transaction (``_session_mode``, ``peek``).
        self._postgresql = engine.url.get_backend_name() == 'postgresql'
        self._peeking = _PeekSessions()

    @property
    def engine(self):
        """The engine, with a pool of this process's own."""
        if self._pid != os.getpid():
            # Replaced before the pid is noted, so that no thread of this
            # process can take a connection from the inherited pool.  Two
            # threads racing here each make a new pool; both are empty.
            self._engine.dispose(close=False)
            self._pid = os.getpid()
        return self._engine

    @classmethod
    def from_conf(cls, conf, url=None):
        """An engine as [placement_database] configures it, on ``url``
        instead of the configured one when given (a test fixture's own
        database)."""
        group = conf.placement_database
        return cls(create_engine(
            url or build_url(conf),
            pool_size=group.max_pool_size,
            max_overflow=group.max_overflow,
            pool_timeout=group.pool_timeout,
            recycle=group.connection_recycle_time,
            sqlite_synchronous=group.sqlite_synchronous,
            echo=group.connection_debug >= 50,
            mysql_sql_mode=group.mysql_sql_mode,
            mysql_wsrep_sync_wait=group.mysql_wsrep_sync_wait))

    @property
    def backend(self):
        return self.engine.url.get_backend_name()

    def run(self, fn, *args, write=False, **kwargs):
        """Call ``fn(conn, *args, **kwargs)`` in one transaction.

        The transaction is retried from the start on transient errors,
        up to ``_ATTEMPTS`` times for each kind of cause: a request that
        spent its attempts waiting for the database to come back still has
        all of them against contention once it is back (its first attempt
        then meets every held-back writer at once), and the reverse.  A
        database still out of reach after the last attempt, or a pool
        with no connection free within its timeout, is
        ``exceptions.DatabaseUnavailable``; a transaction that lost to
        concurrent ones each time is ``exceptions.ConcurrentUpdate``.
        """
        attempts = collections.Counter()
        while True:
            try:
                with self.engine.connect() as conn:
                    if write:
                        conn = conn.execution_options(placement_write=True)
                    with self._session_mode(conn, write):
                        if write:
                            changes.begin(conn)
                        result = fn(conn, *args, **kwargs)
                        if write:
                            changes.record(conn)
                        return result
            except sa_exc.TimeoutError as error:
                raise _no_connection_free() from error
            except sa_exc.DBAPIError as error:
                cause = transient_cause(error)
                kind = ('unreachable' if cause in _UNREACHABLE else
                        'contention' if cause in _CONTENTION else cause)
                attempts[kind] += 1
                attempt = attempts[kind]
                if attempt == _ATTEMPTS and cause in _UNREACHABLE:
                    LOG.error('Database unreachable: %s', error.orig)
                    raise exceptions.DatabaseUnavailable(
                        'The database cannot be reached.') from error
                if attempt == _ATTEMPTS and cause in _CONTENTION:
                    LOG.warning('Transaction lost to concurrent ones %d '
                                'times: %s', attempt, error.orig)
                    raise exceptions.ConcurrentUpdate(
                        'Another thread concurrently updated the data. '
                        'Please retry your update') from error
                if attempt == _ATTEMPTS or cause is None:
                    raise
                metrics.count_retry(cause)
                LOG.info('Retrying transaction after transient error '
                         '(attempt %d): %s', attempt, error.orig)
                # Jittered, so that the transactions that collided do not
                # start again in step and collide once more.
                time.sleep(0.01 * 2 ** attempt * random.uniform(0.5, 1.5))

    def _session_mode(self, conn, write):
        """The transaction ``fn`` runs in: SQLAlchemy's, except for a read
        on PostgreSQL, which runs in autocommit, switched by the driver
        (SQLAlchemy's isolation level costs a round trip each way).  At
        READ COMMITTED each statement has a snapshot of its own, in a
        transaction or not, so a read loses nothing outside one and saves
        BEGIN's and COMMIT's round trips, and SQLAlchemy's bookkeeping of a
        transaction that sends nothing (a tenth of a cheap read's CPU).
        A write there begins with its first statement
        (``postgresql.Session``), saving BEGIN's round trip.
        """
        if not self._postgresql:
            return conn.begin()
        driver = conn.connection.driver_connection
        if not write:
            return _autocommit(driver)
        from placement.storage import postgresql   # imported by now
        if isinstance(driver, postgresql.Session):
            driver.begin_write()
        return conn.begin()

    def read(self, fn, *args, **kwargs):
        return self.run(fn, *args, write=False, **kwargs)

    def peek(self, statement):
        """The first row of ``statement`` (a ``prepared.Plain`` SELECT),
        read outside any transaction, or None when it was not read that
        way.

        On PostgreSQL the connection is switched to autocommit for the one
        statement: a single round trip, where a transaction costs three
        (BEGIN, the statement, COMMIT) and SQLAlchemy's work around them;
        it is what every candidates request does first, and it halved
        that check (250 to 130 us).  Elsewhere it gains nothing (MySQL's
        driver spends a round trip on each switch), and on any error the
        caller falls back to ``read``, which retries and reports errors as
        every read does.
        """
        return self._outside_transaction(_first_row, statement)

    def peek_rows(self, statement, params):
        """The rows of ``statement`` (a ``prepared.Statement`` SELECT)
        with ``params``, read as ``peek`` reads, or None when they were
        not read that way (the caller then ``read``s them).

        A read that is one statement, asked all day (a consumer's
        allocations, by nova on every server's every move), then costs
        neither the pool's checkout and return (the reset's round trip
        is skipped on PostgreSQL, not its CPU) nor SQLAlchemy's
        connection: a third of that read's CPU under uwsgi, measured.
        It is what ``read`` does on PostgreSQL (a read runs in autocommit
        there, ``_session_mode``), minus the retries, left to ``read``.
        """
        return self._outside_transaction(_all_rows, statement, params)

    def _outside_transaction(self, run, *args):
        """``run(engine, pooled, *args)`` on a peek session or, when all
        are taken, a pooled connection in autocommit; None on any other
        database than PostgreSQL or on a driver error."""
        if not self._postgresql:
            return None
        engine = self.engine
        own = self._peeking.take(engine)
        if own is not None:
            result = _attempt(engine, own, run, *args)
            self._peeking.give(own, healthy=result is not _FAILED)
            return None if result is _FAILED else result
        try:
            pooled = engine.raw_connection()
        except sa_exc.TimeoutError as error:
            raise _no_connection_free() from error
        except sa_exc.DBAPIError:
            return None
        try:
            with _autocommit(pooled.driver_connection):
                result = _attempt(engine, pooled, run, *args)
            if result is _FAILED:
                pooled.invalidate()
                return None
            return result
        finally:
            pooled.close()

    def write(self, fn, *args, **kwargs):
        return self.run(fn, *args, write=True, **kwargs)

    def wait_until_reachable(self, attempts, interval):
        """Connect, trying ``attempts`` times (-1: for ever) ``interval``
        seconds apart while the database cannot be reached, as upstream's
        commands do with ``[placement_database] max_retries`` and
        ``retry_interval``: a deployment tool may run them while the
        database is still starting.  The last failure is raised."""
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.engine.connect() as conn:
                    conn.exec_driver_sql('SELECT 1')
                return
            except sa_exc.DBAPIError as error:
                if (transient_cause(error) not in _UNREACHABLE
                        or attempt == attempts):
                    raise
                LOG.warning('Database not reachable (attempt %d of %s), '
                            'again in %ss: %s', attempt,
                            'unlimited' if attempts < 0 else attempts,
                            interval, error.orig)
                time.sleep(interval)

    def dispose(self):
        self._peeking.close()
        self.engine.dispose()

    @contextlib.contextmanager
    def between_forks(self):
        """A block of database work in a thread of a process that forks
        while it runs (placement-api's parent refreshes its gauges while
        it starts workers): no fork is made during the block, and the
        block ends by closing its connections.

        A child forked while a connection was in use frees its copy of
        the thread's objects and so closes that connection, and may copy
        a lock the driver held at that instant.  On SQLite that broke the
        database file's locks: writes one worker had committed were lost
        to the other worker and then to everyone (2 tests of 130 under
        load), or a worker hung at its first statement.  The fork hook
        works wherever os.fork does the fork (``placement-api``; uwsgi
        forks in C, but it runs no such threads).
        """
        with _NO_FORK:
            try:
                yield
            finally:
                self.dispose()
