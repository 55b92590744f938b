"""A body over the limit is answered 413, and the client reads that answer:
the worker closes as nginx does (a "lingering close"), dropping what the
client still sends instead of closing a socket with unread data, which
makes the kernel reset the connection and discard the 413 before the
client reads it. What the worker drops is bounded in time and bytes, so
a client that stalls or never stops sending costs a socket for that long
and no more."""

import http.client
import json
import socket
import time

import pytest
import requests

from placement.cmd import worker
from tests.functional.server import request
from tests.functional.server import running

MB = 1000 * 1000
CLIENT_TIMEOUT = 3
# The worker looks at lingering connections once a second.
SLACK = 2
HEADERS = {'X-Auth-Token': 'admin', 'Content-Type': 'application/json',
           'OpenStack-API-Version': 'placement 1.39'}


def _chunks(size):
    """A JSON body of about ``size`` bytes, in 64 KB pieces."""
    yield b'{"name": "'
    piece = b'x' * 65536
    for _ in range(size // len(piece)):
        yield piece
    yield b'"}'


def _with_requests(port, size, chunked):
    body = _chunks(size) if chunked else b''.join(_chunks(size))
    resp = requests.post('http://127.0.0.1:%d/resource_providers' % port,
                         data=body, headers=HEADERS, timeout=60)
    return resp.status_code, resp.json()


def _with_http_client(port, size, chunked):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    try:
        if chunked:
            conn.request('POST', '/resource_providers', body=_chunks(size),
                         headers=HEADERS, encode_chunked=True)
        else:
            conn.request('POST', '/resource_providers',
                         body=b''.join(_chunks(size)), headers=HEADERS)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.mark.backends('sqlite')
def test_clients_read_the_413(database_url, tmp_path):
    with running(database_url, tmp_path, workers=1) as port:
        for send in (_with_requests, _with_http_client):
            for size in (5 * MB, 40 * MB):
                for chunked in (False, True):
                    case = (send.__name__, size, chunked)
                    status, body = send(port, size, chunked)
                    assert status == 413, case
                    error = body['errors'][0]
                    assert (error['status'], error['code']) == (
                        413, 'placement.undefined_code'), case
                    assert 'larger than the limit' in error['detail'], case
        status, body = request(port, 'GET', '/resource_providers')
        assert (status, body) == (200, {'resource_providers': []})


def _oversized_post(port, declared=40 * MB, sent=MB):
    """A socket that has sent the head of a ``declared``-byte POST and
    ``sent`` bytes of its body; the 413 answer it read."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=30)
    sock.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
                 b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
                 b'Content-Length: %d\r\n\r\n' % declared)
    sock.sendall(b'x' * sent)
    answer = b''
    while True:
        data = sock.recv(65536)
        if not data:    # the server is done writing, not yet reading
            break
        answer += data
    assert answer.startswith(b'HTTP/1.1 413 '), answer
    return sock


def _closed_by_server(sock):
    """Whether the server has closed its end: a write to it is reset."""
    try:
        sock.send(b'x')
        time.sleep(0.05)
        sock.send(b'x')
        return False
    except OSError:
        return True


def _linger_seconds():
    return min(CLIENT_TIMEOUT, worker.LINGER_SECONDS)


@pytest.mark.backends('sqlite')
def test_a_stalled_sender_is_closed_after_a_silence(database_url, tmp_path):
    """Well before --client-timeout (30 s)."""
    with running(database_url, tmp_path, workers=1) as port:
        sock = _oversized_post(port)
        time.sleep(0.2)
        assert not _closed_by_server(sock)
        time.sleep(worker.LINGER_SILENCE + SLACK)
        assert _closed_by_server(sock)
        sock.close()


@pytest.mark.backends('sqlite')
def test_an_endless_trickle_is_closed_after_the_linger(database_url,
                                                       tmp_path):
    """Sending never stops the clock; others are served meanwhile."""
    with running(database_url, tmp_path, workers=1, extra_args=[
            '--client-timeout', str(CLIENT_TIMEOUT)]) as port:
        sock = _oversized_post(port)
        started = time.monotonic()
        while not _closed_by_server(sock):
            assert time.monotonic() - started < _linger_seconds() + SLACK
            started_request = time.monotonic()
            assert request(port, 'GET', '/')[0] == 200
            assert time.monotonic() - started_request < 0.5
            time.sleep(0.2)
        assert time.monotonic() - started > _linger_seconds() - 0.5
        sock.close()


@pytest.mark.backends('sqlite')
def test_an_endless_flood_is_closed_after_the_byte_bound(database_url,
                                                         tmp_path):
    with running(database_url, tmp_path, workers=1) as port:
        sock = _oversized_post(port, declared=10 ** 12, sent=0)
        piece = b'x' * (1024 * 1024)
        sent = 0
        with pytest.raises(OSError):
            while sent < 4 * worker.LINGER_BYTES:
                sent += sock.send(piece)
        # Socket buffers hold a few megabytes beyond what was dropped.
        assert worker.LINGER_BYTES <= sent < worker.LINGER_BYTES + 32 * MB
        sock.close()
