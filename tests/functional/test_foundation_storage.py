"""The transaction discipline of ``storage.engine.Database``.

One transaction per call, rolled back on any failure, retried from the
start on transient errors; and on SQLite the connection settings that make
it a safe embedded database (foreign keys, WAL, writers that lock first).
"""

import sqlite3

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import engine
from placement.storage import exceptions as storage_exc
from placement.storage import tables


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(engine.time, 'sleep', lambda seconds: None)


class DriverError(Exception):
    """Stands in for a DB-API exception; ``pgcode`` as psycopg2 has it."""

    def __init__(self, message, pgcode=None):
        super().__init__(message)
        self.pgcode = pgcode


def dbapi_error(message='boom', invalidated=False, pgcode=None):
    return sa_exc.DBAPIError('SELECT 1', {}, DriverError(message, pgcode),
                             connection_invalidated=invalidated)


def trait_names(db):
    return db.read(lambda conn: sorted(conn.execute(
        sa.select(tables.traits.c.name).where(
            tables.traits.c.name.like('CUSTOM_ENGINE_%'))).scalars()))


def failing_writer(errors):
    """A storage function that inserts a trait, then raises the next of
    ``errors`` (None: succeed); ``calls`` counts its runs."""
    def write(conn):
        write.calls += 1
        conn.execute(tables.traits.insert().values(
            name='CUSTOM_ENGINE_%d' % write.calls))
        error = errors[write.calls - 1]
        if error is not None:
            raise error
        return 'done'
    write.calls = 0
    return write


@pytest.mark.parametrize('error', [
    dbapi_error(invalidated=True),
    dbapi_error(pgcode='40001'),
    dbapi_error(pgcode='40P01'),
    dbapi_error('database is locked'),
    dbapi_error('server closed the connection unexpectedly'),
], ids=['invalidated', 'serialization', 'deadlock', 'sqlite-locked',
        'server-closed'])
def test_transient_error_is_retried_in_a_fresh_transaction(db, error):
    write = failing_writer([error, None])
    assert db.write(write) == 'done'
    assert write.calls == 2
    # The first attempt's insert was rolled back with its transaction.
    assert trait_names(db) == ['CUSTOM_ENGINE_2']


def test_other_database_errors_are_not_retried(db):
    write = failing_writer([dbapi_error('syntax error'), None])
    with pytest.raises(sa_exc.DBAPIError):
        db.write(write)
    assert write.calls == 1
    assert trait_names(db) == []


def test_retries_stop_after_the_last_attempt(db):
    """A database still out of reach then is "unavailable" (a 503); a
    deadlock that keeps recurring is a concurrent update (a 409 the
    client may retry)."""
    attempts = engine._ATTEMPTS
    write = failing_writer([dbapi_error(invalidated=True)] * attempts)
    with pytest.raises(storage_exc.DatabaseUnavailable):
        db.write(write)
    assert write.calls == attempts
    write = failing_writer([dbapi_error(pgcode='40P01')] * attempts)
    with pytest.raises(storage_exc.ConcurrentUpdate):
        db.write(write)
    assert write.calls == attempts
    assert trait_names(db) == []


def test_each_kind_of_cause_has_attempts_of_its_own(db):
    """A write that spent all but one attempt waiting for the database
    to come back, and then meets a deadlock (every held-back writer
    arrives at once), is retried again: it lost to others once, not five
    times."""
    attempts = engine._ATTEMPTS
    write = failing_writer([dbapi_error(invalidated=True)] * (attempts - 1)
                           + [dbapi_error(pgcode='40P01')] * 2 + [None])
    assert db.write(write) == 'done'
    assert write.calls == attempts + 2
    assert trait_names(db) == ['CUSTOM_ENGINE_%d' % (attempts + 2)]


def test_an_error_raised_while_handling_a_transient_one_is_retried(db):
    """What a failed rollback to a savepoint raises after a deadlock
    carries the deadlock as its context."""
    def chained():
        try:
            raise dbapi_error(pgcode='40P01')
        except sa_exc.DBAPIError:
            try:
                raise dbapi_error('SAVEPOINT sa_savepoint_1 does not exist')
            except sa_exc.DBAPIError as error:
                return error
    assert engine.transient_cause(chained()) == 'deadlock'
    write = failing_writer([chained(), None])
    db.write(write)
    assert write.calls == 2
    assert trait_names(db) == ['CUSTOM_ENGINE_2']


def test_any_exception_rolls_the_whole_call_back(db):
    write = failing_writer([ValueError('not a database error')])
    with pytest.raises(ValueError):
        db.write(write)
    assert trait_names(db) == []


def test_foreign_keys_are_enforced(db):
    def orphan_inventory(conn):
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=424242, resource_class_id=0, total=1,
            reserved=0, min_unit=1, max_unit=1, step_size=1,
            allocation_ratio=1.0))
    with pytest.raises(sa_exc.IntegrityError):
        db.write(orphan_inventory)


# -- SQLite connection settings ------------------------------------------------

def pragma(db, name):
    return db.read(lambda conn: conn.exec_driver_sql(
        'PRAGMA %s' % name).scalar())


@pytest.fixture
def sqlite_db(tmp_path):
    database = engine.Database(engine.create_engine(
        'sqlite:///%s' % (tmp_path / 'engine.sqlite')))
    yield database
    database.dispose()


def test_sqlite_pragmas(sqlite_db):
    assert pragma(sqlite_db, 'foreign_keys') == 1
    assert pragma(sqlite_db, 'journal_mode') == 'wal'
    assert pragma(sqlite_db, 'busy_timeout') == 30000
    assert pragma(sqlite_db, 'synchronous') == 1  # NORMAL


def test_sqlite_synchronous_off(tmp_path):
    database = engine.Database(engine.create_engine(
        'sqlite:///%s' % (tmp_path / 'fast.sqlite'),
        sqlite_synchronous=False))
    assert pragma(database, 'synchronous') == 0
    database.dispose()


def other_writer_can_start(path):
    """Whether another connection could begin writing right now."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute('BEGIN IMMEDIATE')
        other.execute('ROLLBACK')
        return True
    except sqlite3.OperationalError as exc:
        assert 'locked' in str(exc)
        return False
    finally:
        other.close()


@pytest.mark.parametrize('write', [True, False])
def test_sqlite_writers_take_the_write_lock_up_front(sqlite_db, write):
    """A write transaction locks at BEGIN, so two writers queue instead of
    deadlocking when both try to upgrade a read lock; reads never lock."""
    path = sqlite_db.engine.url.database
    # A bare database but for where write transactions mark themselves.
    tables.change_stamp.create(sqlite_db.engine)

    def locked_out(conn):
        changes.touch(conn)     # a bare database: no change log to write
        return not other_writer_can_start(path)

    assert sqlite_db.run(locked_out, write=write) is write


def test_embedded_url_is_a_file_under_state_path(conf, tmp_path):
    conf.set_override('state_path', str(tmp_path / 'state'))
    url = engine.build_url(conf)
    assert url == 'sqlite:///%s' % (tmp_path / 'state' / 'placement.sqlite')
    assert (tmp_path / 'state').is_dir()


def test_connection_parameters_are_appended(conf):
    conf.set_override('connection', 'postgresql+psycopg2://u@h/placement',
                      group='placement_database')
    conf.set_override('connection_parameters', 'application_name=x',
                      group='placement_database')
    assert engine.build_url(conf) == (
        'postgresql+psycopg2://u@h/placement?application_name=x')


def test_a_postgresql_url_naming_no_driver_uses_psycopg2(
        backend, database_url):
    """``postgresql://`` means psycopg2, as it did for upstream under
    SQLAlchemy 2.0 (2.1 would pick psycopg 3, which is not installed)."""
    if backend != 'postgresql':
        pytest.skip('a PostgreSQL URL')
    bare = database_url.replace('postgresql+psycopg2://', 'postgresql://')
    assert bare.startswith('postgresql://')
    db = engine.Database(engine.create_engine(bare))
    try:
        assert db.engine.dialect.driver == 'psycopg2'
        assert db.read(lambda conn: conn.exec_driver_sql(
            'SELECT 1').scalar()) == 1
    finally:
        db.dispose()


@pytest.fixture
def postgres_db(backend, db):
    if backend != 'postgresql':
        pytest.skip('server-side connection termination is PostgreSQL only')
    return db


def _terminate_connections(cluster, database):
    admin = sa.create_engine(cluster.url('postgres'),
                             isolation_level='AUTOCOMMIT')
    with admin.connect() as conn:
        killed = conn.execute(sa.text(
            'SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity '
            'WHERE datname = :name AND pid <> pg_backend_pid()'),
            {'name': database}).scalar()
    admin.dispose()
    return killed


@pytest.mark.parametrize('write', [False, True])
def test_connection_dropped_by_the_server_is_replaced(postgres_db,
                                                      postgres, write):
    """A pooled connection the server killed (restart, failover, idle
    timeout) costs a retry on a fresh connection, not an error."""
    def count_traits(conn):
        return conn.execute(sa.select(sa.func.count())
                            .select_from(tables.traits)).scalar()

    before = postgres_db.read(count_traits)
    assert _terminate_connections(
        postgres, postgres_db.engine.url.database) >= 1
    assert postgres_db.run(count_traits, write=write) == before


@pytest.mark.parametrize('message, cause', [
    ('connection to server at "127.0.0.1", port 5432 failed: Connection '
     'refused', 'cannot_connect'),
    ('connection to server at "127.0.0.1", port 5432 failed: Connection '
     'reset by peer', 'cannot_connect'),
    ('FATAL:  the database system is shutting down', 'cannot_connect'),
    ('server closed the connection unexpectedly', 'connection_lost'),
    ('could not receive data from server: Connection reset by peer',
     'connection_lost'),
    ('SSL SYSCALL error: EOF detected', 'connection_lost'),
    ('duplicate key value violates unique constraint', None),
])
def test_what_an_unreachable_postgresql_says_is_transient(message, cause):
    """libpq's words for a server out of reach, as seen while PostgreSQL
    stops under load: each is retried, then a 503."""
    assert engine.transient_cause(dbapi_error(message)) == cause
