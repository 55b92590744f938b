"""The in-memory candidate state is exact, across processes and hosts.

Each process keeps the candidate-relevant state in memory and brings it
up to date from the change log before every search
(``placement.state.snapshot``).  These tests write through one
service and read through another that has been answering all along, and
require every answer to equal the one a brand-new service (whose state is
a fresh read of the database) gives at that moment:

- in-process, two applications on one database (each with its own
  Database, so its own state), through a seeded random sequence of every
  kind of write candidates can see;
- with real ``placement-api`` processes: two servers on one database, as
  two hosts would be, writing through one and reading through the other
  at once;
- and the change log itself: what each write records, pruning, and a
  state too far behind or facing a replaced database reloading whole.
"""

import random
import uuid as uuidlib

import pytest
import webtest

from placement import app as placement_app
from placement.state import providers
from placement.state import snapshot
from placement.storage import changes
from placement.storage import engine

from tests.conftest import Client
from tests.functional import server

NAMESPACE = uuidlib.UUID('a3c1f3a4-5b1e-4c53-8d8f-2f4e6f0f7c11')
AGGS = [str(uuidlib.uuid5(NAMESPACE, 'agg%d' % i)) for i in range(3)]
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))

QUERIES = [
    'resources=VCPU:1,MEMORY_MB:256',
    'resources=VCPU:2&required=CUSTOM_FAST',
    'resources=VCPU:1,DISK_GB:10&member_of=in:%s,%s' % (AGGS[0], AGGS[1]),
    'resources=DISK_GB:20&required=!CUSTOM_SLOW',
    'resources1=VCPU:1&resources2=CUSTOM_GPU:1&group_policy=isolate',
    'resources1=VCPU:1&resources2=CUSTOM_GPU:1&group_policy=none'
    '&same_subtree=1,2',
    'resources=VCPU:1&root_required=CUSTOM_FAST&limit=3',
    'resources=CUSTOM_GPU:1&limit=2',
]


LISTINGS = [
    ('', '1.39'),
    ('', '1.0'),
    ('?resources=VCPU:1,MEMORY_MB:256', '1.39'),
    ('?resources=CUSTOM_GPU:2', '1.4'),
    ('?resources=CUSTOM_NOPE:1', '1.39'),
]


def _uuid(*parts):
    return str(uuidlib.uuid5(NAMESPACE, '/'.join(map(str, parts))))


def _app(conf, database_url):
    """A service of its own on the database: its own engine, so its own
    in-memory state."""
    conf.set_override('connection', database_url, group='placement_database')
    database = engine.Database.from_conf(conf)
    return Client(webtest.TestApp(
        placement_app.build_app(conf, database, prepare=False))), database


def _answers(client):
    """Every query's answer (status and body) at the latest version, and
    the traits answer at 1.16 (before traits in summaries) for one."""
    found = []
    for query in QUERIES:
        response = client.get('/allocation_candidates?' + query,
                              status='*')
        found.append((query, response.status_int, response.json))
    response = client.get('/allocation_candidates?' + QUERIES[0],
                          version='1.16', status='*')
    found.append(('1.16', response.status_int, response.json))
    # Listings answered from the same state, with their Last-Modified.
    for query, version in LISTINGS:
        response = client.get('/resource_providers' + query,
                              version=version, status='*')
        body = response.json
        for error in body.get('errors', ()):
            del error['request_id']
        # An empty listing's Last-Modified is the time of the answer.
        found.append((query, version, response.status_int, body,
                      response.headers.get('Last-Modified')
                      if body.get('resource_providers') else None))
    return found


def _lookups(state):
    """The sorted ids and roots, and each sharing provider's roots."""
    return (list(state.ordered()), list(state.roots()),
            {id_: state.shared_roots(state.provider(id_))[1]
             for id_ in state.sharing})


class _Writer:
    """Random writes of every kind candidates can see, through a client."""

    def __init__(self, client, rng):
        self.client = client
        self.rng = rng
        self.providers = []     # uuids, parents before children
        self.consumers = set()
        self.classes = ['CUSTOM_GPU']

    def generation(self, uuid):
        return self.client.get('/resource_providers/' + uuid).json[
            'generation']

    def create(self):
        uuid = _uuid('rp', len(self.providers), self.rng.random())
        body = {'name': uuid, 'uuid': uuid}
        if self.providers and self.rng.random() < 0.4:
            body['parent_provider_uuid'] = self.rng.choice(self.providers)
        self.client.post('/resource_providers', json=body)
        self.providers.append(uuid)

    def inventory(self):
        uuid = self.rng.choice(self.providers)
        inventories = {}
        for name in self.rng.sample(['VCPU', 'MEMORY_MB', 'DISK_GB']
                                    + self.classes, 2):
            inventories[name] = {
                'total': self.rng.randint(1, 64),
                'reserved': self.rng.choice([0, 1]),
                'allocation_ratio': self.rng.choice([1.0, 2.0])}
        self.client.put('/resource_providers/%s/inventories' % uuid,
                        json={'resource_provider_generation':
                              self.generation(uuid),
                              'inventories': inventories}, status='*')

    def traits(self):
        uuid = self.rng.choice(self.providers)
        names = self.rng.sample(['CUSTOM_FAST', 'CUSTOM_SLOW',
                                 'MISC_SHARES_VIA_AGGREGATE'],
                                self.rng.randint(0, 2))
        self.client.put('/resource_providers/%s/traits' % uuid,
                        json={'resource_provider_generation':
                              self.generation(uuid), 'traits': names})

    def aggregates(self):
        uuid = self.rng.choice(self.providers)
        self.client.put('/resource_providers/%s/aggregates' % uuid,
                        json={'resource_provider_generation':
                              self.generation(uuid),
                              'aggregates': self.rng.sample(
                                  AGGS, self.rng.randint(0, 2))})

    def allocate(self):
        uuid = self.rng.choice(self.providers)
        inventory = self.client.get(
            '/resource_providers/%s/inventories' % uuid).json['inventories']
        if not inventory:
            return
        name = self.rng.choice(sorted(inventory))
        consumer = _uuid('consumer', self.rng.random())
        status = self.client.put('/allocations/' + consumer, json={
            'allocations': {uuid: {'resources': {name: 1}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_type': 'INSTANCE', 'consumer_generation': None},
            status='*').status_int
        assert status in (204, 409)
        if status == 204:
            self.consumers.add(consumer)

    def free(self):
        if self.consumers:
            consumer = self.rng.choice(sorted(self.consumers))
            self.consumers.discard(consumer)
            self.client.delete('/allocations/' + consumer)

    def reparent(self):
        uuid = self.rng.choice(self.providers)
        parent = self.rng.choice(self.providers + [None])
        self.client.put('/resource_providers/' + uuid, json={
            'name': uuid, 'parent_provider_uuid': parent}, status='*')

    def delete(self):
        self.client.delete('/resource_providers/' + self.rng.choice(
            self.providers), status='*')
        listed = self.client.get('/resource_providers').json
        self.providers = [uuid for uuid in self.providers if uuid in {
            p['uuid'] for p in listed['resource_providers']}]

    def names(self):
        """A class appears (or goes), a trait goes and comes back."""
        if 'CUSTOM_NPU' in self.classes and self.rng.random() < 0.5:
            if self.client.delete('/resource_classes/CUSTOM_NPU',
                                  status='*').status_int == 204:
                self.classes.remove('CUSTOM_NPU')
        elif 'CUSTOM_NPU' not in self.classes:
            self.client.put('/resource_classes/CUSTOM_NPU')
            self.classes.append('CUSTOM_NPU')
        if self.client.delete('/traits/CUSTOM_SLOW',
                              status='*').status_int == 204:
            self.client.put('/traits/CUSTOM_SLOW')

    def step(self):
        if len(self.providers) < 3:
            return self.create()
        action = self.rng.choice([
            self.create, self.inventory, self.inventory, self.traits,
            self.aggregates, self.allocate, self.allocate, self.free,
            self.reparent, self.delete, self.names])
        action()
        return action.__name__


@pytest.fixture
def full_loads(monkeypatch):
    """How many times any state was read whole."""
    loads = []
    original = providers.State._load_providers

    def counting(self, conn, ids=None):
        if ids is None:
            loads.append(self)
        return original(self, conn, ids)

    monkeypatch.setattr(providers.State, '_load_providers', counting)
    return loads


@pytest.mark.parametrize('seed', [1, 2])
def test_a_long_lived_state_answers_as_a_fresh_read(conf, database_url,
                                                   seed, full_loads):
    writer_client, writer_db = _app(conf, database_url)
    reader, reader_db = _app(conf, database_url)
    writer_client.put('/traits/CUSTOM_FAST')
    writer_client.put('/traits/CUSTOM_SLOW')
    writer_client.put('/resource_classes/CUSTOM_GPU')
    writer = _Writer(writer_client, random.Random(seed))
    actions = set()
    for step in range(60):
        actions.add(writer.step())
        fresh, fresh_db = _app(conf, database_url)
        try:
            expected = _answers(fresh)
        finally:
            fresh_db.dispose()
        assert _answers(reader) == expected, (step, actions)
        # What the lookups keep between catch-ups (changed in place, or
        # forgotten only where a change reaches them) is as worked out
        # afresh.
        assert _lookups(snapshot.of(reader_db).state) == _lookups(
            snapshot.of(fresh_db).state), (step, actions)
    assert {'inventory', 'allocate', 'free', 'reparent', 'delete',
            'names', 'traits', 'aggregates'} <= actions
    # The reader followed the log: it read the database whole once, at
    # its first request, and only what changed afterwards.
    reader_state = snapshot.of(reader_db).state
    assert full_loads.count(reader_state) == 1
    assert reader_state.position == reader_db.read(changes.current)
    writer_db.dispose()
    reader_db.dispose()


def _tree(port, name, vcpus):
    uuid = _uuid('server-rp', name)
    status, body = server.request(port, 'POST', '/resource_providers',
                                  {'name': name, 'uuid': uuid})
    assert status == 200, body
    status, body = server.request(
        port, 'PUT', '/resource_providers/%s/inventories' % uuid,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': vcpus}}})
    assert status == 200, body
    return uuid


def test_writes_through_one_server_are_seen_by_another_at_once(
        database_url, tmp_path):
    """Two placement-api servers (two hosts, two workers each) on one
    database: every claim made through one is seen by the other's very
    next answer, whichever of its workers answers."""
    one, two = tmp_path / 'one', tmp_path / 'two'
    one.mkdir()
    two.mkdir()
    query = '/allocation_candidates?resources=VCPU:2'
    with server.running(database_url, one) as first, \
            server.running(database_url, two) as second:
        hosts = [_tree(first, 'host%d' % i, 4) for i in range(3)]
        for port in (first, second):
            status, body = server.request(port, 'GET', query)
            assert len(body['allocation_requests']) == 3
        # Fill the hosts through the first server, one claim at a time;
        # after each, both workers of the second must know.
        free = {uuid: 4 for uuid in hosts}
        for n in range(6):
            host = hosts[n % 3]
            status, body = server.request(
                first, 'PUT', '/allocations/' + _uuid('claim', n),
                {'allocations': {host: {'resources': {'VCPU': 2}}},
                 'project_id': PROJECT, 'user_id': USER,
                 'consumer_type': 'INSTANCE', 'consumer_generation': None})
            assert status == 204, body
            free[host] -= 2
            for _ in range(4):
                status, body = server.request(second, 'GET', query)
                assert status == 200
                assert sorted(
                    uuid for request in body['allocation_requests']
                    for uuid in request['allocations']) == sorted(
                        uuid for uuid, left in free.items() if left >= 2)
                assert {uuid: summary['resources']['VCPU']['used']
                        for uuid, summary in body['provider_summaries'].items()
                        } == {uuid: 4 - free[uuid]
                              for uuid in hosts if free[uuid] >= 2}
        # And a provider created through the second is a candidate of
        # the first at once.
        extra = _tree(second, 'host-extra', 8)
        status, body = server.request(first, 'GET', query)
        assert [list(request['allocations'])
                for request in body['allocation_requests']] == [[extra]]


# -- the change log --------------------------------------------------------

def _logged(db, since):
    """(the log's Position now, the providers logged since ``since``)."""
    now = db.read(changes.current)
    return now, db.read(changes.changed_between, since, now)


def test_each_write_logs_the_providers_it_changed(client, db):
    start = db.read(changes.current)
    rp = client.post('/resource_providers', json={'name': 'a'}).json
    stamp, logged = _logged(db, start)
    provider_id = db.read(lambda conn: conn.exec_driver_sql(
        "SELECT id FROM resource_providers WHERE uuid = '%s'"
        % rp['uuid']).scalar())
    assert logged == {provider_id}
    client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}})
    after, logged = _logged(db, stamp)
    assert (after.total, logged) == (stamp.total + 1, {provider_id})
    client.put('/allocations/' + _uuid('c'), json={
        'allocations': {rp['uuid']: {'resources': {'VCPU': 1}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    client.delete('/allocations/' + _uuid('c'))
    stamp, logged = _logged(db, after)
    # The consumer's project is logged too (``project_usages``).
    project_id = db.read(lambda conn: conn.exec_driver_sql(
        "SELECT id FROM projects WHERE external_id = '%s'"
        % PROJECT).scalar())
    assert (stamp.total, changes.split(logged)) == (
        after.total + 2, ({provider_id}, {project_id}))
    # Names: a new class or trait is logged as such, an existing one
    # changes nothing and takes no stamp.
    client.put('/traits/CUSTOM_NEW')
    client.put('/resource_classes/CUSTOM_NEW')
    after, logged = _logged(db, stamp)
    assert (after.total, logged) == (stamp.total + 2, {changes.NAMES})
    client.put('/traits/CUSTOM_NEW')
    client.put('/resource_classes/CUSTOM_NEW')
    client.put('/resource_providers/%s/traits' % rp['uuid'], json={
        'resource_provider_generation': 2, 'traits': []})
    assert db.read(changes.current) == after


def test_a_write_that_does_not_say_what_it_changed_is_everything(db):
    start = db.read(changes.current)
    db.write(lambda conn: conn.exec_driver_sql(
        "UPDATE resource_classes SET updated_at = NULL WHERE id = 0"))
    stamp, logged = _logged(db, start)
    assert (stamp.total, logged) == (start.total + 1, {changes.EVERYTHING})


def test_the_log_is_pruned_and_a_state_behind_it_reloads_whole(
        client, db, monkeypatch, full_loads):
    monkeypatch.setattr(changes, 'KEEP', 5)
    monkeypatch.setattr(changes, 'PRUNE_EVERY', 3)
    query = '/allocation_candidates?resources=VCPU:1'
    assert client.get(query).json['allocation_requests'] == []
    assert len(full_loads) == 1
    uuids = [client.post('/resource_providers',
                         json={'name': 'rp%d' % i}).json['uuid']
             for i in range(12)]
    # One writer at a time: every stamp is shard 1's.
    stamp, pruned_below = db.read(changes.current).shards[1]
    assert 0 < pruned_below <= stamp - 5
    assert min(db.read(lambda conn: conn.exec_driver_sql(
        'SELECT stamp FROM placement_provider_changes').scalars().all())
        ) >= pruned_below
    client.put('/resource_providers/%s/inventories' % uuids[0], json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}})
    body = client.get(query).json
    assert list(body['allocation_requests'][0]['allocations']) == [uuids[0]]
    assert len(full_loads) == 2


def test_a_replaced_database_is_read_whole(client, db, full_loads):
    """A stamp lower than the state's (the database was restored or
    recreated under a running service) reloads everything."""
    uuid = client.post('/resource_providers', json={'name': 'a'}).json['uuid']
    client.put('/resource_providers/%s/inventories' % uuid, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}})
    query = '/allocation_candidates?resources=VCPU:1'
    assert len(client.get(query).json['allocation_requests']) == 1
    db.write(lambda conn: (
        changes.touch(conn),
        conn.exec_driver_sql('DELETE FROM inventories'),
        conn.exec_driver_sql(
            'UPDATE placement_change_stamp SET stamp = 1')))
    assert client.get(query).json['allocation_requests'] == []
    assert len(full_loads) == 2


def test_a_recreated_stamp_row_is_read_whole(client, db, full_loads):
    """A database recreated under a running service whose stamps have
    already passed the state's: only the stamp row's epoch tells."""
    uuid = client.post('/resource_providers', json={'name': 'a'}).json['uuid']
    client.put('/resource_providers/%s/inventories' % uuid, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}})
    query = '/allocation_candidates?resources=VCPU:1'
    assert len(client.get(query).json['allocation_requests']) == 1
    stamp = db.read(changes.current).shards[1][0]
    db.write(lambda conn: (
        changes.touch(conn),
        conn.exec_driver_sql('DELETE FROM inventories'),
        conn.exec_driver_sql('DELETE FROM placement_provider_changes'),
        conn.exec_driver_sql('DELETE FROM placement_change_stamp'),
        conn.exec_driver_sql(
            "INSERT INTO placement_change_stamp (id, stamp, pruned_below, "
            "epoch, own_write, protocol) VALUES (1, %d, 0, 'another', 0, "
            "%d)" % (stamp + 5, changes.PROTOCOL))))
    assert client.get(query).json['allocation_requests'] == []
    assert len(full_loads) == 2


def test_a_starting_worker_reads_the_state_before_any_request(db, client):
    client.post('/resource_providers', json={'name': 'a'})
    warmed = snapshot.Snapshot(db)
    warmed.warm()
    assert warmed.state.position == db.read(changes.current)
    assert len(warmed.state.providers) == 1


def test_a_state_not_read_at_start_is_read_by_the_first_request(
        tmp_path, caplog):
    unreachable = engine.Database(engine.create_engine(
        'sqlite:///%s' % (tmp_path / 'missing' / 'placement.sqlite')))
    cold = snapshot.Snapshot(unreachable)
    cold.warm()
    assert cold.state.position is None
    assert 'not read at start' in caplog.text


def test_the_sorted_ids_are_kept_until_providers_come_or_go(client, db):
    """A usage change reloads its provider without sorting every id
    again (at 100,000 providers that sort costs more than the search);
    a new provider, or a child made a root, sorts them again."""
    rp = client.post('/resource_providers', json={'name': 'a'}).json
    child = client.post('/resource_providers', json={
        'name': 'b', 'parent_provider_uuid': rp['uuid']}).json
    client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}})
    kept = snapshot.of(db)

    def fresh_lists():
        with kept.fresh() as state:
            return state.ordered(), state.roots()

    ordered, roots = fresh_lists()
    client.put('/allocations/' + _uuid('sorted'), json={
        'allocations': {rp['uuid']: {'resources': {'VCPU': 1}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    again = fresh_lists()
    assert again[0] is ordered and again[1] is roots
    client.put('/resource_providers/%s' % child['uuid'], version='1.37',
               json={'name': 'b', 'parent_provider_uuid': None})
    ordered, roots = fresh_lists()
    assert len(ordered) == 2 and len(roots) == 2
    client.post('/resource_providers', json={'name': 'c'})
    ordered, roots = fresh_lists()
    assert len(ordered) == 3 and len(roots) == 3


def test_the_large_read_hook_runs_after_whole_or_many_reads(
        client, db, monkeypatch):
    """placement-api freezes what the state read out of the garbage
    collector's walks after each whole read, and after many providers
    were read again since; a few changed providers do not call it."""
    monkeypatch.setattr(snapshot, '_LARGE_READ', 3)
    calls = []
    kept = snapshot.Snapshot(db)
    kept.after_large_read = lambda: calls.append(kept.state.position)
    with kept.fresh():
        pass
    assert len(calls) == 1
    for name in ('a', 'b'):
        client.post('/resource_providers', json={'name': name})
        with kept.fresh():
            pass
    assert len(calls) == 1
    client.post('/resource_providers', json={'name': 'c'})
    with kept.fresh():
        pass
    assert len(calls) == 2
    db.write(lambda conn: conn.exec_driver_sql(
        "UPDATE resource_classes SET updated_at = NULL WHERE id = 0"))
    with kept.fresh():
        pass
    assert len(calls) == 3

def test_summaries_kept_are_bounded_and_counted(client, db, monkeypatch):
    """Summaries are kept on providers for at most SUMMARIES_KEPT in all
    (a bound on a worker's memory); a provider read again gives its
    place back, and answers are the same whether kept or not."""
    monkeypatch.setattr(providers.State, 'SUMMARIES_KEPT', 2)
    uuids = []
    for name in ('a', 'b', 'c'):
        rp = client.post('/resource_providers', json={'name': name}).json
        client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 8}}})
        uuids.append(rp['uuid'])
    query = '/allocation_candidates?resources=VCPU:1'
    first = client.get(query).json
    state = snapshot.of(db).state
    assert state._summaries_kept == 2
    assert sum(len(p.summaries or ()) for p in state.providers.values()) == 2
    assert client.get(query).json == first
    client.put('/allocations/' + _uuid('kept'), json={
        'allocations': {uuids[0]: {'resources': {'VCPU': 1}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    second = client.get(query).json
    assert second['provider_summaries'][uuids[0]]['resources'][
        'VCPU']['used'] == 1
    assert state._summaries_kept == sum(
        len(p.summaries or ()) for p in state.providers.values()) == 2


def test_an_unchanged_state_is_checked_outside_any_transaction(
        client, db, backend, monkeypatch):
    """On PostgreSQL the check every request makes first (has anything
    changed?) is one statement in autocommit, not a transaction: a
    transaction would cost BEGIN and COMMIT round trips besides."""
    client.post('/resource_providers', json={'name': 'a'})
    state = snapshot.Snapshot(db)
    with state.fresh():
        pass
    transactions = []
    original = engine.Database.run

    def counting(self, fn, *args, **kwargs):
        if not kwargs.get('write'):
            transactions.append(fn)
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(engine.Database, 'run', counting)
    with state.fresh() as current:
        assert len(current.providers) == 1
    assert len(transactions) == (0 if backend == 'postgresql' else 1)
    # A change is still read in a transaction, and seen.
    client.post('/resource_providers', json={'name': 'b'})
    with state.fresh() as current:
        assert len(current.providers) == 2
    assert len(transactions) == (1 if backend == 'postgresql' else 2)


def test_a_check_on_a_dropped_connection_falls_back_to_a_read(
        client, db, backend, database_url):
    """A pooled connection the server has dropped fails the check; the
    state is then read in a transaction, which retries on a fresh one,
    and the dropped connection leaves the pool."""
    if backend != 'postgresql':
        pytest.skip('the check outside a transaction is PostgreSQL only')
    client.post('/resource_providers', json={'name': 'a'})
    state = snapshot.Snapshot(db)
    with state.fresh():
        pass
    admin = engine.create_engine(database_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
            'WHERE datname = current_database() AND pid <> pg_backend_pid()')
    admin.dispose()
    assert changes.summary_outside_transaction(db) is None
    client.post('/resource_providers', json={'name': 'b'})
    with state.fresh() as current:
        assert len(current.providers) == 2
    assert changes.summary_outside_transaction(db) == db.read(
        changes.current).summary()


def test_alike_providers_share_their_inventory_until_one_changes(
        client, db):
    """Providers with the same inventory records and usage share one
    mapping of them (most compute nodes of a cloud are alike); a claim on
    one gives it its own, and the trees stay exact through a move."""
    rps = []
    for name in ('a', 'b', 'c'):
        rp = client.post('/resource_providers', json={'name': name}).json
        client.put('/resource_providers/%s/inventories' % rp['uuid'], json={
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {
                'total': 1024}}})
        rps.append(rp)
    state = snapshot.Snapshot(db)
    with state.fresh() as current:
        a, b, c = (current.provider_by_uuid(rp['uuid']) for rp in rps)
        assert a.inventory is b.inventory is c.inventory
    client.put('/allocations/' + _uuid('one'), json={
        'allocations': {rps[0]['uuid']: {'resources': {'VCPU': 1}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    client.put('/resource_providers/' + rps[2]['uuid'], json={
        'name': 'c', 'parent_provider_uuid': rps[1]['uuid']})
    with state.fresh() as current:
        a, b, c = (current.provider_by_uuid(rp['uuid']) for rp in rps)
        assert a.inventory is not b.inventory
        assert b.inventory is c.inventory
        assert a.inventory[current.class_id('VCPU')].used == 1
        assert {root: current.members(root) for root in current.roots()} \
            == {a.id: (a.id,), b.id: (b.id, c.id)}
        assert current.members(b.id) == (b.id, c.id)
