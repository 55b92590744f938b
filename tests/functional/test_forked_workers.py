"""A process forked after the application was built (placement-api,
uwsgi without ``lazy-apps``, gunicorn ``--preload``) uses nothing the
parent made that is not its own to use: no pooled connection, no lock;
it starts from the parent's candidate state, when no thread of the
parent was changing it at the fork, and catches up.

Forked here with ``os.fork``, whose hooks settle the child's state
(``per_process``); uwsgi forks from C and calls none, and the child then
learns of the fork by its pid (``tests/unit/test_per_process.py`` tests
both ways).  The parent's own database work in threads of its own
(``Database.between_forks``) is placement-api's parent's alone.
"""

import gc
import os
import signal
import struct
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.state import snapshot
from placement.storage import engine
from placement.storage import tables

# What identifies the server session a connection is, per backend.
_SESSION_ID = {'postgresql': 'SELECT pg_backend_pid()',
               'mysql': 'SELECT CONNECTION_ID()'}


def _in_child(work, timeout=20):
    """Run ``work()`` in a forked child; its return value (a short text)
    or the exception it raised, as text."""
    return _answer(*_fork(work, timeout))


def _fork(work, timeout):
    """(pid, pipe) of a child running ``work()``.  The child never
    returns into pytest: it writes its answer to the pipe and exits."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        os.close(read_end)
        try:
            # A child that would hang (a lock never released) is killed.
            signal.alarm(timeout)
            answer = 'ok:%s' % (work(),)
        except BaseException as error:  # noqa: BLE001 - reported to parent
            answer = 'error:%r' % (error,)
        os.write(write_end, answer.encode())
        os._exit(0)
    os.close(write_end)
    return pid, read_end


def _answer(pid, read_end):
    """What the child ``_fork`` made answered (empty: it was killed)."""
    with os.fdopen(read_end, 'rb') as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    return answer


def _session_id(db):
    def read(conn):
        return conn.exec_driver_sql(_SESSION_ID[db.backend]).scalar()
    return db.read(read)


@pytest.mark.backends('postgresql', 'mysql')
def test_a_forked_worker_opens_connections_of_its_own(db):
    """The parent's pooled connection (here, the one the application's
    build used) stays the parent's: the child is served by another
    server session, and the parent's still works afterwards."""
    parent_session = _session_id(db)
    child_session = _in_child(lambda: _session_id(db))
    assert child_session.startswith('ok:'), child_session
    assert child_session != 'ok:%s' % parent_session
    # The pool checked in the parent's connection; it is still alive and
    # still the parent's own session.
    assert _session_id(db) == parent_session


def test_a_forked_worker_is_not_blocked_by_a_lock_held_in_the_parent(db):
    """A fork while another thread of the parent holds the candidate
    state's locks (a search under way) must not leave the child waiting
    for a release that will never come in its copy."""
    state = snapshot.of(db)
    with snapshot._snapshots._objects.lock, state.lock:
        def search():
            with snapshot.of(db).fresh() as fresh:
                return len(fresh.providers)
        answer = _in_child(search)
    assert answer == 'ok:0', answer


def test_a_forked_worker_starts_from_the_parent_s_state_and_catches_up(
        db, client):
    """The child starts from the state its parent had read (sharing its
    pages, not reading everything again) and catches up with the change
    log at its first search: a provider written after the parent read
    its state is in the child's answer."""
    parent = snapshot.of(db)
    with parent.fresh() as parent_state:
        assert parent_state.providers == {}
    client.post('/resource_providers', json={'name': 'cn1'})

    def providers_seen():
        child = snapshot.of(db)
        inherited = child.state is parent_state
        with child.fresh() as state:
            return '%s,%s,%d' % (child is parent, inherited,
                                 len(state.providers))
    answer = _in_child(providers_seen)
    assert answer == 'ok:False,True,1', answer


def test_a_fork_waits_for_database_work_between_forks(db):
    """The fork is made once the block has ended and closed its
    connections; the child then reads with connections of its own."""
    inside, ended = threading.Event(), threading.Event()

    def work(conn):
        inside.set()
        time.sleep(0.3)
        return conn.scalar(sa.select(sa.func.count()).select_from(
            tables.resource_providers))

    def gauges():
        with db.between_forks():
            db.read(work)
            ended.set()

    thread = threading.Thread(target=gauges)
    thread.start()
    inside.wait()
    answer = _in_child(lambda: (ended.is_set(), db.read(work)))
    thread.join()
    assert answer == 'ok:(True, 0)', answer
    assert db.engine.pool.checkedin() == 0


@pytest.mark.backends('sqlite')
def test_workers_forked_while_the_parent_reads_lose_no_write(
        database_url):
    """placement-api's parent refreshes its gauges in a thread while it
    forks workers.  Each worker here writes a row and keeps its
    connection open, as a worker's pool does; every row must be in the
    database afterwards, seen by a connection opened then.  A fork in the
    middle of a read of the parent's broke the SQLite file's locks: a
    worker hung, or its committed rows were lost to everyone else."""
    parent = engine.Database(engine.create_engine(database_url))
    stop = threading.Event()

    def gauges():
        while not stop.is_set():
            with parent.between_forks():
                parent.read(lambda conn: conn.scalar(sa.text(
                    'SELECT COUNT(*) FROM traits')))

    def worker(number):
        own = engine.Database(engine.create_engine(database_url))
        own.write(lambda conn: conn.execute(tables.traits.insert().values(
            name='CUSTOM_FORKED_%d' % number)))
        time.sleep(1)   # its connection open while the next ones fork
        return number

    thread = threading.Thread(target=gauges)
    thread.start()
    try:
        children = []
        for number in range(20):
            children.append(_fork(lambda: worker(number), 15))
            time.sleep(0.02)
        answers = [_answer(*child) for child in children]
    finally:
        stop.set()
        thread.join()
        parent.dispose()
    assert answers == ['ok:%d' % number for number in range(20)]
    fresh = engine.Database(engine.create_engine(database_url))
    try:
        assert fresh.read(lambda conn: conn.scalar(sa.text(
            "SELECT COUNT(*) FROM traits "
            "WHERE name LIKE 'CUSTOM_FORKED_%'"))) == 20
    finally:
        fresh.dispose()


def _frames(pid, pages):
    """{page: the physical frame process ``pid`` maps it to} for the
    virtual ``pages`` it has in memory (/proc/PID/pagemap; the frames
    read as 0 without CAP_SYS_ADMIN)."""
    found = {}
    with open('/proc/%d/pagemap' % pid, 'rb') as pagemap:
        for page in pages:
            pagemap.seek(page * 8)
            entry, = struct.unpack('<Q', pagemap.read(8))
            if entry >> 63:     # present
                found[page] = entry & ((1 << 55) - 1)
    return found


def _sharing_cloud(client, database_url, nodes=2000):
    """A storage pool shared with ``nodes`` compute nodes through one
    aggregate; the nodes written in one transaction of a plain engine
    (a write by anything else: read whole by the next search)."""
    aggregate = str(uuidlib.uuid4())
    pool = client.post('/resource_providers', json={'name': 'pool'}).json
    client.put('/resource_providers/%s/inventories' % pool['uuid'], json={
        'resource_provider_generation': 0,
        'inventories': {'DISK_GB': {'total': 1000}}})
    client.put('/resource_providers/%s/traits' % pool['uuid'], json={
        'resource_provider_generation': 1,
        'traits': ['MISC_SHARES_VIA_AGGREGATE']})
    client.put('/resource_providers/%s/aggregates' % pool['uuid'], json={
        'resource_provider_generation': 2, 'aggregates': [aggregate]})
    plain = sa.create_engine(database_url)
    providers = tables.resource_providers
    try:
        with plain.begin() as conn:
            conn.execute(providers.insert(), [
                {'uuid': str(uuidlib.uuid4()), 'name': 'cn%d' % number,
                 'generation': 0} for number in range(nodes)])
            conn.execute(providers.update().where(
                providers.c.root_provider_id.is_(None)).values(
                    root_provider_id=providers.c.id))
            aggregate_id = conn.execute(sa.select(
                tables.placement_aggregates.c.id).where(
                    tables.placement_aggregates.c.uuid == aggregate)).scalar()
            conn.execute(tables.resource_provider_aggregates.insert(), [
                {'resource_provider_id': id_, 'aggregate_id': aggregate_id}
                for id_ in conn.execute(sa.select(providers.c.id).where(
                    providers.c.name.like('cn%'))).scalars()])
    finally:
        plain.dispose()


def _provider_pages_copied(db, work):
    """(pages of the state's providers a forked child copied while it
    ran ``work()`` with the cyclic collector off, how many pages they
    are on), the state read and its lookups worked out before the fork;
    skips where physical frames cannot be read."""
    parent = snapshot.of(db)
    parent.warm()
    pages = {id(provider) // os.sysconf('SC_PAGE_SIZE')
             for provider in parent.state.providers.values()}
    before = _frames(os.getpid(), pages)
    if not any(before.values()):
        pytest.skip('physical frames are unreadable without CAP_SYS_ADMIN')
    done_r, done_w = os.pipe()
    measured_r, measured_w = os.pipe()

    def worker():   # works, then waits to be measured
        os.close(measured_w)
        gc.disable()    # a collection would write to every page itself
        os.write(done_w, str(work()).encode())
        os.read(measured_r, 1)
    pid, answer_end = _fork(worker, 20)
    os.close(done_w)
    os.close(measured_r)
    try:
        done = os.read(done_r, 64)
        after = _frames(pid, pages)
    finally:
        os.close(measured_w)
        os.close(done_r)
        answer = _answer(pid, answer_end)
    assert done == b'1' and answer.startswith('ok:'), (done, answer)
    return sum(1 for page, frame in before.items()
               if after.get(page) != frame), len(pages)


def _one_candidate(client):
    return len(client.get('/allocation_candidates?resources=DISK_GB:1'
                          '&limit=1').json['allocation_requests'])


@pytest.mark.backends('sqlite')   # memory, not SQL: one backend tells
def test_a_forked_worker_s_first_search_leaves_the_parent_s_providers_shared(
        db, client, database_url):
    """The parent works out the state's lookups before it forks
    (``Snapshot.warm``), so a worker's first search does not: a sharing
    provider's roots, worked out there, took a reference to every
    provider of its aggregates and so copied the page of each into every
    worker.  Here the worker's first bounded search answers from a few
    trees and leaves most of the parent's provider pages shared (what
    it allocates may still land beside some of them)."""
    _sharing_cloud(client, database_url)
    copied, pages = _provider_pages_copied(db, lambda: _one_candidate(
        client))
    assert copied <= pages // 2, (copied, pages)


@pytest.mark.backends('sqlite')
def test_a_forked_worker_catching_up_leaves_the_parent_s_providers_shared(
        db, client, database_url):
    """A worker catching up with new names and a new provider changes
    what they change, not every provider: the sharing providers come
    from the trait's holders, kept summaries are dropped where kept, the
    sorted ids and roots change in place, and the pool's roots stay
    worked out (the new provider is in none of its aggregates).  Each of
    these walked every provider and so copied each page of them."""
    _sharing_cloud(client, database_url)

    def catch_up_and_search():
        client.put('/traits/CUSTOM_NEW', status=201)
        client.post('/resource_providers', json={'name': 'new'})
        return _one_candidate(client)
    copied, pages = _provider_pages_copied(db, catch_up_and_search)
    assert copied <= pages // 2, (copied, pages)
