"""Which requests placement-api's worker serves itself (http1) and how:
exactly one plain request received, in a configuration gunicorn does not
have to read per request; answered in one send, with gunicorn's
keep-alive rules and the JSON 500 when the application fails; the
connection armed on the pool by the answering thread, before the
application's iterable is closed. The next request on it, which wakes a
thread, is answered there when whole and plain, else handed to the
event loop; the loop expires what waits too long."""

import collections
import json
import logging
import socket
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

    def getblocking(self):
        return self.blocking

    def gettimeout(self):
        return 0.0


def _worker(app=None, **settings):
    subject = worker.Worker.__new__(worker.Worker)
    subject.cfg = gunicorn_config.Config()
    for name, value in settings.items():
        subject.cfg.set(name, value)
    subject.plain_environ = (http1.base_environ(subject.cfg)
                             if subject._plain_possible() else None)
    subject.limits = worker.Limits(8192, 8192, 100, 30)
    subject.wsgi = app
    subject.alive = True
    subject.nr = 0
    subject.nr_conns = 1
    subject.max_requests = 1000
    subject.keepalived_conns = collections.deque()
    subject.watched_conns = collections.deque()
    subject.max_keepalived = 10
    subject.log = logging.getLogger(__name__)
    subject.tpool = _Pool()
    subject.method_queue = _Deferred()
    return subject


class _Pool:
    """What is armed (and what the arming saw), and what forgotten."""

    def __init__(self, closed=False):
        self.watched = {}
        self.forgotten = []
        self.closed = closed

    def watch(self, conn):
        if self.closed:
            raise ValueError('I/O operation on closed epoll object')
        self.watched[conn.sock] = (getattr(conn.sock, 'sent', None),
                                   conn.sock.getblocking())

    def forget(self, conn):
        self.forgotten.append(conn)


class _Deferred:
    """The calls left to the event loop."""

    def __init__(self):
        self.calls = []

    def defer(self, callback, *args):
        self.calls.append((callback.__name__, args))


class _Connection(types.SimpleNamespace):
    def set_timeout(self):
        self.timeout = time.monotonic() + 1000

    def close(self, graceful=False):
        self.closed = True


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


@pytest.fixture
def kept():
    """A connection kept on the pool (a real socket), expired, its peer,
    and the worker."""
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    conn = _Connection(sock=ours, client=('127.0.0.1', 40000),
                       server=('127.0.0.1', 8778), timeout=0)
    subject = _worker(_app)
    subject.watched_conns.append(conn)
    yield subject, conn, peer
    ours.close()
    peer.close()


def _received(peer):
    peer.settimeout(5)
    return peer.recv(65536)


def test_a_whole_plain_request_is_answered_by_the_thread_it_wakes(kept):
    subject, conn, peer = kept
    peer.sendall(b'GET / HTTP/1.1\r\nHost: p\r\n\r\n')
    subject._on_kept_readable(conn)
    answer = _received(peer)
    assert answer.startswith(b'HTTP/1.1 200 OK\r\n')
    assert answer.endswith(b'{}')
    assert list(subject.tpool.watched) == [conn.sock]  # armed again
    assert list(subject.watched_conns) == [conn]
    assert subject.method_queue.calls == []     # the loop never woke


@pytest.mark.parametrize('data', [
    b'GET / HTTP/1.1\r\nHost: p\r\n',                        # incomplete
    b'PUT / HTTP/1.1\r\nHost: p\r\nContent-Length: 500\r\n\r\n',  # 413
    b'GET / HTTP/1.0\r\nHost: p\r\n\r\n',                    # gunicorn's
], ids=['incomplete', 'too-large', 'not-plain'])
def test_anything_else_goes_back_to_the_loop_with_what_was_read(kept, data):
    subject, conn, peer = kept
    peer.sendall(data)
    subject._on_kept_readable(conn)
    assert subject.method_queue.calls == [('_read_request', (conn, data))]
    assert not subject.watched_conns and not subject.tpool.watched


PUT_HEAD = (b'PUT / HTTP/1.1\r\nHost: p\r\nContent-Type: application/json'
            b'\r\nContent-Length: 2\r\n\r\n')


def test_a_body_sent_after_its_head_is_awaited_briefly(kept, monkeypatch):
    """http.client and urllib3 send a request's head and body in two
    writes: the thread the head woke reads the body too and answers.

    The body is sent once that thread waits for it, rather than by a
    timer of the test's: on a loaded machine a timer thread can run after
    the wait is over (2 ms)."""
    subject, conn, peer = kept
    waits = []
    real_poll = worker.select.poll

    class BodyOnceWaitedFor:
        def __init__(self):
            self._poll = real_poll()
            self.register = self._poll.register

        def poll(self, timeout):
            waits.append(timeout)
            if len(waits) == 1:
                peer.sendall(b'{}')
            return self._poll.poll(timeout)

    monkeypatch.setattr(worker.select, 'poll', BodyOnceWaitedFor)
    peer.sendall(PUT_HEAD)
    subject._on_kept_readable(conn)
    assert _received(peer).startswith(b'HTTP/1.1 200 OK\r\n')
    assert subject.method_queue.calls == []
    assert 0 < waits[0] <= worker.BODY_WAIT * 1000


def test_a_body_held_back_is_left_to_the_loop(kept):
    subject, conn, peer = kept
    peer.sendall(PUT_HEAD + b'{')
    started = time.monotonic()
    subject._on_kept_readable(conn)
    assert time.monotonic() - started >= worker.BODY_WAIT
    assert subject.method_queue.calls == [
        ('_read_request', (conn, PUT_HEAD + b'{'))]


def test_a_client_gone_is_left_to_the_loop_to_close(kept):
    subject, conn, peer = kept
    peer.close()
    subject._on_kept_readable(conn)
    assert subject.method_queue.calls == [('_close', (conn,))]


def test_a_connection_the_loop_expired_meanwhile_is_not_read(kept):
    subject, conn, peer = kept
    subject.watched_conns.clear()
    peer.sendall(b'GET / HTTP/1.1\r\nHost: p\r\n\r\n')
    subject._on_kept_readable(conn)
    assert conn.sock.recv(100).startswith(b'GET /')
    assert subject.method_queue.calls == []


def test_the_loop_closes_what_expired_on_the_pool(kept):
    subject, conn, _peer = kept
    later = _Connection(timeout=time.monotonic() + 1000)
    subject.watched_conns.append(later)
    subject.nr_conns = 2
    subject.murder_keepalived()
    assert conn.closed and subject.tpool.forgotten == [conn]
    assert list(subject.watched_conns) == [later]
    subject.murder_keepalived(force=True)
    assert later.closed and subject.nr_conns == 0


def test_an_expired_connection_with_a_request_waiting_is_read_not_closed(
        kept):
    """Its request arrived while every thread was busy: the loop reads
    it (and hands it over as any other), rather than dropping it."""
    subject, conn, peer = kept
    subject.arriving = collections.deque()
    subject.poller = types.SimpleNamespace(
        register=lambda sock, events, data: None)
    peer.sendall(b'GET / HTTP/1.1\r\nHost: p\r\n')
    subject.murder_keepalived()
    assert not getattr(conn, 'closed', False)
    assert list(subject.arriving) == [conn] and not subject.watched_conns
    assert conn.sock.recv(100).startswith(b'GET /')   # nothing consumed


def test_a_stopping_worker_caps_both_kinds_and_wakes_its_loop(monkeypatch):
    monkeypatch.setattr(worker, '_STOP_LINGER', 0.05)
    subject = _worker()
    on_poller = _Connection(timeout=time.monotonic() + 1000)
    on_pool = _Connection(timeout=time.monotonic() + 1000)
    subject.keepalived_conns.append(on_poller)
    subject.watched_conns.append(on_pool)
    subject._cap_keepalive(time.monotonic() + 100)
    assert on_poller.timeout <= time.monotonic() + 0.05
    assert on_pool.timeout <= time.monotonic() + 0.05
    deadline = time.monotonic() + 5
    while not subject.method_queue.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert subject.method_queue.calls == [('_nothing', ())]
