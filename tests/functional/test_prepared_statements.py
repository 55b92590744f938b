"""The hot reads on PostgreSQL: prepared once per connection, and read
outside a transaction (``storage.prepared``, ``Database.run``).

Each test runs on a pool of one connection, so that every request meets
the session the one before it prepared statements in.
"""

import logging
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.storage import allocations
from placement.storage import engine
from placement.storage import exceptions
from placement.storage import prepared
from placement.storage import tables
from placement.storage import usages

pytestmark = pytest.mark.backends('postgresql')

NAMESPACE = uuidlib.UUID('6d0c2f4e-8a31-4f7b-9c55-0e2b7d1a9f43')
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


@pytest.fixture
def one_connection(database_url):
    database = engine.Database(engine.create_engine(
        database_url, pool_size=1, max_overflow=0))
    yield database
    database.dispose()


@pytest.fixture
def host(client):
    """A provider with inventory and two servers on it."""
    node = _uuid('node')
    client.post('/resource_providers', json={'name': 'node', 'uuid': node})
    client.put('/resource_providers/%s/inventories' % node, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 16},
                        'MEMORY_MB': {'total': 8192}}})
    for name in ('server-1', 'server-2'):
        client.put('/allocations/%s' % _uuid(name), json={
            'allocations': {node: {'resources': {'VCPU': 2,
                                                 'MEMORY_MB': 512}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return node


def _prepared_names(db):
    return db.read(lambda conn: {row[0] for row in conn.exec_driver_sql(
        'SELECT name FROM pg_prepared_statements')})


def test_hot_reads_are_prepared_once_and_answer_as_unprepared(
        one_connection, host):
    db = one_connection
    first = db.read(allocations.for_provider, host)
    assert db.read(allocations.for_provider, host) == first
    assert allocations._FOR_PROVIDER.name in _prepared_names(db)
    unprepared = db.read(lambda conn: [
        dict(row._mapping) for row in conn.execute(
            allocations._FOR_PROVIDER.statement, {'uuid': host})])
    generation, rows = first
    assert generation == unprepared[0]['resource_provider_generation']
    assert rows == [{key: value for key, value in row.items()
                     if key != 'resource_provider_generation'}
                    for row in unprepared]
    assert len(rows) == 4

    assert db.read(usages.for_project, PROJECT) == {'VCPU': 4,
                                                     'MEMORY_MB': 1024}
    assert db.read(usages.for_project_by_type, PROJECT) == {
        'INSTANCE': {'VCPU': 4, 'MEMORY_MB': 1024, 'consumer_count': 2}}
    consumer, held = db.read(allocations.for_consumer, _uuid('server-1'))
    assert consumer['project_id'] == PROJECT
    assert sorted((row['resource_class'], row['used']) for row in held) == [
        ('MEMORY_MB', 512), ('VCPU', 2)]
    with pytest.raises(exceptions.NotFound):
        db.read(allocations.for_provider, _uuid('nowhere'))


def test_a_percent_sign_in_a_statement_survives_preparing(one_connection):
    statement = prepared.Statement(sa.select(
        sa.literal_column("'100%'"), sa.bindparam('value', type_=sa.String)))
    row = one_connection.read(
        lambda conn: statement.execute(conn, {'value': '50%'}).one())
    assert tuple(row) == ('100%', '50%')


def test_a_statement_gone_from_its_session_is_retried_unprepared(
        one_connection, host, caplog):
    """What a pooler in transaction mode does to a prepared statement,
    done by hand: the read still answers, and the process stops
    preparing on that engine."""
    db = one_connection
    expected = db.read(allocations.for_provider, host)
    with db.engine.connect() as conn:
        conn.exec_driver_sql('DEALLOCATE ALL')
        conn.commit()
    try:
        with caplog.at_level(logging.WARNING, logger=prepared.__name__):
            assert db.read(allocations.for_provider, host) == expected
        assert 'no longer prepared' in caplog.text
        assert db.engine in prepared._REFUSED
        assert allocations._FOR_PROVIDER.name not in _prepared_names(db)
    finally:
        prepared._REFUSED.discard(db.engine)


def test_a_read_holds_no_transaction_open(one_connection, host, database_url):
    """Between two statements of a read, its session is idle rather than
    idle in a transaction: it holds no snapshot back from vacuum."""
    observer = sa.create_engine(database_url)

    def read(conn):
        pid = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
        with observer.connect() as other:
            return other.exec_driver_sql(
                'SELECT state, xact_start FROM pg_stat_activity '
                'WHERE pid = %(pid)s', {'pid': pid}).one()

    try:
        state, started = one_connection.read(read)
    finally:
        observer.dispose()
    assert (state, started) == ('idle', None)


def test_a_write_after_a_read_on_the_same_session_still_rolls_back(
        one_connection, host):
    db = one_connection
    db.read(allocations.for_provider, host)

    def half_then_fail(conn):
        conn.execute(tables.projects.insert().values(external_id='half'))
        raise RuntimeError('failed midway')

    with pytest.raises(RuntimeError):
        db.write(half_then_fail)
    assert db.read(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(tables.projects)
        .where(tables.projects.c.external_id == 'half')).scalar()) == 0


def test_a_session_killed_between_reads_is_replaced_and_prepares_anew(
        one_connection, host, database_url):
    db = one_connection
    expected = db.read(allocations.for_provider, host)
    killed = db.read(lambda conn: conn.exec_driver_sql(
        'SELECT pg_backend_pid()').scalar())
    observer = sa.create_engine(database_url)
    try:
        with observer.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT pg_terminate_backend(%(pid)s)',
                {'pid': killed}).scalar()
    finally:
        observer.dispose()
    assert db.read(allocations.for_provider, host) == expected
    assert db.read(lambda conn: conn.exec_driver_sql(
        'SELECT pg_backend_pid()').scalar()) != killed
    assert allocations._FOR_PROVIDER.name in _prepared_names(db)
