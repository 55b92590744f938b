"""Clients that stall or dawdle cost a socket, never a thread: with many
connections stuck half-way through a request (or idle between kept-alive
requests) a normal client is answered at once, and the stalled ones are
answered 408 and closed after --client-timeout."""

import http.client
import json
import socket
import time

import pytest

from placement.cmd import worker
from tests.functional.server import request
from tests.functional.server import running
from tests.functional.server import started

STALLED = 64
CLIENT_TIMEOUT = 4


def _stall(port, payload):
    sock = socket.create_connection(('127.0.0.1', port), timeout=30)
    sock.sendall(payload)
    return sock


def _timed_requests(port, count=5):
    """Seconds each of ``count`` requests on one connection took."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    times = []
    try:
        for n in range(count):
            started = time.monotonic()
            conn.request('POST', '/resource_providers',
                         body=json.dumps({'name': 'rp-%d-%f' % (n, started)}),
                         headers={'X-Auth-Token': 'admin',
                                  'Content-Type': 'application/json'})
            response = conn.getresponse()
            response.read()
            assert response.status == 201
            times.append(time.monotonic() - started)
    finally:
        conn.close()
    return times


def _answer(sock):
    sock.settimeout(CLIENT_TIMEOUT + 10)
    data = b''
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


@pytest.mark.parametrize('stall', [
    b'GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-To',
    b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
    b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
    b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
    b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
    b'4\r\n{"na\r\n',
], ids=['headers', 'body', 'chunked-body'])
@pytest.mark.backends('sqlite', 'postgresql')
def test_stalled_clients_block_nobody_and_are_closed(
        database_url, tmp_path, stall):
    with running(database_url, tmp_path, workers=2,
                 extra_args=['--client-timeout', str(CLIENT_TIMEOUT)]) as port:
        stalled = [_stall(port, stall) for _ in range(STALLED)]
        started = time.monotonic()
        times = _timed_requests(port)
        # Far below the timeout: nothing waited for the stalled clients.
        assert max(times) < CLIENT_TIMEOUT / 2, times
        answers = [_answer(sock) for sock in stalled]
        waited = time.monotonic() - started
        for sock in stalled:
            sock.close()
        assert waited < CLIENT_TIMEOUT + 5
        for answer in answers:
            head, _, body = answer.partition(b'\r\n\r\n')
            assert head.startswith(b'HTTP/1.1 408 '), answer
            assert json.loads(body)['errors'][0]['status'] == 408


@pytest.mark.backends('sqlite')
def test_idle_keepalive_connections_block_nobody(database_url, tmp_path):
    with running(database_url, tmp_path, workers=1) as port:
        idle = []
        for _ in range(STALLED):
            conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
            conn.request('GET', '/')
            conn.getresponse().read()
            idle.append(conn)   # kept alive, sending nothing more
        try:
            times = _timed_requests(port)
            assert max(times) < CLIENT_TIMEOUT / 2, times
        finally:
            for conn in idle:
                conn.close()


@pytest.mark.backends('sqlite')
def test_a_client_that_expects_100_continue_gets_it(database_url, tmp_path):
    with running(database_url, tmp_path, workers=1) as port:
        body = json.dumps({'name': 'continued'}).encode()
        sock = _stall(port, (
            b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
            b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
            b'Expect: 100-continue\r\nConnection: close\r\n'
            b'Content-Length: %d\r\n\r\n' % len(body)))
        sock.settimeout(10)
        assert sock.recv(4096).startswith(b'HTTP/1.1 100 Continue\r\n\r\n')
        sock.sendall(body)
        assert b'HTTP/1.1 201 ' in _answer(sock)
        sock.close()


@pytest.mark.backends('sqlite')
def test_a_stopping_server_serves_requests_still_arriving_then_says_503(
        database_url, tmp_path):
    """A rolling restart stops a server while clients are connecting: a
    request that completes soon after is served; one still incomplete
    when the worker stops taking them is answered 503 at once, never
    left to the client timeout."""
    request = (b'GET / HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
               b'Connection: close\r\n\r\n')
    with started(database_url, tmp_path, workers=1) as (port, process):
        soon = _stall(port, request[:20])
        late = _stall(port, request[:20])
        time.sleep(0.2)     # both accepted, both incomplete
        process.terminate()
        time.sleep(worker._STOP_LINGER / 5)
        soon.sendall(request[20:])
        started_at = time.monotonic()
        soon_answer = _answer(soon)
        late_answer = _answer(late)
        waited = time.monotonic() - started_at
        soon.close()
        late.close()
    assert soon_answer.startswith(b'HTTP/1.1 200 '), soon_answer
    head, _, body = late_answer.partition(b'\r\n\r\n')
    assert head.startswith(b'HTTP/1.1 503 '), late_answer
    assert json.loads(body)['errors'][0]['detail'] == \
        'The server is stopping.'
    assert waited < 5


@pytest.mark.backends('sqlite')
def test_a_worker_past_its_memory_limit_is_replaced_and_no_request_fails(
        database_url, tmp_path):
    """A worker with more memory of its own than --max-worker-memory
    (here 1 MB: any) finishes what it has and exits, and the one forked
    in its place answers: every request in between is answered."""
    with running(database_url, tmp_path, workers=1,
                 extra_args=['--max-worker-memory', '1']) as port:
        uuid = request(port, 'POST', '/resource_providers',
                       {'name': 'cn'})[1]['uuid']
        log = tmp_path / 'server.log'
        answers = []
        deadline = time.monotonic() + 30
        while (log.read_text().count('Booting worker') < 3
               and time.monotonic() < deadline):
            answers.append(request(port, 'GET',
                                   '/resource_providers/%s' % uuid)[0])
            answers.append(request(
                port, 'GET', '/allocation_candidates?resources=VCPU:1')[0])
            time.sleep(0.05)
        text = log.read_text()
    assert text.count('Booting worker') >= 3, text[-3000:]
    assert 'more than --max-worker-memory: replacing it' in text
    assert set(answers) == {200}, answers
