"""Concurrent writers against a real multi-worker server.

Several gunicorn workers share one database, on each backend: writes must
neither fail with a server error (SQLite's "database is locked" would be a
500) nor lose an update (every accepted write bumps the generation exactly
once).  The load is bounded and goes to loopback only.
"""

import concurrent.futures
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

THREADS = 8
WRITES_PER_THREAD = 12


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _request(port, method, path, body=None):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
               'OpenStack-API-Version': 'placement 1.39'}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers['Content-Type'] = 'application/json'
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        conn.close()


@pytest.fixture
def server(database_url, tmp_path):
    """placement-api with two workers on the test's database."""
    config = tmp_path / 'placement.conf'
    config.write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n' % database_url)
    (tmp_path / 'policy.yaml').write_text('{}\n')
    port = _free_port()
    log = open(tmp_path / 'server.log', 'w')
    process = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), 'placement-api'),
         '--config-file', str(config), '--bind', '127.0.0.1:%d' % port,
         '--workers', '2'],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(port, 'GET', '/')[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None, (tmp_path / 'server.log').read_text()
            assert time.monotonic() < deadline, 'server did not come up'
            time.sleep(0.1)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def _contend_for_inventory(port, rp_uuid):
    """Read the generation, then try to write: returns the statuses."""
    statuses = []
    path = '/resource_providers/%s/inventories' % rp_uuid
    for attempt in range(WRITES_PER_THREAD):
        status, body = _request(port, 'GET', path)
        statuses.append(status)
        status, _ = _request(port, 'PUT', path, {
            'resource_provider_generation':
                body['resource_provider_generation'],
            'inventories': {'VCPU': {'total': 8 + attempt}}})
        statuses.append(status)
    return statuses


def _create_providers(port, thread):
    return [_request(port, 'POST', '/resource_providers',
                     {'name': 'rp-%d-%d' % (thread, n)})[0]
            for n in range(WRITES_PER_THREAD)]


def test_parallel_writers_get_answers_not_errors_and_lose_nothing(server):
    port = server
    status, shared = _request(port, 'POST', '/resource_providers',
                              {'name': 'shared', 'uuid': str(uuid.uuid4())})
    assert status == 200
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        creates = list(pool.map(lambda n: _create_providers(port, n),
                                range(THREADS)))
        contention = list(pool.map(
            lambda _n: _contend_for_inventory(port, shared['uuid']),
            range(THREADS)))

    assert {s for statuses in creates for s in statuses} == {200}
    status, listing = _request(port, 'GET', '/resource_providers')
    assert len(listing['resource_providers']) == 1 + THREADS * (
        WRITES_PER_THREAD)

    writes = [s for statuses in contention for s in statuses[1::2]]
    assert set(writes) <= {200, 409}, writes
    assert writes.count(200) >= 1
    status, provider = _request(port, 'GET',
                                '/resource_providers/' + shared['uuid'])
    # No lost update and no double count: one bump per accepted write.
    assert provider['generation'] == writes.count(200)
