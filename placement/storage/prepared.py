"""Statements planned once per connection: PostgreSQL's prepared statements.

PostgreSQL plans every statement it is sent afresh, and for the reads
nova-compute sends each minute the plan cost more than the work: a
provider's allocations took 1,320 us of PostgreSQL CPU a request, of
which 1,120 us was planning six joins; prepared, 200 us (one backend,
1,000 providers with 20 servers each).  So the statements that every
compute node or conductor runs all day are built once, as SQLAlchemy
statements, and on PostgreSQL each connection prepares them the first
time it runs them and then only executes them.  Other databases run them
as they are.

A connection pooler in transaction mode (pgbouncer's) hands each
transaction whichever server session is free, where a statement prepared
on another is unknown.  The first time a prepared statement turns out to
be missing, this process stops preparing on that engine, says so in the
log, and the transaction is retried as every transient error is
(``engine.transient_cause``).
"""

import collections
import dataclasses
import functools
import itertools
import logging
import re
import weakref

from sqlalchemy import exc as sa_exc

from placement import tracing

LOG = logging.getLogger(__name__)

# PostgreSQL's SQLSTATEs for a prepared statement that is not there
# (invalid_sql_statement_name) and for one prepared twice
# (duplicate_prepared_statement): both mean the session is not the one
# that prepared it.
LOST = frozenset(('26000', '42P05'))

_PLACEHOLDER = re.compile(r'%\((\w+)\)s')
_NAMES = itertools.count(1)
# The engines this process has stopped preparing on.
_REFUSED = weakref.WeakSet()


class Statement:
    """A statement built once, run prepared where that helps."""

    def __init__(self, statement):
        self.statement = statement
        self.name = 'placement_%d' % next(_NAMES)
        self._postgresql = None

    def execute(self, conn, params=None, commit=False, defer=False):
        """The statement's rows with ``params`` bound, on ``conn``: a
        result with ``keys()``, ``all()``, ``first()``, ``one()``,
        iteration and ``rowcount`` (what an UPDATE or DELETE changed),
        its rows tuples with the columns' labels as attributes.

        ``commit``: the statement is its write transaction's last, and
        goes with the COMMIT where the session can send both in one
        message (``postgresql.with_commit``; it then reads no rows).

        ``defer``: the caller reads no result, so on PostgreSQL the
        statement may go with its transaction's next one
        (``postgresql.defer``; then None is returned)."""
        params = params or {}
        if (conn.dialect.name != 'postgresql' or conn.engine in _REFUSED
                or conn.engine.echo):
            return conn.execute(self.statement, params)
        compiled = self._postgresql or self._compile(conn)
        args = compiled.bind(params)
        prepared = _prepared_on(conn.connection)
        if self.name not in prepared:
            _run(conn, compiled.prepare, None)
            prepared.add(self.name)
        sql = compiled.execute
        if commit or defer:
            from placement.storage import postgresql    # imported by now
        if commit:
            sql = postgresql.with_commit(conn, sql)
        elif defer and postgresql.defer(conn, sql, args):
            return None
        return _run(conn, sql, args)

    def execute_bare(self, engine, pooled, cursor, params):
        """The statement's rows with ``params`` bound, run on ``cursor``
        of ``pooled`` (a pool's connection of ``engine`` on PostgreSQL,
        in autocommit: ``Database.peek_rows``), past SQLAlchemy's
        connection; None where it is not run prepared (the caller reads
        it the usual way).  A driver error is raised, a lost prepared
        statement stopping preparing first, as in ``_run``."""
        if engine in _REFUSED or engine.echo:
            return None
        compiled = self._postgresql or self._compile(engine)
        args = compiled.bind(params)
        _prepared_and_run(engine, pooled, cursor, self.name, compiled.prepare,
                          compiled.execute, args, (compiled.execute, args))
        return _rows(cursor, compiled.execute)

    def _compile(self, conn):
        """``conn``: a connection or an engine, for its dialect."""
        compiled = self.statement.compile(dialect=conn.dialect)
        names = []

        def placeholder(match):
            if match.group(1) not in names:
                names.append(match.group(1))
            return '$%d' % (names.index(match.group(1)) + 1)

        # Sent without parameters, so the driver leaves '%' alone.
        text = _PLACEHOLDER.sub(placeholder, str(compiled)).replace('%%', '%')
        self._postgresql = _Compiled(
            'PREPARE %s AS %s' % (self.name, text),
            'EXECUTE %s%s' % (self.name, ' (%s)' % ', '.join(
                ['%s'] * len(names)) if names else ''),
            names, dict(compiled.params))
        return self._postgresql


class Plain:
    """A statement without parameters run on a bare driver connection
    (``Database.peek``, past SQLAlchemy's connection), prepared there
    the same way."""

    def __init__(self, sql):
        self.sql = sql
        self.name = 'placement_%d' % next(_NAMES)
        self._prepare = 'PREPARE %s AS %s' % (self.name, sql)
        self._execute = 'EXECUTE %s' % self.name

    def execute(self, engine, pooled, cursor):
        """Run it on ``cursor`` of ``pooled`` (a pool's connection of
        ``engine``); a lost prepared statement stops preparing, as in
        ``_run``, and is raised for the caller to give up the session."""
        if engine in _REFUSED:
            cursor.execute(self.sql)
            return
        _prepared_and_run(engine, pooled, cursor, self.name, self._prepare,
                          self._execute, None, (self.sql,))


def _prepared_and_run(engine, pooled, cursor, name, prepare, execute, args,
                      traced):
    """``execute`` with ``args`` on ``cursor`` of ``pooled`` (a pool's
    connection of ``engine``, past SQLAlchemy's), ``prepare`` sent first
    where the session has not prepared ``name``; traced as
    ``tracing.sql(*traced)``.  A driver error is raised, a lost prepared
    statement stopping preparing first, as in ``_run``."""
    prepared = _prepared_on(pooled)
    try:
        if name not in prepared:
            cursor.execute(prepare)
            prepared.add(name)
        with tracing.sql(*traced):
            cursor.execute(execute, args)
    except engine.dialect.loaded_dbapi.Error as error:
        _stop_if_lost(engine, error)
        raise


def _prepared_on(pooled):
    """The names prepared on the session of ``pooled`` (a pool's
    connection), kept in its record's ``info``, which the pool clears
    when it connects anew."""
    return pooled.info.setdefault('placement_prepared', set())


@dataclasses.dataclass(frozen=True)
class _Compiled:
    """A statement's PREPARE and EXECUTE, the names of its parameters in
    ``$n`` order, and the values the statement binds itself."""
    prepare: str
    execute: str
    names: list
    defaults: dict

    def bind(self, params):
        """The EXECUTE's values: ``params``, else the statement's own."""
        return tuple(params[name] if name in params
                     else self.defaults[name] for name in self.names)


class Rows:
    """What ``Statement.execute`` read on PostgreSQL, fetched whole: the
    rows as tuples with the columns' labels as attributes, made when
    asked for (``plain`` gives the bare ones, for a reader that only
    zips them with ``keys()``)."""

    def __init__(self, keys, raw, rowcount):
        self._keys = keys
        self.raw = raw
        self.rowcount = rowcount

    def keys(self):
        return self._keys

    def all(self):
        row_type = _row_type(self._keys)
        return [row_type._make(row) for row in self.raw]

    def first(self):
        return self.all()[0] if self.raw else None

    def one(self):
        if len(self.raw) != 1:
            raise sa_exc.NoResultFound(
                'Expected one row, read %d.' % len(self.raw))
        return self.all()[0]

    def __iter__(self):
        return iter(self.all())


def plain(result):
    """The rows of ``result`` (``Rows`` or SQLAlchemy's result) as they
    index and zip, without naming their columns."""
    return result.raw if isinstance(result, Rows) else result.all()


@functools.lru_cache(maxsize=None)
def _row_type(keys):
    return collections.namedtuple('Row', keys, rename=True)


# The column labels of each EXECUTE's rows, read from the first result
# (naming them from each result's description cost 6 % of a cheap read).
_KEYS = {}


def _run(conn, sql, args):
    """``sql`` on ``conn``'s driver connection, through none of
    SQLAlchemy's per-statement machinery (events, result metadata: 60 us
    a request in a profile of a provider's allocations).  A driver error
    is raised as SQLAlchemy's would be, the connection invalidated when
    the error says it is gone, so ``Database.run`` retries it the same
    way; a lost prepared statement also stops preparing."""
    driver = conn.connection.driver_connection
    cursor = driver.cursor()
    try:
        with tracing.sql(sql, args):
            cursor.execute(sql, args)
        return _rows(cursor, sql)
    except conn.dialect.loaded_dbapi.Error as error:
        invalidated = conn.dialect.is_disconnect(error, driver, cursor)
        if invalidated:
            conn.invalidate()
        _stop_if_lost(conn.engine, error)
        raise sa_exc.DBAPIError.instance(
            sql, args, error, conn.dialect.loaded_dbapi.Error,
            connection_invalidated=invalidated,
            dialect=conn.dialect) from error
    finally:
        if not cursor.closed:
            cursor.close()


def _rows(cursor, sql):
    """What ``cursor`` read for ``sql``, as ``Rows``."""
    description = cursor.description
    if description is None:
        return Rows((), [], cursor.rowcount)
    keys = _KEYS.get(sql)
    if keys is None:
        keys = _KEYS[sql] = tuple(column[0] for column in description)
    return Rows(keys, cursor.fetchall(), cursor.rowcount)


def _stop_if_lost(engine, error):
    """Stop preparing on ``engine`` if ``error`` says a prepared
    statement was not in its session."""
    if getattr(error, 'pgcode', None) in LOST:
        refuse(engine)


def refuse(engine):
    """Stop preparing statements on ``engine`` in this process."""
    if engine not in _REFUSED:
        _REFUSED.add(engine)
        LOG.warning('A prepared statement was missing from its database '
                    'session (a connection pooler in transaction mode?): '
                    'statements are no longer prepared by this process.')
