"""psycopg2 sessions whose write transactions begin with their first
statement.

psycopg2 opens a transaction by sending BEGIN as a statement of its own,
a round trip before the transaction's first real statement: one of the
eight nova's ``PUT .../traits`` made, and of every write's. A session of
this class, once told ``begin_write``, sends nothing of its own: it is in
autocommit as far as psycopg2 knows, and its next statement goes as
``BEGIN; <statement>``, one message and one round trip (PostgreSQL runs
both and answers with the statement's result). The write's last statement
(the change log's, ``changes.record``) may likewise carry its COMMIT
(``with_commit``). ``commit`` and ``rollback``, which SQLAlchemy calls
when it ends the transaction (and the pool on return), send COMMIT or
ROLLBACK themselves when the transaction is still open on the server,
and put the session back in psycopg2's own transaction handling, which
reads and everything else keep using.

``engine.create_engine`` makes every PostgreSQL connection one of these;
``Database.write`` calls ``begin_write``.
"""

from psycopg2 import extensions

_BEGIN = 'BEGIN; '
_COMMIT = '; COMMIT'


class Cursor(extensions.cursor):
    """Sends the pending BEGIN with the first statement."""

    def execute(self, query, vars=None):
        session = self.connection
        if session.begin_pending:
            session.begin_pending = False
            if self.name is None:
                query = (_BEGIN.encode() if isinstance(query, bytes)
                         else _BEGIN) + query
            else:   # DECLARE ... CURSOR takes no second statement
                session.begin_alone()
        return super().execute(query, vars)

    def executemany(self, query, vars_list):
        session = self.connection
        if session.begin_pending:   # run once per row: BEGIN goes alone
            session.begin_pending = False
            session.begin_alone()
        return super().executemany(query, vars_list)


class Session(extensions.connection):
    """A psycopg2 connection that can begin a write transaction with its
    first statement (see the module's docstring)."""

    # Whether a write transaction has begun and SQLAlchemy has not ended
    # it yet (its COMMIT may have gone already: ``with_commit``), and
    # whether it has sent nothing yet.
    writing = False
    begin_pending = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cursor_factory = Cursor

    def begin_write(self):
        """The next statement begins a transaction that lasts until
        ``commit`` or ``rollback``; nothing is sent now."""
        self.autocommit = True
        self.writing = self.begin_pending = True

    def begin_alone(self):
        with extensions.cursor(self) as cursor:
            cursor.execute('BEGIN')

    def commit(self):
        if not self.writing:
            return super().commit()
        return self._end('COMMIT')

    def rollback(self):
        if not self.writing:
            return super().rollback()
        return self._end('ROLLBACK')

    def _end(self, statement):
        self.writing = self.begin_pending = False
        # Idle: nothing was sent, or COMMIT went with the last statement
        # (or failed there, which ended the transaction too).
        try:
            if self.info.transaction_status != (
                    extensions.TRANSACTION_STATUS_IDLE):
                with extensions.cursor(self) as cursor:
                    cursor.execute(statement)
        finally:
            # A COMMIT that failed ended the transaction too; a session
            # that lost its server is discarded by SQLAlchemy.
            if not self.closed and self.info.transaction_status == (
                    extensions.TRANSACTION_STATUS_IDLE):
                self.autocommit = False


def with_commit(conn, sql):
    """``sql`` (one statement, the last of the write transaction on
    ``conn``, a SQLAlchemy connection) to be sent with the COMMIT that
    ends it, in one message, where the session can; else as it is, to be
    committed as usual. Its result is then the COMMIT's: no rows."""
    driver = conn.connection.driver_connection
    if isinstance(driver, Session) and driver.writing:
        return sql + _COMMIT
    return sql


def connect_args():
    """What ``create_engine`` gives psycopg2's ``connect``."""
    return {'connection_factory': Session}

