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
(``with_commit``), and a statement whose result the write does not read
may wait to go with the next one (``defer``). ``commit`` and
``rollback``, which SQLAlchemy calls when it ends the transaction (and
the pool on return), send COMMIT or ROLLBACK themselves when the
transaction is still open on the server, and put the session back in
psycopg2's own transaction handling, which reads and everything else
keep using.

What a statement left for later relies on is enforced here, not only
said: a deferred statement goes with the next statement or with the
COMMIT that ends its transaction, and neither a statement nor a deferral
is accepted once a statement has carried that COMMIT
(``TransactionEnded``), since it would run outside the transaction or
not at all.

``engine.create_engine`` makes every PostgreSQL connection one of these;
``Database.write`` calls ``begin_write``.
"""

from psycopg2 import extensions

_BEGIN = 'BEGIN; '
_COMMIT = '; COMMIT'
_THEN = '; '


class TransactionEnded(RuntimeError):
    """A statement (sent or deferred) after the one that carried its
    write transaction's COMMIT: a mistake in the code, never the
    database's, which would have left that statement out of the
    transaction."""

    def __init__(self):
        super().__init__('A statement after the one that carried its write '
                         'transaction\'s COMMIT would run outside it.')


class Cursor(extensions.cursor):
    """Sends the pending BEGIN, or the deferred statements, with the
    next statement."""

    def execute(self, query, vars=None):
        session = self.connection
        if session.commit_sent:
            raise TransactionEnded()
        if session.begin_pending:
            session.begin_pending = False
            if self.name is None:
                query = (_BEGIN.encode() if isinstance(query, bytes)
                         else _BEGIN) + query
            else:   # DECLARE ... CURSOR takes no second statement
                session.begin_alone()
        elif session.deferred:
            # Joined to a statement with values in order, as theirs are
            # (prepared ones); ahead of any other, alone.
            if (self.name is None and isinstance(query, str)
                    and isinstance(vars, tuple)):
                sql, args = session.take_deferred()
                query, vars = sql + _THEN + query, args + vars
            else:
                session.send_deferred()
        try:
            return super().execute(query, vars)
        finally:
            # Sent (or failed, which ends the transaction as well).
            session.commit_sent = session.commit_next
            session.commit_next = False

    def executemany(self, query, vars_list):
        session = self.connection
        if session.commit_sent:
            raise TransactionEnded()
        if session.begin_pending:   # run once per row: BEGIN goes alone
            session.begin_pending = False
            session.begin_alone()
        elif session.deferred:
            session.send_deferred()
        return super().executemany(query, vars_list)


class Session(extensions.connection):
    """A psycopg2 connection that can begin a write transaction with its
    first statement (see the module's docstring)."""

    # Whether a write transaction has begun and SQLAlchemy has not ended
    # it yet (its COMMIT may have gone already: ``with_commit``), and
    # whether it has sent nothing yet.
    writing = False
    begin_pending = False
    # Whether the next statement carries the write transaction's COMMIT
    # (``with_commit``), and whether one did: nothing may follow.
    commit_next = False
    commit_sent = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cursor_factory = Cursor
        # (statement, its values as a tuple) to go with the next one.
        self.deferred = []

    def begin_write(self):
        """The next statement begins a transaction that lasts until
        ``commit`` or ``rollback``; nothing is sent now."""
        self.autocommit = True
        self.writing = self.begin_pending = True

    def begin_alone(self):
        with extensions.cursor(self) as cursor:
            cursor.execute('BEGIN')

    def take_deferred(self):
        """The deferred statements as one: (text, values)."""
        deferred, self.deferred = self.deferred, []
        return (_THEN.join(sql for sql, _ in deferred),
                sum((args for _, args in deferred), ()))

    def send_deferred(self):
        with extensions.cursor(self) as cursor:
            cursor.execute(*self.take_deferred())

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
        self.commit_next = self.commit_sent = False
        ending = statement == 'COMMIT' and self.deferred
        sql, args = self.take_deferred()
        # Idle: nothing was sent, or COMMIT went with the last statement
        # (or failed there, which ended the transaction too).
        try:
            if self.info.transaction_status != (
                    extensions.TRANSACTION_STATUS_IDLE):
                with extensions.cursor(self) as cursor:
                    if ending:
                        _send_or_roll_back(cursor, sql + _COMMIT, args)
                    else:
                        cursor.execute(statement)
            elif ending:
                # Deferred, and no transaction left to carry it: ``defer``
                # refuses that, so only a change to that rule gets here.
                raise TransactionEnded()
        finally:
            # A COMMIT that failed ended the transaction too; a session
            # that lost its server is discarded by SQLAlchemy.
            if not self.closed and self.info.transaction_status == (
                    extensions.TRANSACTION_STATUS_IDLE):
                self.autocommit = False


def _send_or_roll_back(cursor, sql, args):
    """``sql`` with ``args`` on ``cursor``; if it fails before its COMMIT,
    the transaction it failed in is rolled back (a failed statement ends
    none)."""
    try:
        cursor.execute(sql, args)
    except Exception:
        if cursor.connection.info.transaction_status == (
                extensions.TRANSACTION_STATUS_INERROR):
            cursor.execute('ROLLBACK')
        raise


def defer(conn, sql, args):
    """Whether ``sql`` with ``args`` (one statement of a write
    transaction on ``conn``, a SQLAlchemy connection, whose result is
    not read) waits to go with the transaction's next statement, or its
    COMMIT, in one message; if not (no session here can), the caller
    runs it now.  A failure of it is then raised by that next statement.
    """
    driver = conn.connection.driver_connection
    if not (isinstance(driver, Session) and driver.writing
            and not driver.begin_pending):
        return False
    if driver.commit_sent:
        raise TransactionEnded()
    driver.deferred.append((sql, tuple(args)))
    return True


def with_commit(conn, sql):
    """``sql`` (one statement, the last of the write transaction on
    ``conn``, a SQLAlchemy connection) to be sent with the COMMIT that
    ends it, in one message, where the session can; else as it is, to be
    committed as usual. Its result is then the COMMIT's: no rows."""
    driver = conn.connection.driver_connection
    if isinstance(driver, Session) and driver.writing:
        if driver.commit_sent:
            raise TransactionEnded()
        driver.commit_next = True
        return sql + _COMMIT
    return sql


def connect_args():
    """What ``create_engine`` gives psycopg2's ``connect``."""
    return {'connection_factory': Session}
