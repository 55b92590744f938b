"""Write transactions on PostgreSQL begin with their first statement
and end with their last (``storage.postgresql``): no BEGIN or COMMIT of
their own, yet one transaction, atomic and isolated as before, and the
session handed back to the pool as psycopg2 left it.

Each test runs on a pool of one connection, so that every transaction
meets the session the one before it used (``one_connection``).
"""

import threading

import pytest
import sqlalchemy as sa
from psycopg2 import extensions

from placement.storage import changes
from placement.storage import engine
from placement.storage import exceptions
from placement.storage import postgresql
from placement.storage import prepared
from placement.storage import tables

pytestmark = pytest.mark.backends('postgresql')

# True when the statement arrived in the message that began its
# transaction: a BEGIN sent on its own is an earlier statement.
_FIRST_IN_TRANSACTION = (
    'SELECT transaction_timestamp() = statement_timestamp()')
_PREPARED_FIRST = prepared.Statement(sa.text(_FIRST_IN_TRANSACTION))


def _trait_names(db):
    return set(db.read(lambda conn: conn.execute(
        sa.select(tables.TRAIT.c.name)).scalars().all()))


def _session_state(db):
    """(autocommit, transaction status) of the pool's one session, as
    the next transaction finds it."""
    with db.engine.connect() as conn:
        driver = conn.connection.driver_connection
        return driver.autocommit, driver.info.transaction_status


def test_a_write_sends_no_begin_of_its_own(one_connection):
    db = one_connection

    def write(conn):
        first = conn.exec_driver_sql(_FIRST_IN_TRANSACTION).scalar()
        later = conn.exec_driver_sql(
            'SELECT transaction_timestamp() < statement_timestamp()').scalar()
        return first, later
    # The second statement is in the transaction the first began.
    assert db.write(write) == (True, True)
    # A prepared statement too, once prepared (its PREPARE carried the
    # BEGIN the first time).
    db.write(_PREPARED_FIRST.execute)
    assert db.write(lambda conn: _PREPARED_FIRST.execute(conn).one()[0])
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)


def test_reads_are_not_changed(one_connection):
    db = one_connection
    # Outside a transaction: each statement begins and ends its own.
    assert db.read(lambda conn: conn.exec_driver_sql(
        _FIRST_IN_TRANSACTION).scalar())


def test_a_write_is_invisible_to_others_until_it_commits(
        one_connection, database_url):
    db = one_connection
    observer = engine.Database(engine.create_engine(database_url))
    inserted, release = threading.Event(), threading.Event()

    def write(conn):
        conn.execute(tables.TRAIT.insert().values(name='CUSTOM_HELD'))
        inserted.set()
        assert release.wait(30)

    writer = threading.Thread(target=db.write, args=(write,))
    writer.start()
    try:
        assert inserted.wait(30)
        assert 'CUSTOM_HELD' not in _trait_names(observer)
    finally:
        release.set()
        writer.join(30)
    assert 'CUSTOM_HELD' in _trait_names(observer)
    observer.dispose()


def _changed_my_mind(conn):
    conn.execute(tables.TRAIT.insert().values(name='CUSTOM_LOST'))
    raise exceptions.InvalidInput('changed my mind')


def _inserted_twice(conn):
    for _ in range(2):
        conn.execute(tables.TRAIT.insert().values(name='CUSTOM_LOST'))


@pytest.mark.parametrize('write, error', [
    (_changed_my_mind, exceptions.InvalidInput),
    (_inserted_twice, sa.exc.IntegrityError),
], ids=['write-raises', 'statement-fails'])
def test_a_failed_write_leaves_nothing_and_a_clean_session(
        one_connection, write, error):
    db = one_connection
    with pytest.raises(error):
        db.write(write)
    assert 'CUSTOM_LOST' not in _trait_names(db)
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)


def _last_sent(db, pid):
    """The last statement the session of backend ``pid`` received."""
    with db.engine.connect() as conn:
        return conn.exec_driver_sql(
            'SELECT query FROM pg_stat_activity WHERE pid = %s',
            (pid,)).scalar()


def test_a_write_s_commit_goes_with_its_last_statement(
        one_connection, database_url):
    db = one_connection
    observer = engine.Database(engine.create_engine(database_url))
    start = db.read(changes.current)

    def write(conn):
        conn.execute(tables.TRAIT.insert().values(name='CUSTOM_KEPT'))
        changes.touch(conn, 7)
        return conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
    pid = db.write(write)
    last = _last_sent(observer, pid)
    assert last.startswith('EXECUTE %s' % changes._PG_ADVANCE_AND_LOG.name)
    assert last.endswith('; COMMIT')
    assert 'CUSTOM_KEPT' in _trait_names(observer)
    assert db.read(changes.current).total == start.total + 1
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)
    observer.dispose()


# A trigger refusing the change log's row for provider -7: when the row
# is inserted (the last statement fails), or at COMMIT (the COMMIT sent
# with it fails).
_REFUSE = (
    "CREATE FUNCTION placement_test_refuse() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$",
    "CREATE %s TRIGGER placement_test_refuse AFTER INSERT ON "
    "placement_provider_changes %s FOR EACH ROW WHEN "
    "(NEW.provider_id = -7) EXECUTE FUNCTION placement_test_refuse()")


@pytest.mark.parametrize('kind, timing', [
    ('', ''), ('CONSTRAINT', 'DEFERRABLE INITIALLY DEFERRED')],
    ids=['last-statement-fails', 'its-commit-fails'])
def test_a_write_whose_end_fails_leaves_nothing_and_a_clean_session(
        one_connection, kind, timing):
    db = one_connection
    db.write(lambda conn: [conn.exec_driver_sql(sql) for sql in (
        _REFUSE[0], _REFUSE[1] % (kind, timing))])

    def write(conn):
        conn.execute(tables.TRAIT.insert().values(name='CUSTOM_LOST'))
        changes.touch(conn, -7)
    _fails_leaving_nothing(db, write, sa.exc.DBAPIError, match='refused')


def _fails_leaving_nothing(db, write, error, match=None):
    """``write`` raises ``error``, and leaves neither its trait
    CUSTOM_LOST nor a change logged, and a session the next write logs
    on."""
    start = db.read(changes.current)
    with pytest.raises(error, match=match):
        db.write(write)
    assert 'CUSTOM_LOST' not in _trait_names(db)
    assert db.read(changes.current) == start
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)
    db.write(lambda conn: changes.touch(conn, 8))
    assert db.read(changes.current).total == start.total + 1


def test_a_first_statement_run_per_row_begins_the_transaction(one_connection):
    db = one_connection
    names = ['CUSTOM_ROW_%d' % n for n in range(3)]

    def write(conn):
        conn.execute(tables.TRAIT.insert(), [{'name': name}
                                             for name in names])
        return conn.exec_driver_sql(
            'SELECT transaction_timestamp() < statement_timestamp()').scalar()

    assert db.write(write)
    assert set(names) <= _trait_names(db)


# An insert whose result nobody reads, run deferred; and whether the
# trait was added by the message the question came in (statements in one
# message share their statement_timestamp()).
_ADD_TRAIT = prepared.Statement(sa.text(
    'INSERT INTO traits (name, created_at) '
    'VALUES (:name, statement_timestamp())'))
_ADDED_IN_THIS_MESSAGE = prepared.Statement(sa.text(
    'SELECT created_at = statement_timestamp() FROM traits '
    'WHERE name = :name'))


def test_a_deferred_statement_goes_with_the_next_one(
        one_connection, database_url):
    db = one_connection
    observer = engine.Database(engine.create_engine(database_url))
    name = "CUSTOM_PERCENT_%s_'QUOTED'"
    db.write(changes.touch, 7)      # the change log's statement prepared

    def write(conn):
        pid = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
        _ADDED_IN_THIS_MESSAGE.execute(conn, {'name': name})  # prepared
        assert _ADD_TRAIT.execute(conn, {'name': name}, defer=True) is None
        carried = _ADDED_IN_THIS_MESSAGE.execute(
            conn, {'name': name}).one()[0]
        # A statement of another kind (values by name) lets it go first.
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_ALONE'}, defer=True)
        seen = conn.execute(sa.select(sa.func.count()).where(
            tables.TRAIT.c.name == 'CUSTOM_ALONE')).scalar()
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_WITH_LOG'}, defer=True)
        changes.touch(conn, 7)
        return pid, carried, seen
    pid, carried, seen = db.write(write)
    assert carried is True and seen == 1
    # The change log's statement carried the second, and the COMMIT.
    last = _last_sent(observer, pid)
    assert last.startswith('EXECUTE %s' % _ADD_TRAIT.name), last
    assert ('; EXECUTE %s' % changes._PG_ADVANCE_AND_LOG.name) in last
    assert last.endswith('; COMMIT')
    assert {name, 'CUSTOM_ALONE', 'CUSTOM_WITH_LOG'} <= _trait_names(
        observer)
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)
    observer.dispose()


def test_a_deferred_statement_with_nothing_after_it_goes_with_the_commit(
        one_connection):
    db = one_connection

    def write(conn):
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_AT_COMMIT'}, defer=True)
        changes.touch(conn)     # nothing logged: no statement follows
    db.write(write)
    assert 'CUSTOM_AT_COMMIT' in _trait_names(db)
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)


@pytest.mark.parametrize('logged', [True, False],
                         ids=['fails-with-the-next', 'fails-at-commit'])
def test_a_deferred_statement_that_fails_leaves_nothing_and_a_clean_session(
        one_connection, logged):
    db = one_connection
    db.write(lambda conn: conn.execute(
        tables.TRAIT.insert().values(name='CUSTOM_TWICE')))

    def write(conn):
        conn.execute(tables.TRAIT.insert().values(name='CUSTOM_LOST'))
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_TWICE'}, defer=True)
        if logged:
            changes.touch(conn, 7)
        else:
            changes.touch(conn)
    _fails_leaving_nothing(db, write, sa.exc.IntegrityError)


def test_a_rolled_back_write_drops_what_it_deferred(one_connection):
    db = one_connection

    def write(conn):
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_DROPPED'}, defer=True)
        raise exceptions.InvalidInput('changed my mind')
    with pytest.raises(exceptions.InvalidInput):
        db.write(write)
    db.write(lambda conn: conn.execute(
        tables.TRAIT.insert().values(name='CUSTOM_NEXT')))
    names = _trait_names(db)
    assert 'CUSTOM_NEXT' in names and 'CUSTOM_DROPPED' not in names
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)


@pytest.mark.parametrize('then', ['deferred', 'sent'])
def test_nothing_follows_the_statement_that_carried_the_commit(
        one_connection, then):
    """What a deferred statement relies on is enforced: once a statement
    has carried its transaction's COMMIT, a statement deferred or sent
    after it is refused, never left out of the transaction silently."""
    db = one_connection

    def write(conn):
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_FIRST'})
        _PREPARED_FIRST.execute(conn, commit=True)
        _ADD_TRAIT.execute(conn, {'name': 'CUSTOM_AFTER'},
                           defer=then == 'deferred')
    with pytest.raises(postgresql.TransactionEnded):
        db.write(write)
    names = _trait_names(db)
    assert 'CUSTOM_FIRST' in names and 'CUSTOM_AFTER' not in names
    assert _session_state(db) == (
        False, extensions.TRANSACTION_STATUS_IDLE)
