"""The service as deployment tools start it (``tests/wsgi_servers.py``):
kolla-ansible's uwsgi, uwsgi loading the application before it forks
its workers, gunicorn ``--preload`` and mod_wsgi, each with two workers
on PostgreSQL.

What must hold whoever serves it: a write acknowledged by one worker is
in the very next candidates answer of the other; request ids, proxy
headers, the body size limit and the health check behave as under
``placement-api``.  The real clients' scenario runs against each server
in ``tests/clients``.
"""

import concurrent.futures
import http.client
import json
import os
import re
import signal
import time
import uuid

import pytest

from tests import processes
from tests import wsgi_servers
from tests.functional.server import exchange
from tests.functional.server import request

# A request log line: "<pid> INFO placement.requestlog [<global id>
# <request id> ...".
_LOG_LINE = re.compile(r' (\d+) INFO placement\.requestlog '
                       r'\[(\S+) (req-[0-9a-f-]{36}) ')
CLIENTS = 4
ROUNDS = 12
BATCHES = 10


@pytest.fixture(scope='module', params=wsgi_servers.KINDS)
def served(request, serve_wsgi):
    """(kind, port, log path) of a server of each kind on a database of
    its own."""
    with serve_wsgi(request.param) as (port, log_path):
        yield request.param, port, log_path


def _served_by(log_path, request_ids):
    """{request id: (pid of the worker that answered, global id)} once
    every one of ``request_ids`` is logged: a line is written after its
    answer is sent, so the client may read the answer first."""
    deadline = time.monotonic() + 10
    while True:
        served = {match.group(3): (int(match.group(1)), match.group(2))
                  for match in _LOG_LINE.finditer(log_path.read_text())}
        if set(request_ids) <= served.keys() or time.monotonic() > deadline:
            return served
        time.sleep(0.05)


def _client(port, provider, rounds):
    """Raise the provider's VCPU total one by one, and after each write
    ask for candidates needing exactly the new total: an answer given
    from a state older than the write has none.  Then claim all of it,
    after which a candidate for one more is impossible.  [(write id,
    read id)] in order."""
    pairs = []
    generation = 0
    for total in range(1, rounds + 1):
        status, headers, body = exchange(
            port, 'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': generation,
             'inventories': {'VCPU': {'total': total}}})
        assert status == 200, body
        generation = body['resource_provider_generation']
        write_id = headers['x-openstack-request-id']
        status, headers, body = exchange(
            port, 'GET', '/allocation_candidates?resources=VCPU:%d'
            '&in_tree=%s' % (total, provider))
        assert status == 200, body
        assert len(body['allocation_requests']) == 1, (total, body)
        pairs.append((write_id, headers['x-openstack-request-id']))
    consumer = str(uuid.uuid4())
    status, headers, body = exchange(
        port, 'PUT', '/allocations/%s' % consumer, {
            'allocations': {provider: {'resources': {'VCPU': rounds}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert status == 204, body
    write_id = headers['x-openstack-request-id']
    status, headers, body = exchange(
        port, 'GET', '/allocation_candidates?resources=VCPU:1&in_tree=%s'
        % provider)
    assert status == 200 and body['allocation_requests'] == [], body
    pairs.append((write_id, headers['x-openstack-request-id']))
    return pairs


def _batch(kind, port, batch):
    """CLIENTS providers written and read concurrently, one client each:
    [(write id, read id)]."""
    providers = []
    for number in range(CLIENTS):
        status, _, body = exchange(port, 'POST', '/resource_providers',
                                {'name': '%s-%d-cn%d' % (kind, batch, number)})
        assert status == 200, body
        providers.append(body['uuid'])
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        return [pair for pairs in pool.map(
            lambda rp: _client(port, rp, ROUNDS), providers)
            for pair in pairs]


def test_a_write_through_one_worker_is_in_the_next_answer_of_another(
        served):
    """Every answer is exact (checked in _client).  Which worker accepts a
    connection is the kernel's or the server's choice, and a busy machine
    may hand one worker a whole batch; so batches go on, up to a bound,
    until both workers have answered and some read came from another
    worker than the write it had to see."""
    kind, port, log_path = served
    workers, crossed = set(), []
    for batch in range(BATCHES):
        pairs = _batch(kind, port, batch)
        served_by = _served_by(log_path, [request_id for pair in pairs
                                          for request_id in pair])
        workers |= {served_by[request_id][0] for pair in pairs
                    for request_id in pair}
        crossed += [pair for pair in pairs
                    if served_by[pair[0]][0] != served_by[pair[1]][0]]
        if len(workers) == wsgi_servers.WORKERS and crossed:
            break
    assert len(workers) == wsgi_servers.WORKERS, workers
    assert crossed, 'every read was answered by the writing worker'


def _state_processes(directory):
    """The pids of state processes started with the configuration in
    ``directory``."""
    return processes.pids_where(
        lambda argv: b'placement.cmd.state_process' in argv and any(
            arg.startswith(str(directory).encode()) for arg in argv))


def _state_keepers(directory, seconds=10):
    """(the state processes, the keepers among them) once one keeper at
    most is left: a worker that found the keeper silent on a loaded
    machine starts another, and one of the two then goes."""
    deadline = time.monotonic() + seconds
    while True:
        found = _state_processes(directory)
        keepers = [pid for pid in found
                   if processes.parent_of(pid) not in found]
        if len(keepers) <= 1 or time.monotonic() > deadline:
            return found, keepers
        time.sleep(0.2)


def test_workers_that_load_the_application_share_one_state(served):
    """uwsgi's lazy-apps and mod_wsgi load the application in each
    worker: one keeper holds the host's state and its readers (its
    forks, two at least) answer them all.  Servers that load it before
    they fork share the parent's."""
    kind, port, log_path = served
    # Every worker has loaded the application (mod_wsgi loads it at a
    # daemon's first request).
    _batch(kind, port, BATCHES)
    found, keepers = _state_keepers(log_path.parent)
    if kind in ('uwsgi', 'mod_wsgi'):
        assert len(keepers) == 1, found
        assert sorted(processes.children_of(keepers[0])) == sorted(
            set(found) - set(keepers))
        assert len(found) >= 3, found
    else:
        assert found == []


def _stores_mapped(pid):
    """The files of kept answers (``answer_store``) ``pid`` maps, as
    (device, inode): the process that made one maps it by the name it
    was made under, since removed."""
    with open('/proc/%d/maps' % pid) as handle:
        return frozenset(tuple(line.split()[3:5]) for line in handle
                         if 'placement-answers-' in line)


def test_workers_that_load_the_application_share_one_store(served):
    """uwsgi's lazy-apps and mod_wsgi workers keep their answers (a
    provider's allocations here) in one store of the host, which each
    maps; a server that loads the application before it forks keeps
    them in each worker's memory (no file)."""
    kind, port, log_path = served
    status, _, body = exchange(port, 'POST', '/resource_providers',
                               {'name': 'kept-answers-%s' % kind})
    assert status == 200, body
    path = '/resource_providers/%s/allocations' % body['uuid']
    stores = {}
    for _ in range(BATCHES):
        request_ids = []
        for _ in range(10):
            status, headers, body = exchange(port, 'GET', path)
            assert status == 200, body
            request_ids.append(headers['x-openstack-request-id'])
        served_by = _served_by(log_path, request_ids)
        for request_id in request_ids:
            pid = served_by[request_id][0]
            stores[pid] = _stores_mapped(pid)
        if len(stores) == wsgi_servers.WORKERS:
            break
    assert len(stores) == wsgi_servers.WORKERS, stores
    if kind in ('uwsgi', 'mod_wsgi'):
        assert len(set(stores.values())) == 1, stores
        assert len(next(iter(stores.values()))) == 1, stores
    else:
        assert set(stores.values()) == {frozenset()}, stores


def test_request_ids(served):
    _kind, port, log_path = served
    status, headers, _ = exchange(port, 'GET', '/')
    assert status == 200
    assert re.match(r'^req-[0-9a-f-]{36}$',
                    headers['x-openstack-request-id'])
    assert headers['openstack-request-id'] == \
        headers['x-openstack-request-id']
    # An error carries one too, the one its body names.
    status, headers, body = exchange(port, 'GET', '/resource_providers/%s'
                                  % uuid.uuid4())
    assert status == 404
    assert body['errors'][0]['request_id'] == \
        headers['x-openstack-request-id']
    # A caller's id is kept as the global request id of the request.
    inbound = 'req-%s' % uuid.uuid4()
    status, headers, _ = exchange(port, 'GET', '/resource_providers',
                               headers={'X-Openstack-Request-Id': inbound})
    assert status == 200
    local = headers['x-openstack-request-id']
    assert local != inbound
    assert _served_by(log_path, [local])[local][1] == inbound


def test_location_behind_a_proxy(served):
    _kind, port, _log = served
    status, headers, _ = exchange(
        port, 'POST', '/resource_providers', {'name': 'behind-proxy'},
        headers={'OpenStack-API-Version': 'placement 1.10',
                 'X-Forwarded-Proto': 'https',
                 'X-Forwarded-Host': 'placement.example.org'})
    assert status == 201
    assert re.match(r'^https://placement\.example\.org/resource_providers/'
                    r'[0-9a-f-]{36}$', headers['Location']), \
        headers['Location']


def test_an_oversized_body_is_413(served):
    """Decided from Content-Length, before the body is read.  How much of
    the body the client must send before it can read that answer is the
    server's affair (README, "Running under uwsgi, gunicorn or
    mod_wsgi"): uwsgi may reset a connection still sending, so the client
    sends a kilobyte and waits; Apache relays the answer only once it
    has read the whole body, so there the client sends all of it."""
    kind, port, _log = served
    size = 5 * 1024 * 1024
    body = b'{"name": "' + b'x' * (size - 10)
    if kind != 'mod_wsgi':
        body = body[:1024]
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    try:
        conn.putrequest('POST', '/resource_providers')
        for name, value in (('X-Auth-Token', 'admin'),
                            ('Content-Type', 'application/json'),
                            ('OpenStack-API-Version', 'placement 1.39'),
                            ('Content-Length', str(size))):
            conn.putheader(name, value)
        conn.endheaders(message_body=body)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 413, answer
    assert answer['errors'][0]['status'] == 413


def test_healthcheck(served):
    _kind, port, _log = served
    status, body = request(port, 'GET', '/healthcheck')
    assert status == 200
    assert body == {'detailed': False, 'reasons': ['OK']}


def test_uwsgi_runs_the_file_as_devstack_names_it(serve_wsgi):
    """``wsgi-file = .../placement/wsgi/api.py``: the file run as a
    script, outside the package."""
    with serve_wsgi('uwsgi-wsgi-file') as (port, _log):
        status, _, body = exchange(port, 'GET', '/resource_providers')
    assert (status, body) == (200, {'resource_providers': []})


def test_kolla_s_uwsgi_stops_promptly_once_the_state_process_runs(
        tmp_path):
    """The group told to stop, as a service manager tells it: the state
    process goes (it ignored SIGTERM, as the uwsgi worker that started it
    does), and so does that worker (a thread of its waiting to reap the
    process held it until uwsgi's worker-reload-mercy, 60 s)."""
    url = 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
    with wsgi_servers.started('uwsgi', url, tmp_path) as (port, process):
        assert request(port, 'GET', '/resource_providers')[0] == 200
        assert _state_processes(tmp_path)
        started = time.monotonic()
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=90)
        stopping = time.monotonic() - started
    assert stopping < 10, stopping
    assert _state_processes(tmp_path) == []
