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

import itertools
import logging
import re
import weakref

from sqlalchemy import exc as sa_exc

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
_AS_WRITTEN = {'no_parameters': True}


class Statement:
    """A statement built once, run prepared where that helps."""

    def __init__(self, statement):
        self.statement = statement
        self.name = 'placement_%d' % next(_NAMES)
        self._postgresql = None
        self._execute = None

    def execute(self, conn, params=None):
        """The result of the statement with ``params`` bound, on ``conn``."""
        params = params or {}
        if conn.dialect.name != 'postgresql' or conn.engine in _REFUSED:
            return conn.execute(self.statement, params)
        prepare, names, defaults = self._postgresql or self._compile(conn)
        prepared = conn.connection.info.setdefault('placement_prepared',
                                                   set())
        try:
            if self.name not in prepared:
                conn.exec_driver_sql(prepare, execution_options=_AS_WRITTEN)
                prepared.add(self.name)
            return conn.exec_driver_sql(
                self._execute, tuple(
                    params[name] if name in params else defaults[name]
                    for name in names))
        except sa_exc.DBAPIError as error:
            if getattr(error.orig, 'pgcode', None) in LOST:
                refuse(conn.engine)
            raise

    def _compile(self, conn):
        """(the PREPARE statement, the parameter names in $n order, the
        values bound in the statement itself)."""
        compiled = self.statement.compile(dialect=conn.dialect)
        names = []

        def placeholder(match):
            if match.group(1) not in names:
                names.append(match.group(1))
            return '$%d' % (names.index(match.group(1)) + 1)

        # Sent without parameters, so the driver leaves '%' alone.
        text = _PLACEHOLDER.sub(placeholder, str(compiled)).replace('%%', '%')
        self._execute = 'EXECUTE %s (%s)' % (
            self.name, ', '.join(['%s'] * len(names)))
        self._postgresql = ('PREPARE %s AS %s' % (self.name, text), names,
                            dict(compiled.params))
        return self._postgresql


def refuse(engine):
    """Stop preparing statements on ``engine`` in this process."""
    if engine not in _REFUSED:
        _REFUSED.add(engine)
        LOG.warning('A prepared statement was missing from its database '
                    'session (a connection pooler in transaction mode?): '
                    'statements are no longer prepared by this process.')
