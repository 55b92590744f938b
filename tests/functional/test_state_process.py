"""A host's state keeper and readers (``state.shared``, ``state.reader``,
``cmd.state_process``): what workers that load the application after the
fork ask instead of keeping a state each.

Every answer that comes from the state must be the same asked of a
reader as asked of this process's own state, errors included, and after
a write made elsewhere.  No process of them is a single point of
failure: a reader or the keeper stopped or killed costs no question more
than a second, and no answer; with every reader silent the worker
answers from a state of its own.  The keeper replaces readers that exit
or stop beating, a worker replaces a keeper that is gone or silent, and
all of them exit once no worker is connected, or when the server's
process group is told to stop.
"""

import contextlib
import os
import signal
import socket
import time
import uuid as uuidlib

import pytest

from placement import allocator
from placement.overview import summary
from placement.state import kept_answers
from placement.state import questions
from placement.state import shared
from placement.state import snapshot
from placement.state import wire
from tests import processes

NAMESPACE = uuidlib.UUID('6d0c1f5e-9a57-4b4e-8f0e-3c2b1a0d9e88')
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))
AGGREGATE = str(uuidlib.uuid5(NAMESPACE, 'aggregate'))
CANDIDATES = '/allocation_candidates?resources=VCPU:1'


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


def _start_keeper(config_file, idle_seconds=2, *more):
    client = shared.Client('placement-state-test-%s' % uuidlib.uuid4().hex,
                           ['--config-file', config_file, '--idle-seconds',
                            str(idle_seconds)] + list(more), readers=2)
    assert client.ready(60)
    return client


@pytest.fixture
def keeper(db, config_file, monkeypatch):
    """A Client of a keeper started (as a worker starts it) on the
    test's database, its two readers answering; this process's own
    state answers until a test says otherwise, and a fallback to it
    fails the test unless the test says it expects one."""
    client = _start_keeper(config_file)
    fell_back = []
    monkeypatch.setattr(snapshot, '_fell_back',
                        lambda why, to: fell_back.append((why.reason, to)))
    client.fell_back = fell_back
    yield client
    shared.answer_through(db, None)
    client.close()
    for pid in _processes(client.name):
        _signal(pid, signal.SIGCONT)
        _signal(pid, signal.SIGKILL)
    assert _gone(_processes(client.name), within=5)


def _processes(name):
    """The keeper ``name`` and its readers (forks of it)."""
    return processes.pids_where(lambda argv: name.encode() in argv)


def _pid_at(name):
    """The pid of the process listening on ``name``, or None."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(wire.address(name))
        except (ConnectionRefusedError, FileNotFoundError):
            return None
        return wire.peer(sock)[0]


def _reader(client, slot):
    """The pid of the reader in ``slot`` (as it says: the credentials of
    its socket are the keeper's, which listened on it before the fork),
    or None."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(wire.address(wire.slot_name(client.name, slot)))
            sock.settimeout(2)
            wire.send(sock, ('ping',))
            incoming = wire.Incoming(sock)
            if incoming.frame() != wire.ANSWER:
                return None
            return incoming.value()[1]
        except (OSError, EOFError):
            return None


def _signal(pid, number):
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def _gone(pids, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


def _state_of(pid):
    """The process's state letter (R, S, T for stopped, Z ...)."""
    with open('/proc/%d/stat' % pid) as handle:
        return handle.read().rsplit(')', 1)[1].split()[0]


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return not handle.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except (FileNotFoundError, ProcessLookupError):
        return False


def _until(condition, within, what):
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@contextlib.contextmanager
def _readers_stopped(keeper):
    """Both readers of ``keeper`` stopped (SIGSTOP) for the block."""
    readers = [_reader(keeper, slot) for slot in range(2)]
    for pid in readers:
        os.kill(pid, signal.SIGSTOP)
    try:
        _until(lambda: all(_state_of(pid) == 'T' for pid in readers), 5,
               'the readers did not stop')
        yield
    finally:
        for pid in readers:
            os.kill(pid, signal.SIGCONT)


def _world(client):
    """Two compute nodes, one with a NUMA child, a sharing disk pool in
    their aggregate, traits, and a server holding on one of them."""
    for name, parent in (('cn1', None), ('cn2', None), ('numa', 'cn1'),
                         ('pool', None)):
        body = {'name': name, 'uuid': _uuid(name)}
        if parent:
            body['parent_provider_uuid'] = _uuid(parent)
        client.post('/resource_providers', json=body)
    for name, inventories in (
            ('cn1', {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}}),
            ('cn2', {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024}}),
            ('numa', {'VCPU': {'total': 2}}),
            ('pool', {'DISK_GB': {'total': 500}})):
        client.put('/resource_providers/%s/inventories' % _uuid(name),
                   json={'resource_provider_generation': 0,
                         'inventories': inventories})
    client.put('/resource_providers/%s/traits' % _uuid('pool'), json={
        'resource_provider_generation': 1,
        'traits': ['MISC_SHARES_VIA_AGGREGATE']})
    client.put('/resource_providers/%s/traits' % _uuid('cn1'), json={
        'resource_provider_generation': 1, 'traits': ['HW_CPU_X86_AVX2']})
    for name, generation in (('cn1', 2), ('cn2', 1), ('pool', 2)):
        client.put('/resource_providers/%s/aggregates' % _uuid(name), json={
            'resource_provider_generation': generation,
            'aggregates': [AGGREGATE]})
    client.put('/allocations/' + _uuid('server'), json={
        'allocations': {_uuid('cn1'): {'resources': {'VCPU': 2}},
                        _uuid('pool'): {'resources': {'DISK_GB': 20}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})


def _reads():
    """Every kind of request answered from the state, and the errors
    the state decides."""
    cn1 = _uuid('cn1')
    yield from [
        ('GET', '/allocation_candidates?resources=VCPU:1,DISK_GB:10', None),
        ('GET', '/allocation_candidates?resources=VCPU:1'
                '&required=HW_CPU_X86_AVX2&limit=1', None),
        ('GET', '/allocation_candidates?resources1=VCPU:1'
                '&resources2=MEMORY_MB:64&group_policy=isolate', None),
        ('GET', '/allocation_candidates?resources=VCPU:1'
                '&required=CUSTOM_NOWHERE', None),
        ('GET', '/allocation_candidates?resources=CUSTOM_NOTHING:1', None),
        ('GET', '/allocation_candidates?resources=VCPU:100', None),
        ('GET', '/allocation_candidates/explain?resources=VCPU:7', None),
        ('GET', '/allocation_candidates/capacity?resources=VCPU:1', None),
        ('GET', '/resource_providers', None),
        ('GET', '/resource_providers?in_tree=%s' % cn1, None),
        ('GET', '/resource_providers?member_of=%s'
                '&required=MISC_SHARES_VIA_AGGREGATE' % AGGREGATE, None),
        ('GET', '/resource_providers?resources=VCPU:3', None),
        ('GET', '/resource_providers?required=CUSTOM_NOWHERE', None),
        ('GET', '/resource_providers/%s/usages' % cn1, None),
        ('GET', '/resource_providers/%s/traits' % cn1, None),
        ('GET', '/resource_providers/%s/aggregates' % cn1, None),
        ('GET', '/resource_providers/%s/usages' % _uuid('nowhere'), None),
        ('GET', '/overview', None),
        ('GET', '/overview/providers?free=VCPU:3&required=HW_CPU_X86_AVX2',
         None),
        ('GET', '/overview/providers?required=CUSTOM_NOWHERE', None),
        ('GET', '/overview/providers?marker=%s' % _uuid('nowhere'), None),
        ('GET', '/overview/providers/%s' % cn1, None),
        ('GET', '/overview/providers/%s' % _uuid('nowhere'), None),
        ('GET', '/audit', None),
        ('POST', '/audit/what_if', {'inventories': {cn1: {
            'VCPU': {'total': 1}}}}),
        ('POST', '/audit/what_if', {'inventories': {cn1: {
            'VCPU': {'total': 8, 'reserved': 9}}}}),
    ]


def _asked(client, method, path, body):
    kwargs = {'status': '*'}
    if body is not None:
        kwargs['json'] = body
    answer = client.request(method, path, **kwargs)
    body = answer.json
    for error in body.get('errors', ()):
        del error['request_id']     # each request's own
    return answer.status_int, body


def _timed(client, path=CANDIDATES):
    """(seconds, status, number of candidates) of one request."""
    began = time.monotonic()
    answer = client.get(path, status='*')
    return (time.monotonic() - began, answer.status_int,
            len(answer.json.get('allocation_requests', ())))


def test_every_answer_through_a_reader_is_this_process_s(
        client, db, keeper):
    _world(client)
    statuses = set()
    for method, path, body in _reads():
        here = _asked(client, method, path, body)
        shared.answer_through(db, keeper)
        try:
            there = _asked(client, method, path, body)
        finally:
            shared.answer_through(db, None)
        assert there == here, path
        statuses.add(here[0])
    # The reads cover answers and the errors decided on the state.
    assert statuses == {200, 400, 404}
    assert keeper.fell_back == []


def test_a_write_made_elsewhere_is_in_the_next_answer(
        client, db, keeper):
    _world(client)
    shared.answer_through(db, keeper)
    path = '/allocation_candidates?resources=VCPU:5'
    assert len(client.get(path).json['allocation_requests']) == 1
    # This process writes; the readers read what the log says.
    client.put('/resource_providers/%s/inventories/VCPU' % _uuid('cn2'),
               json={'resource_provider_generation': 2, 'total': 6})
    assert len(client.get(path).json['allocation_requests']) == 2
    assert keeper.fell_back == []


def test_one_keeper_per_name_its_readers_its_children_all_gone_when_idle(
        keeper):
    keeper_pid = _pid_at(keeper.name)
    readers = [_reader(keeper, slot) for slot in range(2)]
    assert all(processes.parent_of(pid) == keeper_pid for pid in readers)
    # A second start with the name held goes away; the first stays.
    keeper._start()
    time.sleep(3)
    assert _pid_at(keeper.name) == keeper_pid
    assert sorted(_processes(keeper.name)) == sorted([keeper_pid] + readers)
    # No worker connected: all of them exit (--idle-seconds 2).
    keeper.close()
    assert _gone([keeper_pid] + readers, within=10)


def test_a_stopped_reader_costs_no_question_a_second_and_is_replaced(
        client, db, keeper):
    _world(client)
    shared.answer_through(db, keeper)
    stopped = _reader(keeper, 0)    # this worker's own reader
    os.kill(stopped, signal.SIGSTOP)
    _until(lambda: _state_of(stopped) == 'T', 5, 'the reader did not stop')
    try:
        timings = [_timed(client) for _ in range(20)]
        assert all(seconds < 1 for seconds, _, _ in timings), timings
        assert {(status, count) for _, status, count in timings} == {
            (200, 3)}
        # The keeper kills a reader that stopped beating, and forks
        # another into its slot.
        _until(lambda: _reader(keeper, 0) not in (None, stopped), 10,
               'the stopped reader was not replaced')
    finally:
        _signal(stopped, signal.SIGCONT)
    assert not _alive(stopped)
    assert keeper.fell_back == []


def test_the_keeper_stopped_or_killed_costs_nothing_and_is_replaced(
        client, db, keeper):
    _world(client)
    shared.answer_through(db, keeper)
    first = _pid_at(keeper.name)
    os.kill(first, signal.SIGSTOP)
    try:
        timings = [_timed(client) for _ in range(10)]
    finally:
        os.kill(first, signal.SIGCONT)
    os.kill(first, signal.SIGKILL)
    timings += [_timed(client) for _ in range(10)]
    assert all(seconds < 1 and status == 200 and count == 3
               for seconds, status, count in timings), timings
    # Its readers go on; one gone, the worker starts a keeper, which
    # takes both slots back once it has read the state.
    orphans = [_reader(keeper, slot) for slot in range(2)]
    os.kill(orphans[1], signal.SIGKILL)

    def taken_back():
        timings.append(_timed(client))
        second = _pid_at(keeper.name)
        readers = [_reader(keeper, slot) for slot in range(2)]
        return second not in (None, first) and None not in readers and all(
            processes.parent_of(pid) == second for pid in readers)
    _until(taken_back, 30, 'the new keeper did not take the slots back')
    assert all(seconds < 1 and status == 200 and count == 3
               for seconds, status, count in timings), timings
    assert _gone(orphans, within=5)
    assert keeper.fell_back == []


def test_readers_grown_too_big_retire_one_at_a_time_costing_nothing(
        client, db, config_file, monkeypatch):
    """Past ``--reader-memory`` (1 MB here: always), the keeper retires
    its readers one after the other, each slot given to a fresh fork at
    once: every question is answered by a reader, within its usual
    time."""
    _world(client)
    keeper = _start_keeper(config_file, 2, '--reader-memory', '1')
    fell_back = []
    monkeypatch.setattr(snapshot, '_fell_back',
                        lambda why, to: fell_back.append((why.reason, to)))
    shared.answer_through(db, keeper)
    try:
        seen = set()
        timings = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            timings.append(_timed(client))
            seen.update(_reader(keeper, slot) for slot in range(2))
        assert all(seconds < 1 and status == 200 and count == 3
                   for seconds, status, count in timings), timings
        assert fell_back == []
        # Retired and replaced, more than once.
        assert len(seen - {None}) >= 4, seen
    finally:
        shared.answer_through(db, None)
        keeper.close()
        for pid in _processes(keeper.name):
            _signal(pid, signal.SIGKILL)


def test_every_reader_silent_the_worker_answers_from_its_own_state(
        client, db, keeper, monkeypatch):
    trims = []
    monkeypatch.setattr(allocator, 'give_back_free_memory',
                        lambda: trims.append(1))
    _world(client)
    shared.answer_through(db, keeper)
    assert _timed(client)[1:] == (200, 3)
    with _readers_stopped(keeper):
        timings = [_timed(client) for _ in range(5)]
    # The first waits for its deadline; the next ones skip the silent
    # readers; every answer is exact.
    assert timings[0][0] < shared.DEADLINE + 0.5, timings
    assert all(seconds < 0.5 for seconds, _, _ in timings[1:]), timings
    assert {(status, count) for _, status, count in timings} == {(200, 3)}
    assert keeper.fell_back == [
        ('unanswered', "this worker's own state")] * 5
    assert snapshot._snapshots.holds(db)
    # The readers (or those the keeper forked in their place) answer
    # again, and the worker lets its own state go.
    def readers_answer():
        keeper.fell_back.clear()
        client.get(CANDIDATES)
        return not keeper.fell_back
    _until(readers_answer, 15, 'the readers did not answer again')
    assert not snapshot._snapshots.holds(db)
    # ... and gives the memory it took back to the system.
    assert trims == [1]


def test_every_reader_silent_provider_reads_and_listings_come_from_sql(
        client, db, keeper):
    """A provider's usages, traits and aggregates, and the listings of
    providers, have an answer of their own, from SQL: with every reader
    stopped they are answered from the database, exactly, and the worker
    reads no state of its own (140 MB and seconds at 100,000
    providers)."""
    _world(client)
    paths = [path for _method, path, _body in _reads()
             if path.startswith('/resource_providers')]
    assert len([path for path in paths if '?' in path]) == 4
    expected = [_asked(client, 'GET', path, None) for path in paths]
    kept_answers._kept.forget(db)
    snapshot._snapshots.forget(db)
    shared.answer_through(db, keeper)
    with _readers_stopped(keeper):
        answers = [_asked(client, 'GET', path, None) for path in paths]
    assert answers == expected
    assert set(keeper.fell_back) == {('unanswered', 'the database')}
    assert not snapshot._snapshots.holds(db)


def test_searches_run_in_every_reader(client, keeper):
    """A worker asks its own reader first, and another when that one is
    busy: four workers asking at once keep both readers working."""
    _world(client)
    readers = [_reader(keeper, slot) for slot in range(2)]
    before = [_cpu_seconds(pid) for pid in readers]
    name = questions.name_of(summary.summary)

    def worker():
        own = shared.Client(keeper.name, [], readers=2)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert own.call(name, ())['providers'] == 4
        return 'asked'

    children = [_forked(worker) for _ in range(4)]
    assert [_answer_of(*child) for child in children] == ['ok:asked'] * 4
    used = [_cpu_seconds(pid) - seconds
            for pid, seconds in zip(readers, before)]
    # Each worked: a reader left idle spends a few ms beating.  (Each
    # spent more than 0.2 s on an idle machine; under a full test run's
    # load, the second reader 0.13.)
    assert all(seconds > 0.05 for seconds in used), used


def _forked(work):
    """(pid, pipe) of a child running ``work()``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            signal.alarm(20)
            answer = 'ok:%s' % (work(),)
        except BaseException as error:  # noqa: BLE001 - reported to parent
            answer = 'error:%r' % (error,)
        os.write(write_end, answer.encode())
        os._exit(0)
    os.close(write_end)
    return pid, read_end


def _answer_of(pid, read_end):
    with os.fdopen(read_end, 'rb') as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    return answer


def _cpu_seconds(pid):
    with open('/proc/%d/stat' % pid) as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


@pytest.mark.parametrize('number', [signal.SIGTERM, signal.SIGHUP])
def test_what_stops_the_server_stops_them(db, config_file, number):
    """uwsgi's workers ignore SIGTERM and SIGHUP, and a program one of
    them starts inherits that: the state process lived on after the
    server's whole group was sent SIGTERM (a service manager's stop), and
    held the server's stop for 30 s."""
    ignored = {sig: signal.signal(sig, signal.SIG_IGN)
               for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        client = _start_keeper(config_file, idle_seconds=60)
    finally:
        for sig, handler in ignored.items():
            signal.signal(sig, handler)
    _until(lambda: len(_processes(client.name)) == 3, 10,
           'the keeper did not fork its two readers')
    found = _processes(client.name)
    for pid in found:
        os.kill(pid, number)
    assert _gone(found, within=3)


def _as_nobody(action):
    """Run ``action()`` in a child process as user nobody; its exit
    status (0 when it returned true)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            os._exit(0 if action() else 1)
        except BaseException:
            os._exit(2)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.getuid() != 0, reason='needs root to be another user')
def test_another_user_s_process_is_refused_either_way(keeper):
    # Our readers and keeper answer nobody of another user.
    def asks_ours():
        for name in (keeper.name, wire.slot_name(keeper.name, 0)):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(wire.address(name))
            try:
                wire.send(sock, ('ping',))
                if sock.recv(1):
                    return False
            except OSError:
                pass
        return True
    assert _as_nobody(asks_ours) == 0

    # A name another user holds is never asked.
    name = 'placement-state-test-%s' % uuidlib.uuid4().hex
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setgid(65534)
        os.setuid(65534)
        squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        squatter.bind(wire.address(wire.slot_name(name, 0)))
        squatter.listen(1)
        os.write(write, b'x')
        time.sleep(30)
        os._exit(0)
    try:
        os.read(read, 1)
        with pytest.raises(shared.Unreachable, match='another user'):
            shared.Client(name, [], readers=2).call('anything', ())
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
