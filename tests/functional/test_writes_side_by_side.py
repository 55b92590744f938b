"""Writes commit side by side, and candidates stay exact meanwhile.

Every write logs what it changed under a stamp of one of several shards
(``storage.changes``), held only by that write until it commits.  So a
write held open must not hold up any other, and a reader must still see
exactly what was committed when its request began, even when writes
commit in another order than they took their stamps.
"""

import contextlib
import random
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from placement.storage import changes
from placement.storage import engine
from placement.storage import inventories
from placement.storage import postgresql
from placement.storage import providers_core
from placement.storage import resource_providers
from tests.functional import server

NAMESPACE = uuidlib.UUID('5b0c7f36-9c7e-4b4a-a0b8-0d7e1f1c2a3e')
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))
VCPUS = 8


def _uuid(*parts):
    return str(uuidlib.uuid5(NAMESPACE, '/'.join(map(str, parts))))


class _HeldCommit:
    """Holds every write transaction of one Database at its COMMIT (its
    stamp taken, its log written) until released."""

    def __init__(self, db):
        self.db = db
        self.reached = threading.Event()
        self.release = threading.Event()
        event.listen(db.engine, 'commit', self._wait)

    def _wait(self, _conn):
        self.reached.set()
        assert self.release.wait(60), 'never released'

    def close(self):
        event.remove(self.db.engine, 'commit', self._wait)
        self.release.set()
        self.db.dispose()


def _set_total(conn, uuid, total):
    provider = providers_core.get_by_uuid(conn, uuid)
    record = dict(total=total, reserved=0, min_unit=1, max_unit=total,
                  step_size=1, allocation_ratio=1.0)
    return inventories.update(conn, provider, 'VCPU', record)


def _provider(db, name):
    """A provider with VCPU, made through the storage layer."""
    uuid = _uuid('rp', name)

    def make(conn):
        provider = resource_providers.create(conn, name, uuid=uuid)
        inventories.create(conn, provider, 'VCPU', dict(
            total=VCPUS, reserved=0, min_unit=1, max_unit=VCPUS,
            step_size=1, allocation_ratio=1.0))

    db.write(make)
    return uuid


@pytest.mark.backends('postgresql', 'mysql')
def test_a_write_held_open_holds_up_no_other(database_url, backend,
                                             monkeypatch):
    """Two writers, two providers: while the first is held at its commit
    (after its stamp), the second commits, and a reader sees the second's
    change and not yet the first's.

    On PostgreSQL a write's stamp goes with its COMMIT, in one message,
    which leaves no moment to hold it in; they are sent apart here, so
    that the shard stays held as long as a slow COMMIT would hold it."""
    monkeypatch.setattr(postgresql, 'with_commit', lambda _conn, sql: sql)
    held_db = engine.Database(engine.create_engine(database_url))
    other_db = engine.Database(engine.create_engine(database_url))
    one, two = _provider(other_db, 'one'), _provider(other_db, 'two')
    held = _HeldCommit(held_db)
    writer = threading.Thread(
        target=held_db.write, args=(_set_total, one, 3))
    try:
        writer.start()
        assert held.reached.wait(30)
        started = time.monotonic()
        other_db.write(_set_total, two, 5)
        assert time.monotonic() - started < 5
        totals = other_db.read(lambda conn: dict(conn.execute(sa.text(
            'SELECT rp.uuid, inv.total FROM inventories inv JOIN '
            'resource_providers rp ON rp.id = inv.resource_provider_id'))
            .all()))
        assert totals == {one: VCPUS, two: 5}
    finally:
        held.release.set()
        writer.join(30)
        held.close()
    assert other_db.read(lambda conn: conn.scalar(sa.text(
        "SELECT inv.total FROM inventories inv JOIN resource_providers rp "
        "ON rp.id = inv.resource_provider_id WHERE rp.uuid = :uuid"),
        {'uuid': one})) == 3
    other_db.dispose()


@pytest.mark.backends('postgresql', 'mysql')
def test_with_every_shard_held_a_write_waits_for_one(database_url):
    """Only when another transaction holds every stamp row does a write
    wait, and it is logged once one is free."""
    db = engine.Database(engine.create_engine(database_url))
    one = _provider(db, 'one')
    start = db.read(changes.current)
    blocker = sa.create_engine(database_url)
    writer = threading.Thread(target=db.write, args=(_set_total, one, 3))
    with blocker.connect() as conn:
        transaction = conn.begin()
        conn.exec_driver_sql(
            'SELECT id FROM placement_change_stamp FOR UPDATE').all()
        writer.start()
        writer.join(1)
        assert writer.is_alive()
        transaction.rollback()
    writer.join(30)
    assert not writer.is_alive()
    blocker.dispose()
    now = db.read(changes.current)
    provider_id = db.read(lambda conn: providers_core.get_by_uuid(
        conn, one)['id'])
    assert now.total == start.total + 1
    assert db.read(changes.changed_between, start, now) == {provider_id}
    db.dispose()


@pytest.mark.backends('postgresql')
def test_every_one_of_many_concurrent_writes_is_logged(database_url):
    """Sixteen writers creating providers at once: each write is logged
    under a stamp of its own, so a state in memory sees every provider.
    PostgreSQL once picked its shard in a way that now and then updated
    no stamp row (5 in 3,200 such writes), and the write committed with
    nothing logged."""
    db = engine.Database(engine.create_engine(database_url))
    start = db.read(changes.current)
    created = []

    def create_some(thread):
        for number in range(250):
            provider = db.write(resource_providers.create,
                                'w-%d-%d' % (thread, number))
            created.append(provider['id'])

    writers = [threading.Thread(target=create_some, args=(thread,))
               for thread in range(16)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    now = db.read(changes.current)
    logged = db.read(changes.changed_between, start, now)
    db.dispose()
    assert len(created) == 16 * 250
    assert now.total == start.total + len(created)
    assert logged == set(created)


@pytest.mark.backends('mysql')
def test_a_server_that_cannot_skip_held_rows_still_logs(
        database_url, monkeypatch):
    """MariaDB before 10.6 has no SKIP LOCKED: writes then take a shard
    at random, waiting for it if held, and are logged the same."""
    monkeypatch.setattr(changes, '_skips_locked', lambda dialect: False)
    db = engine.Database(engine.create_engine(database_url))
    uuids = [_provider(db, 'rp%d' % n) for n in range(3)]
    start = db.read(changes.current)
    for total, uuid in enumerate(uuids, 4):
        db.write(_set_total, uuid, total)
    now = db.read(changes.current)
    assert now.total == start.total + 3
    assert len(db.read(changes.changed_between, start, now)) == 3
    db.dispose()


# -- the stress test ---------------------------------------------------------

_FRESH = sa.text(
    'SELECT rp.uuid, rp.generation, inv.total, inv.reserved, '
    'inv.allocation_ratio, (SELECT COALESCE(SUM(a.used), 0) '
    'FROM allocations a WHERE a.resource_provider_id = rp.id '
    'AND a.resource_class_id = inv.resource_class_id) '
    'FROM resource_providers rp JOIN inventories inv '
    'ON inv.resource_provider_id = rp.id')


def _fresh(reader):
    """{uuid: (generation, capacity, used)}: the database as one
    statement sees it, from a connection of no Placement process."""
    with reader.connect() as conn:
        rows = conn.execute(_FRESH).all()
    return {uuid: (generation, int((total - reserved) * ratio), int(used))
            for uuid, generation, total, reserved, ratio, used in rows}


class _Writers:
    """Threads claiming, freeing and resizing through the given servers
    until stopped; every answer must be a success or a lost race."""

    def __init__(self, ports, uuids, threads_each=3):
        self.stop = threading.Event()
        self.failures = []
        self.writes = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(port, uuids, seed))
            for seed, port in enumerate(
                [port for port in ports for _ in range(threads_each)])]

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        for thread in self._threads:
            thread.join(60)

    def _run(self, port, uuids, seed):
        rng = random.Random(seed)
        held = []
        while not self.stop.is_set():
            status, body = self._step(rng, port, uuids, held)
            with self._lock:
                if status in (200, 204):
                    self.writes += 1
                elif status != 409:
                    self.failures.append((status, body))

    @staticmethod
    def _step(rng, port, uuids, held):
        if held and (len(held) > 6 or rng.random() < 0.4):
            consumer = held.pop(rng.randrange(len(held)))
            return server.request(port, 'DELETE', '/allocations/' + consumer)
        provider = rng.choice(uuids)
        if rng.random() < 0.2:
            status, body = server.request(
                port, 'GET', '/resource_providers/%s/inventories' % provider)
            used = server.request(
                port, 'GET', '/resource_providers/%s/usages' % provider)[1]
            total = max(used['usages'].get('VCPU', 0), rng.randint(4, 12))
            return server.request(
                port, 'PUT', '/resource_providers/%s/inventories/VCPU'
                % provider, {'resource_provider_generation':
                             body['resource_provider_generation'],
                             'total': total, 'max_unit': total})
        consumer = str(uuidlib.UUID(int=rng.getrandbits(128)))
        status, body = server.request(port, 'PUT', '/allocations/' + consumer, {
            'allocations': {provider: {'resources': {
                'VCPU': rng.randint(1, 3)}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_type': 'INSTANCE', 'consumer_generation': None})
        if status == 204:
            held.append(consumer)
        return status, body


def _holder(database_url, uuids, stop, observed):
    """Over and over: a write through the storage layer held at its
    commit for a while, so that others commit after it took its stamp;
    ``observed`` counts those held writes and the writes others
    committed meanwhile."""
    rng = random.Random(7)
    watcher = engine.Database(engine.create_engine(database_url))
    db = engine.Database(engine.create_engine(database_url))
    held = _HeldCommit(db)
    try:
        while not stop.is_set():
            held.reached.clear()
            held.release.clear()
            writer = threading.Thread(target=_hold_one, args=(
                db, rng.choice(uuids), rng.randint(4, 12)))
            writer.start()
            while writer.is_alive() and not held.reached.wait(0.05):
                pass
            if held.reached.is_set():
                before = watcher.read(changes.current).total
                time.sleep(0.4)
                observed['overtaken'] += (
                    watcher.read(changes.current).total - before)
                observed['held'] += 1
            held.release.set()
            writer.join(60)
            time.sleep(0.1)
    finally:
        held.close()
        watcher.dispose()


def _hold_one(db, uuid, total):
    """Set a provider's total, to no less than its usage; a race lost to
    the HTTP writers ends the attempt."""
    def change(conn):
        provider = providers_core.get_by_uuid(conn, uuid)
        used = conn.scalar(sa.text(
            'SELECT COALESCE(SUM(used), 0) FROM allocations '
            'WHERE resource_provider_id = :id'), {'id': provider['id']})
        _set_total(conn, uuid, max(used, total))
    with contextlib.suppress(Exception):
        db.write(change)


def _check(answer, before, after, amount):
    """The answer of a candidates request made between two fresh reads:
    every provider that did not change in between must be a candidate
    exactly when it has room, with its summary as the database has it.
    The number checked."""
    assert answer[0] == 200, answer
    body = answer[1]
    candidates = {uuid for request in body['allocation_requests']
                  for uuid in request['allocations']}
    checked = 0
    for uuid, (generation, capacity, used) in before.items():
        if after.get(uuid) != (generation, capacity, used):
            continue
        checked += 1
        fits = capacity - used >= amount and amount <= capacity
        assert (uuid in candidates) == fits, (uuid, capacity, used)
        if fits:
            summary = body['provider_summaries'][uuid]['resources']['VCPU']
            assert (summary['capacity'], summary['used']) == (capacity, used)
    return checked


def test_candidates_stay_exact_while_writers_commit_out_of_order(
        database_url, backend, tmp_path):
    """Writers through two servers, one write held open at its commit
    again and again, and a reader through a third server: each answer
    equals the database as it was when the request began."""
    directories = [tmp_path / name for name in ('one', 'two', 'reader')]
    for directory in directories:
        directory.mkdir()
    setup_db = engine.Database(engine.create_engine(database_url))
    uuids = [_provider(setup_db, 'host%d' % n) for n in range(16)]
    setup_db.dispose()
    reader_engine = sa.create_engine(database_url)
    observed = {'held': 0, 'overtaken': 0}
    stop_holder = threading.Event()
    with contextlib.ExitStack() as stack:
        ports = [stack.enter_context(server.running(database_url, directory))
                 for directory in directories]
        holder = threading.Thread(target=_holder, args=(
            database_url, uuids, stop_holder, observed))
        writers = stack.enter_context(_Writers(ports[:2], uuids))
        holder.start()
        checked = answers = 0
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                amount = random.choice((1, 4))
                before = _fresh(reader_engine)
                answer = server.request(
                    ports[2], 'GET',
                    '/allocation_candidates?resources=VCPU:%d' % amount)
                after = _fresh(reader_engine)
                checked += _check(answer, before, after, amount)
                answers += 1
        finally:
            stop_holder.set()
            holder.join(120)
    reader_engine.dispose()
    assert writers.failures == []
    assert writers.writes > 100
    assert answers > 50 and checked > answers * 4
    assert observed['held'] > 5, observed
    if backend != 'sqlite':
        # Others committed while a write that took its stamp before them
        # was still open (SQLite serialises its writers instead).
        assert observed['overtaken'] > 0
