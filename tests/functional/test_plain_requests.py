"""placement-api on the wire: plain requests (placement/cmd/http1.py) and
those gunicorn still reads share kept-alive connections and are answered
in order, one answer each."""

import json
import socket

import pytest

from tests.functional.server import running

UUID = 'c2ca5a3e-6b1a-4c55-9d52-6a4a1b5f7e01'


def _request(method, path, body=None, headers=b''):
    payload = json.dumps(body).encode() if body is not None else b''
    return (b'%s %s HTTP/1.1\r\nHost: placement\r\nX-Auth-Token: admin\r\n'
            b'OpenStack-API-Version: placement 1.39\r\n'
            b'Content-Type: application/json\r\nContent-Length: %d\r\n'
            b'%s\r\n' % (method.encode(), path.encode(), len(payload),
                         headers)) + payload


class _Answers:
    """Reads the answers arriving on one socket, one after the other."""

    def __init__(self, sock):
        self.sock = sock
        self.pending = b''

    def _more(self):
        data = self.sock.recv(65536)
        assert data, 'the server closed the connection'
        self.pending += data

    def next(self):
        while b'\r\n\r\n' not in self.pending:
            self._more()
        head, _, self.pending = self.pending.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        headers = dict(line.lower().split(': ', 1) for line in lines[1:])
        length = int(headers['content-length'])
        while len(self.pending) < length:
            self._more()
        body, self.pending = self.pending[:length], self.pending[length:]
        return int(lines[0].split()[1]), headers, body

    def closed(self):
        return not self.pending and self.sock.recv(1) == b''


@pytest.fixture
def connection(database_url, tmp_path):
    with running(database_url, tmp_path, workers=1) as port:
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        try:
            yield sock, _Answers(sock)
        finally:
            sock.close()


@pytest.mark.backends('sqlite')
def test_a_writers_requests_share_one_connection(connection):
    sock, answers = connection
    sock.sendall(_request('POST', '/resource_providers',
                          {'name': 'cn1', 'uuid': UUID}))
    status, headers, _ = answers.next()
    assert status == 200 and headers['connection'] == 'keep-alive'
    inventories = '/resource_providers/%s/inventories' % UUID
    sock.sendall(_request('PUT', inventories, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}}))
    status, _, body = answers.next()
    assert status == 200 and json.loads(body)['inventories']['VCPU'][
        'total'] == 8
    sock.sendall(_request('GET', inventories))
    status, _, body = answers.next()
    assert json.loads(body)['resource_provider_generation'] == 1


@pytest.mark.backends('sqlite')
def test_pipelined_requests_are_answered_in_order(connection):
    sock, answers = connection
    sock.sendall(_request('GET', '/resource_providers/%s' % UUID)
                 + _request('POST', '/resource_providers',
                            {'name': 'cn1', 'uuid': UUID})
                 + _request('GET', '/resource_providers/%s' % UUID))
    assert [answers.next()[0] for _ in range(3)] == [404, 200, 200]


@pytest.mark.backends('sqlite')
def test_a_chunked_request_and_plain_ones_share_a_connection(connection):
    sock, answers = connection
    body = json.dumps({'name': 'cn1', 'uuid': UUID}).encode()
    sock.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: placement\r\n'
                 b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
                 b'OpenStack-API-Version: placement 1.20\r\n'
                 b'Transfer-Encoding: chunked\r\n\r\n'
                 b'%x\r\n%s\r\n0\r\n\r\n' % (len(body), body))
    assert answers.next()[0] == 200
    sock.sendall(_request('GET', '/resource_providers/%s' % UUID))
    status, _, answer = answers.next()
    assert status == 200 and json.loads(answer)['name'] == 'cn1'


@pytest.mark.backends('sqlite')
def test_connection_close_is_honoured(connection):
    sock, answers = connection
    sock.sendall(_request('GET', '/', headers=b'Connection: close\r\n'))
    status, headers, _ = answers.next()
    assert status == 200 and headers['connection'] == 'close'
    assert answers.closed()


@pytest.mark.backends('sqlite')
def test_a_header_named_with_an_underscore_is_dropped(connection):
    sock, answers = connection
    request = _request('GET', '/resource_providers').replace(
        b'X-Auth-Token', b'X_Auth_Token')
    sock.sendall(request)
    # As gunicorn drops it: no token arrives.
    assert answers.next()[0] == 401
    sock.sendall(_request('GET', '/resource_providers'))
    assert answers.next()[0] == 200
