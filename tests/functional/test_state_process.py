"""A host's state process (``state.shared``, ``cmd.state_process``): what
workers that load the application after the fork ask instead of keeping
a state each.

Every answer that comes from the state must be the same asked through
the process as asked of this process's own state, errors included, and
after a write made elsewhere; the process must refuse, and be refused
by, another user's process, and exit once no worker is connected.
"""

import os
import signal
import socket
import struct
import time
import uuid as uuidlib

import pytest

from placement.state import shared

NAMESPACE = uuidlib.UUID('6d0c1f5e-9a57-4b4e-8f0e-3c2b1a0d9e88')
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))
AGGREGATE = str(uuidlib.uuid5(NAMESPACE, 'aggregate'))


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


@pytest.fixture
def state_process(db, config_file):
    """A Client of a state process started (as a worker starts it) on
    the test's database, this thread connected to it; this process's own
    state answers until a test says otherwise."""
    client = shared.Client('placement-state-test-%s' % uuidlib.uuid4().hex,
                           ['--config-file', config_file,
                            '--idle-seconds', '1'])
    # Held until the test ends (idle for its 1 s, the process exits).
    client.connected()
    yield client
    shared.answer_through(db, None)
    client.close()


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


def _both(client, db, state_process, method, path, body):
    """(this process's answer, the state process's) to one request."""
    here = _asked(client, method, path, body)
    shared.answer_through(db, state_process)
    try:
        there = _asked(client, method, path, body)
    finally:
        shared.answer_through(db, None)
    return here, there


def test_every_answer_through_the_state_process_is_this_process_s(
        client, db, state_process):
    _world(client)
    statuses = set()
    for method, path, body in _reads():
        here, there = _both(client, db, state_process, method, path, body)
        assert there == here, path
        statuses.add(here[0])
    # The reads cover answers and the errors decided on the state.
    assert statuses == {200, 400, 404}


def test_a_write_made_elsewhere_is_in_the_next_answer(
        client, db, state_process):
    _world(client)
    shared.answer_through(db, state_process)
    path = '/allocation_candidates?resources=VCPU:5'
    assert len(client.get(path).json['allocation_requests']) == 1
    # This process writes; the state process reads what the log says.
    client.put('/resource_providers/%s/inventories/VCPU' % _uuid('cn2'),
               json={'resource_provider_generation': 2, 'total': 6})
    assert len(client.get(path).json['allocation_requests']) == 2
    shared.answer_through(db, None)


def _peer_pid(sock):
    pid, _uid, _gid = struct.unpack('3i', sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i')))
    return pid


def _gone(pid, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie until init (or a subreaper) reaps it.
        try:
            with open('/proc/%d/stat' % pid) as handle:
                if handle.read().split(') ')[1].startswith('Z'):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_one_process_per_name_and_it_exits_when_no_worker_is_connected(
        state_process):
    first = state_process.connect(start=False)
    pid = _peer_pid(first)
    # A second start with the name held goes away; the first stays.
    other = shared.Client(state_process.name, state_process._argv)
    other._start()
    second = state_process.connect(start=False)
    assert _peer_pid(second) == pid
    second.close()
    assert not _gone(pid, within=2.5)
    first.close()
    state_process.close()
    assert _gone(pid, within=5)
    with pytest.raises(shared.Unreachable):
        state_process.connect(start=False)


@pytest.mark.parametrize('number', [signal.SIGTERM, signal.SIGHUP])
def test_what_stops_the_server_stops_it(db, config_file, number):
    """uwsgi's workers ignore SIGTERM and SIGHUP, and a program one of
    them starts inherits that: the state process lived on after the
    server's whole group was sent SIGTERM (a service manager's stop), and
    held the server's stop for 30 s."""
    ignored = {sig: signal.signal(sig, signal.SIG_IGN)
               for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        client = shared.Client(
            'placement-state-test-%s' % uuidlib.uuid4().hex,
            ['--config-file', config_file, '--idle-seconds', '60'])
        sock = client.connect(start=True)
    finally:
        for sig, handler in ignored.items():
            signal.signal(sig, handler)
    pid = _peer_pid(sock)
    os.kill(pid, number)
    try:
        assert _gone(pid, within=3)
    finally:
        sock.close()


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
def test_another_user_s_process_is_refused_either_way(state_process):
    # Our state process answers nobody of another user.
    def asks_ours():
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(shared.address(state_process.name))
        shared.send(sock, (len, ([],)))
        try:
            shared.receive(sock)
        except (EOFError, OSError):
            return True
        return False
    assert _as_nobody(asks_ours) == 0

    # A name another user holds is never asked.
    name = 'placement-state-test-%s' % uuidlib.uuid4().hex
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setgid(65534)
        os.setuid(65534)
        squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        squatter.bind(shared.address(name))
        squatter.listen(1)
        os.write(write, b'x')
        time.sleep(30)
        os._exit(0)
    try:
        os.read(read, 1)
        with pytest.raises(shared.Unreachable, match='another user'):
            shared.Client(name, []).connect(start=False)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
