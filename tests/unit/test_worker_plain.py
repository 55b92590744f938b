"""Which requests placement-api's worker serves itself (http1) and how:
exactly one plain request received, in a configuration gunicorn does not
have to read per request; answered in one send, with gunicorn's
keep-alive rules and the JSON 500 when the application fails; the
connection armed on the pool by the answering thread, before the
application's iterable is closed."""

import collections
import json
import logging
import time
import types

import pytest

from gunicorn import config as gunicorn_config

from placement.cmd import http1
from placement.cmd import worker

PLAIN = b'GET / HTTP/1.1\r\nHost: p\r\n\r\n'
CHUNKED = (b'POST / HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\n'
           b'\r\n1\r\nx\r\n0\r\n\r\n')


class _Socket:
    def __init__(self):
        self.sent = b''
        self.blocking = True

    def sendall(self, data):
        self.sent += data

    send = sendall

    def setblocking(self, flag):
        self.blocking = flag

    def gettimeout(self):
        return 0.0


def _worker(app=None, **settings):
    subject = worker.Worker.__new__(worker.Worker)
    subject.cfg = gunicorn_config.Config()
    for name, value in settings.items():
        subject.cfg.set(name, value)
    subject.plain_environ = (http1.base_environ(subject.cfg)
                             if subject._plain_possible() else None)
    subject.wsgi = app
    subject.alive = True
    subject.nr = 0
    subject.max_requests = 1000
    subject.keepalived_conns = collections.deque()
    subject.watched_conns = collections.deque()
    subject.max_keepalived = 10
    subject.log = logging.getLogger(__name__)
    subject.tpool = _Pool()
    subject.method_queue = _Deferred()
    return subject


class _Pool:
    """What is armed, and what the arming saw."""

    def __init__(self, closed=False):
        self.watched = {}
        self.closed = closed

    def watch(self, conn):
        if self.closed:
            raise ValueError('I/O operation on closed epoll object')
        self.watched[conn.sock] = (conn.sock.sent, conn.sock.blocking)


class _Deferred:
    """The calls left to the event loop."""

    def __init__(self):
        self.calls = []

    def defer(self, callback, *args):
        self.calls.append((callback.__name__, args))


class _Connection(types.SimpleNamespace):
    def set_timeout(self):
        self.timeout = time.monotonic() + 1000


def _connection(data, client=('127.0.0.1', 40000)):
    return _Connection(received=bytearray(data), client=client,
                       server=('127.0.0.1', 8778), sock=_Socket())


def _read(subject, conn):
    data = bytes(conn.received)
    return subject._read_plain(conn, data, worker._Head(data))


def test_one_plain_request_is_read_here():
    request = _read(_worker(), _connection(PLAIN))
    assert request.method == 'GET' and request.target == '/'


@pytest.mark.parametrize('data,client', [
    (PLAIN + PLAIN, ('127.0.0.1', 40000)),
    (CHUNKED, ('127.0.0.1', 40000)),
    (PLAIN, ''),
], ids=['pipelined', 'chunked', 'unix-socket'])
def test_other_requests_are_left_to_gunicorn(data, client):
    assert _read(_worker(), _connection(data, client)) is None


@pytest.mark.parametrize('settings', [
    {'certfile': __file__}, {'proxy_protocol': 'v1'},
    {'http2_cleartext': 'upgrade'}])
def test_configurations_gunicorn_reads_per_request(settings):
    assert _read(_worker(**settings), _connection(PLAIN)) is None


def test_a_script_name_from_the_environment_is_left_to_gunicorn(monkeypatch):
    monkeypatch.setenv('SCRIPT_NAME', '/placement')
    assert _read(_worker(), _connection(PLAIN)) is None


def _app(_env, start_response):
    start_response('200 OK', [('Content-Length', '2')])
    return [b'{}']


def _serve(subject, data=PLAIN):
    """Serve ``data``: whether the connection was kept (on the pool)
    rather than left to the loop to close, and what was sent."""
    conn = _connection(data)
    conn.plain = _read(subject, conn)
    subject._serve_plain(conn)
    kept = conn.sock in subject.tpool.watched
    assert kept == (conn in subject.watched_conns)
    assert kept != (subject.method_queue.calls == [
        ('_close', (conn, True))])
    return kept, conn.sock.sent


def test_the_answer_goes_in_one_send_and_the_connection_stays():
    keep_alive, sent = _serve(_worker(_app))
    assert keep_alive
    assert sent.startswith(b'HTTP/1.1 200 OK\r\n') and sent.endswith(b'{}')


def test_the_connection_is_armed_before_the_answer_closes():
    subject = _worker()
    seen = []

    class Answer(list):
        def close(self):
            seen.append(list(subject.tpool.watched.values()))

    def app(_env, start_response):
        start_response('200 OK', [])
        return Answer([b'{}'])
    subject.wsgi = app
    assert _serve(subject)[0]
    [[(sent, blocking)]] = seen
    assert not blocking and sent.endswith(b'{}')


def test_a_worker_stopping_keeps_a_connection_only_briefly():
    subject = _worker(_app)
    subject.alive = False
    conn = _connection(PLAIN)
    assert subject._keep(conn)
    assert conn.timeout <= time.monotonic() + worker._STOP_LINGER


def test_a_closed_pool_leaves_the_connection_to_close():
    subject = _worker(_app)
    subject.tpool = _Pool(closed=True)
    assert _serve(subject)[0] is False
    assert not subject.watched_conns


def test_the_last_request_before_a_restart_closes_the_connection():
    subject = _worker(_app)
    subject.max_requests = 1
    keep_alive, sent = _serve(subject)
    assert not keep_alive and not subject.alive
    assert b'\r\nConnection: close\r\n' in sent


@pytest.mark.parametrize('on_pool', [0, 4, 10])
def test_no_room_for_another_kept_alive_connection_closes_it(on_pool):
    """Kept-alive connections count wherever they wait: gunicorn's on
    the poller, this worker's on the pool."""
    subject = _worker(_app)
    subject.watched_conns = collections.deque([object()] * on_pool)
    subject.keepalived_conns = collections.deque(
        [object()] * (subject.max_keepalived - on_pool))
    assert _serve(subject)[0] is False


def test_a_failing_application_is_answered_500_in_the_json_format():
    def failing(_env, _start_response):
        raise RuntimeError('boom')
    keep_alive, sent = _serve(_worker(failing))
    assert not keep_alive
    head, _, body = sent.partition(b'\r\n\r\n')
    assert head.startswith(b'HTTP/1.1 500 ')
    assert json.loads(body)['errors'][0]['status'] == 500
