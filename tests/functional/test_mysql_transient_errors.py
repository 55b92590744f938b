"""MariaDB's transient errors, provoked for real, are retried by the
transaction runner (``Database.run``) and the caller sees a success.

Each test makes the first attempt of a transaction fail the way a busy
MariaDB or Galera cluster makes it fail: a deadlock (1213, which is also
how Galera reports a lost certification), a lock wait timeout (1205), a
connection killed under it (2013) and a server that closed the
connection between transactions (2006).  A MySQL error that is not
transient (a duplicate key) is not retried.
"""

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import metrics
from placement.storage import engine
from placement.storage import tables

pytestmark = pytest.mark.backends('mysql')

_RC = tables.resource_classes


@pytest.fixture
def retries():
    """Retries counted so far by cause (metrics recorded in-process)."""
    metrics.enable()
    import prometheus_client

    def count(cause):
        return prometheus_client.REGISTRY.get_sample_value(
            'placement_db_transaction_retries_total', {'cause': cause}) or 0
    return count


@pytest.fixture
def classes(db):
    """Two custom resource classes to lock."""
    with db.engine.begin() as conn:
        conn.execute(_RC.insert(), [{'id': 20001, 'name': 'CUSTOM_A'},
                                    {'id': 20002, 'name': 'CUSTOM_B'}])
    return 20001, 20002


def _touch(conn, class_id):
    conn.execute(_RC.update().where(_RC.c.id == class_id)
                 .values(name=_RC.c.name))


def _deadlock(db, classes, retries, second_lock):
    """Two transactions lock the same two rows in opposite orders, the
    second row each through ``second_lock(conn, row)``: MariaDB kills one
    with a deadlock; both must succeed, one of them at its second go."""
    first, second = classes
    both_hold_one = threading.Barrier(2, timeout=10)
    attempts = {'a': 0, 'b': 0}
    errors = []

    def work(name, one, other):
        def fn(conn):
            attempts[name] += 1
            _touch(conn, one)
            if attempts[name] == 1:
                both_hold_one.wait()
            second_lock(conn, other)
            return name
        try:
            assert db.write(fn) == name
        except Exception as exc:  # reported below, with the other's
            errors.append(exc)

    before = retries('deadlock')
    threads = [threading.Thread(target=work, args=('a', first, second)),
               threading.Thread(target=work, args=('b', second, first))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert sorted(attempts.values()) == [1, 2]
    assert retries('deadlock') == before + 1


def test_deadlock_is_retried(db, classes, retries):
    _deadlock(db, classes, retries, _touch)


def test_deadlock_inside_a_savepoint_is_retried(db, classes, retries):
    """MariaDB ends the whole transaction on a deadlock met inside a
    savepoint; the rollback to the savepoint then fails ("SAVEPOINT does
    not exist"), and that error is still known as the deadlock's and
    retried (it was a 500)."""
    def in_savepoint(conn, row):
        with conn.begin_nested():
            _touch(conn, row)
    _deadlock(db, classes, retries, in_savepoint)


def test_lock_wait_timeout_is_retried(db, classes, retries):
    """A row held longer than innodb_lock_wait_timeout: the waiter's
    attempt fails with 1205, the next one gets the row."""
    holder = db.engine.connect()
    transaction = holder.begin()
    _touch(holder, classes[0])
    release = threading.Timer(1.5, transaction.commit)
    attempts = []

    def fn(conn):
        attempts.append(1)
        conn.exec_driver_sql('SET SESSION innodb_lock_wait_timeout = 1')
        _touch(conn, classes[0])
        return 'done'

    before = retries('lock_wait_timeout')
    release.start()
    try:
        assert db.write(fn) == 'done'
    finally:
        release.join()
        holder.close()
    assert len(attempts) >= 2
    assert retries('lock_wait_timeout') == before + len(attempts) - 1


def test_connection_killed_mid_transaction_is_retried(db, mariadb,
                                                     retries):
    """The server kills the connection in the middle of a transaction
    (2013, lost connection): nothing was committed, the runner starts over
    on a fresh connection."""
    attempts = []

    def fn(conn):
        attempts.append(conn.exec_driver_sql('SELECT CONNECTION_ID()')
                        .scalar())
        if len(attempts) == 1:
            mariadb.execute('KILL CONNECTION %d' % attempts[0])
        return conn.scalar(sa.select(sa.func.count()).select_from(_RC))

    before = retries('connection_lost')
    assert db.read(fn) > 0
    assert len(attempts) == 2 and attempts[0] != attempts[1]
    assert retries('connection_lost') == before + 1


def test_server_gone_away_between_transactions_is_retried(db, mariadb):
    """A pooled connection the server closed while idle (its wait_timeout,
    a restart, a failover) fails with 2006 or 2013 on first use; the
    runner retries on a new connection."""
    with db.engine.connect() as conn:
        idle = conn.exec_driver_sql('SELECT CONNECTION_ID()').scalar()
    mariadb.execute('KILL CONNECTION %d' % idle)
    attempts = []

    def fn(conn):
        attempts.append(1)
        return conn.exec_driver_sql('SELECT 1').scalar()

    assert db.read(fn) == 1
    assert len(attempts) == 2


def test_duplicate_key_is_not_retried(db, classes):
    attempts = []

    def fn(conn):
        attempts.append(1)
        conn.execute(_RC.insert().values(id=20003, name='CUSTOM_A'))

    with pytest.raises(sa_exc.IntegrityError):
        db.write(fn)
    assert len(attempts) == 1


def test_error_numbers_are_classified():
    import pymysql
    transient = sa_exc.OperationalError(
        'SELECT 1', {}, pymysql.err.OperationalError(1213, 'Deadlock'))
    permanent = sa_exc.OperationalError(
        'SELECT 1', {}, pymysql.err.OperationalError(1045, 'Access denied'))
    assert engine._transient(transient)
    assert not engine._transient(permanent)
