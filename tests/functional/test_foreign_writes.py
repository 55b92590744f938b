"""Writes this service did not make are seen by the very next search.

The in-memory candidate state (``placement.state.snapshot``) is
brought up to date from the change log, which this service's own writes
fill; the triggers of migration 0004 log everything else's writes (SQL
run by hand, upstream Placement on the same database, a script emptying
tables).  Each test here writes through a plain SQLAlchemy engine of its
own, which is not marked as this service's, and requires the next answer
of a service that has been answering all along to equal the answer of a
brand-new one (a fresh read of the database).
"""

import logging
import threading
import uuid as uuidlib

import pytest
import webtest

from placement import app as placement_app
from placement.cmd import status
from placement.storage import changes
from placement.storage import engine
from placement.storage import migration

from tests import installed
from tests import mariadb_server
from tests.conftest import Client

NAMESPACE = uuidlib.UUID('5d0c7a51-0c43-4c4e-9d0f-7c1b8f5e2a90')
AGG = str(uuidlib.uuid5(NAMESPACE, 'aggregate'))
CONSUMER = str(uuidlib.uuid5(NAMESPACE, 'consumer'))
NEW_UUID = str(uuidlib.uuid5(NAMESPACE, 'new provider'))


@pytest.fixture
def cloud(client):
    """Two compute nodes: A with VCPU, memory and CUSTOM_OLD, B with
    disk; a trait and a class nobody has yet.  Their uuids and ids."""
    client.put('/traits/CUSTOM_FAST')
    client.put('/resource_classes/CUSTOM_OLD')
    found = {}
    for name, inventories in (
            ('a', {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024},
                   'CUSTOM_OLD': {'total': 4}}),
            ('b', {'DISK_GB': {'total': 100}})):
        uuid = client.post('/resource_providers',
                           json={'name': name}).json['uuid']
        client.put('/resource_providers/%s/inventories' % uuid, json={
            'resource_provider_generation': 0, 'inventories': inventories})
        found[name] = uuid
    return found


def _fresh_answer(conf, database_url, query):
    """What a brand-new service (no state yet) answers."""
    conf.set_override('connection', database_url, group='placement_database')
    database = engine.Database.from_conf(conf)
    try:
        client = Client(webtest.TestApp(
            placement_app.build_app(conf, database, prepare=False)))
        return _answer(client, query)
    finally:
        database.dispose()


def _answer(client, query):
    response = client.get('/allocation_candidates?' + query, status='*')
    return response.status_int, response.json


def _provider_id(conn, uuid):
    return conn.exec_driver_sql(
        "SELECT id FROM resource_providers WHERE uuid = '%s'"
        % uuid).scalar()


def _insert_provider(conn, cloud):
    conn.exec_driver_sql(
        "INSERT INTO resource_providers (uuid, name, generation) "
        "VALUES ('%s', 'c', 0)" % NEW_UUID)
    new = _provider_id(conn, NEW_UUID)
    conn.exec_driver_sql('UPDATE resource_providers SET root_provider_id = '
                         '%d WHERE id = %d' % (new, new))
    conn.exec_driver_sql(
        'INSERT INTO inventories (resource_provider_id, resource_class_id, '
        'total, reserved, min_unit, max_unit, step_size, allocation_ratio) '
        'VALUES (%d, 0, 8, 0, 1, 8, 1, 1.0)' % new)


def _move_provider(conn, cloud):
    a = _provider_id(conn, cloud['a'])
    conn.exec_driver_sql(
        'UPDATE resource_providers SET parent_provider_id = %d, '
        'root_provider_id = %d WHERE id = %d'
        % (a, a, _provider_id(conn, cloud['b'])))


def _delete_provider(conn, cloud):
    b = _provider_id(conn, cloud['b'])
    conn.exec_driver_sql('DELETE FROM inventories WHERE '
                         'resource_provider_id = %d' % b)
    # InnoDB checks a row's reference to itself too.
    conn.exec_driver_sql('UPDATE resource_providers SET root_provider_id = '
                         'NULL WHERE id = %d' % b)
    conn.exec_driver_sql('DELETE FROM resource_providers WHERE id = %d' % b)


def _grow_inventory(conn, cloud):
    conn.exec_driver_sql(
        'UPDATE inventories SET total = 16, max_unit = 16 WHERE '
        'resource_provider_id = %d AND resource_class_id = 0'
        % _provider_id(conn, cloud['a']))


def _allocate(conn, cloud):
    conn.exec_driver_sql(
        "INSERT INTO allocations (resource_provider_id, consumer_id, "
        "resource_class_id, used) VALUES (%d, '%s', 0, 4)"
        % (_provider_id(conn, cloud['a']), CONSUMER))


def _link_trait(conn, cloud):
    conn.exec_driver_sql(
        "INSERT INTO resource_provider_traits (resource_provider_id, "
        "trait_id) SELECT %d, id FROM traits WHERE name = 'CUSTOM_FAST'"
        % _provider_id(conn, cloud['a']))


def _link_aggregate(conn, cloud):
    conn.exec_driver_sql("INSERT INTO placement_aggregates (uuid) "
                         "VALUES ('%s')" % AGG)
    conn.exec_driver_sql(
        "INSERT INTO resource_provider_aggregates (resource_provider_id, "
        "aggregate_id) SELECT %d, id FROM placement_aggregates "
        "WHERE uuid = '%s'" % (_provider_id(conn, cloud['a']), AGG))


def _rename_class(conn, cloud):
    conn.exec_driver_sql("UPDATE resource_classes SET name = 'CUSTOM_NEW' "
                         "WHERE name = 'CUSTOM_OLD'")


# (foreign write, the query whose answer it changes)
WRITES = {
    'insert a provider': (_insert_provider, 'resources=VCPU:1'),
    'move a provider into a tree': (_move_provider,
                                    'resources=VCPU:1,DISK_GB:10'),
    'delete a provider': (_delete_provider, 'resources=DISK_GB:10'),
    'change an inventory': (_grow_inventory, 'resources=VCPU:8'),
    'allocate': (_allocate, 'resources=VCPU:1'),
    'link a trait': (_link_trait, 'resources=VCPU:1&required=CUSTOM_FAST'),
    'link an aggregate': (_link_aggregate,
                          'resources=VCPU:1&member_of=%s' % AGG),
    'rename a class': (_rename_class, 'resources=CUSTOM_NEW:1'),
}


@pytest.mark.parametrize('write', sorted(WRITES))
def test_a_foreign_write_is_seen_by_the_next_search(
        client, cloud, foreign, conf, database_url, write):
    change, query = WRITES[write]
    before = _answer(client, query)
    with foreign.begin() as conn:
        change(conn, cloud)
    after = _answer(client, query)
    assert after != before
    assert after == _fresh_answer(conf, database_url, query)


def test_a_foreign_write_is_logged_as_everything(client, cloud, foreign,
                                                 db):
    start = db.read(changes.current)
    with foreign.begin() as conn:
        _allocate(conn, cloud)
        _grow_inventory(conn, cloud)
    stamp = db.read(changes.current)
    assert stamp.total > start.total
    assert db.read(changes.changed_between, start, stamp) == {
        changes.EVERYTHING}


def test_a_foreign_rename_or_generation_bump_is_seen_at_once(
        client, cloud, foreign, db):
    """The provider listing answers from the in-memory state, names and
    generations included: a foreign update of those alone (upstream bumps
    a generation on every write to a provider) is logged too."""
    def listed():
        return {rp['uuid']: (rp['name'], rp['generation']) for rp in
                client.get('/resource_providers').json['resource_providers']}

    before = listed()
    start = db.read(changes.current)
    with foreign.begin() as conn:
        conn.exec_driver_sql(
            'UPDATE resource_providers SET generation = generation + 1, '
            "name = 'renamed' WHERE uuid = '%s'" % cloud['a'])
    assert db.read(changes.current).total > start.total
    assert listed() == dict(before, **{
        cloud['a']: ('renamed', before[cloud['a']][1] + 1)})


def test_a_foreign_write_rolled_back_is_not_logged(client, cloud, foreign,
                                                    db):
    start = db.read(changes.current)
    with foreign.connect() as conn:
        with conn.begin() as transaction:
            _allocate(conn, cloud)
            transaction.rollback()
    assert db.read(changes.current) == start


def test_our_own_writes_leave_no_mark_behind(client, cloud, db):
    """The SQLite mark of our own write transactions is never committed
    (else every foreign write after it would go unseen)."""
    assert db.read(lambda conn: conn.exec_driver_sql(
        'SELECT MAX(own_write) FROM placement_change_stamp').scalar()) == 0


def test_our_writes_stay_ours_after_a_rollback(client, cloud, db):
    """The mark our connections carry outlives the transactions on them,
    a rolled-back first one included."""
    def fails(conn):
        conn.exec_driver_sql('DELETE FROM allocations')
        raise ValueError('no')

    db.engine.dispose()     # the next transaction is a new connection's
    with pytest.raises(ValueError):
        db.write(fails)
    start = db.read(changes.current)
    client.put('/resource_providers/%s/traits' % cloud['a'], json={
        'resource_provider_generation': 1, 'traits': ['CUSTOM_FAST']})
    stamp = db.read(changes.current)
    provider_id = db.read(_provider_id, cloud['a'])
    assert (stamp.total, db.read(changes.changed_between, start, stamp)) == (
        start.total + 1, {provider_id})


@pytest.mark.backends('postgresql')
def test_a_foreign_truncate_is_seen_by_the_next_search(client, cloud,
                                                       foreign):
    client.put('/allocations/' + CONSUMER, json={
        'allocations': {cloud['a']: {'resources': {'VCPU': 4}}},
        'project_id': CONSUMER, 'user_id': CONSUMER,
        'consumer_type': 'INSTANCE', 'consumer_generation': None})
    query = 'resources=VCPU:1'
    assert _answer(client, query)[1]['allocation_requests'] == []
    with foreign.begin() as conn:
        conn.exec_driver_sql('TRUNCATE allocations')
    assert len(_answer(client, query)[1]['allocation_requests']) == 1


@pytest.mark.backends('postgresql')
def test_a_foreign_transaction_takes_the_stamp_at_its_commit(
        client, cloud, foreign, conf, database_url):
    """As this service's own do, so that a foreign transaction left open
    holds up none of ours, and the two never lock in opposite orders."""
    query = 'resources=VCPU:1'
    with foreign.connect() as conn:
        transaction = conn.begin()
        _allocate(conn, cloud)
        ours = threading.Thread(target=client.post, args=(
            '/resource_providers',), kwargs={'json': {'name': 'c'}})
        ours.start()
        ours.join(10)
        finished = not ours.is_alive()
        transaction.commit()
    ours.join()
    assert finished
    assert _answer(client, query) == _fresh_answer(conf, database_url,
                                                   query)


# -- a MariaDB server that refuses triggers ---------------------------------

@pytest.fixture(scope='module')
def binlog_server():
    """A MariaDB server with binary logging on, where CREATE TRIGGER needs
    SUPER (or log_bin_trust_function_creators)."""
    installed.require('MariaDB', mariadb_server.installed)
    server = mariadb_server.Server().start(extra_options=('--log-bin',))
    yield server
    server.stop()


def _trigger_count(conn):
    return conn.exec_driver_sql(
        'SELECT COUNT(*) FROM information_schema.triggers '
        'WHERE trigger_schema = database()').scalar()


@pytest.mark.backends('mysql')
def test_triggers_refused_by_the_server_leave_the_upgrade_whole(
        backend, binlog_server, conf, caplog):
    binlog_server.create_database('limited')
    binlog_server.execute(
        "CREATE USER 'placement'@'%'",
        "GRANT ALL PRIVILEGES ON limited.* TO 'placement'@'%'")
    url = ('mysql+pymysql://placement@127.0.0.1:%d/limited?charset=utf8mb4'
           % binlog_server.port)
    database = engine.Database(engine.create_engine(url))
    try:
        with caplog.at_level(logging.WARNING):
            migration.upgrade(database.engine)
        assert 'refused to create triggers' in caplog.text
        assert migration.current_revision(database.engine) == \
            migration.head_revision()
        with database.engine.connect() as conn:
            assert _trigger_count(conn) == 0
        conf.set_override('connection', url, group='placement_database')
        assert status.check_foreign_writes(conf).code == status.WARNING
        # README's remedy, once the server allows triggers: placement-manage
        # db stamp 0003, then db sync.
        binlog_server.execute(
            'SET GLOBAL log_bin_trust_function_creators = 1')
        migration.stamp(database.engine, '0003')
        migration.upgrade(database.engine)
        with database.engine.connect() as conn:
            assert _trigger_count(conn) == 36
        assert status.check_foreign_writes(conf).code == status.SUCCESS
    finally:
        database.dispose()
