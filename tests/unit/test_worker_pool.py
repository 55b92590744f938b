"""placement-api's worker threads wait on one epoll (placement/cmd/pool):
what the event loop hands over runs in one of them, and a kept-alive
connection's next request wakes one of them, once per arming, which
answers it when it is whole and plain and hands anything else back to
the loop. The loop still expires kept-alive connections."""

import collections
import logging
import queue
import socket
import threading
import time
import types

import pytest

from placement.cmd import pool
from placement.cmd import worker

WAIT = 5


@pytest.fixture
def taken():
    return queue.Queue()


@pytest.fixture
def threads(taken):
    subject = pool.Pool(3, taken.put)
    yield subject
    subject.shutdown()


@pytest.fixture
def pair():
    ours, peer = socket.socketpair()
    yield types.SimpleNamespace(sock=ours), peer
    ours.close()
    peer.close()


def test_what_is_handed_over_runs_in_threads_at_once(threads):
    barrier = threading.Barrier(3, timeout=WAIT)
    futures = [threads.submit(barrier.wait) for _ in range(3)]
    assert sorted(f.result(WAIT) for f in futures) == [0, 1, 2]


def test_a_failure_handed_over_is_the_future_s(threads):
    future = threads.submit(int, 'x')
    with pytest.raises(ValueError):
        future.result(WAIT)
    assert threads.submit(int, '7').result(WAIT) == 7


def test_a_watched_connection_is_taken_once_per_arming(threads, taken, pair):
    conn, peer = pair
    threads.watch(conn)
    peer.send(b'x')
    assert taken.get(timeout=WAIT) is conn
    peer.send(b'y')
    with pytest.raises(queue.Empty):
        taken.get(timeout=0.3)
    threads.watch(conn)  # armed again, with bytes already waiting
    assert taken.get(timeout=WAIT) is conn


def test_a_forgotten_connection_is_not_taken(threads, taken, pair):
    conn, peer = pair
    threads.watch(conn)
    threads.forget(conn)
    peer.send(b'x')
    with pytest.raises(queue.Empty):
        taken.get(timeout=0.3)


def test_nothing_is_watched_once_shut_down(threads, pair):
    threads.shutdown()
    with pytest.raises(ValueError):
        threads.watch(pair[0])


class _Deferred:
    def __init__(self):
        self.calls = []

    def defer(self, callback, *args):
        self.calls.append((callback.__name__, args))


class _Pool:
    def __init__(self):
        self.watched = []
        self.forgotten = []

    def watch(self, conn):
        self.watched.append(conn)

    def forget(self, conn):
        self.forgotten.append(conn)


class _Connection(types.SimpleNamespace):
    def set_timeout(self):
        self.timeout = time.monotonic() + 1000

    def close(self, graceful=False):
        self.closed = True


def _app(_env, start_response):
    start_response('200 OK', [('Content-Length', '2')])
    return [b'{}']


def _worker():
    from gunicorn import config as gunicorn_config
    from placement.cmd import http1
    subject = worker.Worker.__new__(worker.Worker)
    subject.cfg = gunicorn_config.Config()
    subject.plain_environ = http1.base_environ(subject.cfg)
    subject.limits = worker.Limits(8192, 8192, 100, 30)
    subject.wsgi = _app
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


@pytest.fixture
def kept(pair):
    """A connection kept on the pool, its peer, and the worker."""
    sock, peer = pair
    sock.sock.setblocking(False)
    conn = _Connection(sock=sock.sock, client=('127.0.0.1', 40000),
                       server=('127.0.0.1', 8778), timeout=0)
    subject = _worker()
    subject.watched_conns.append(conn)
    return subject, conn, peer


def _received(peer):
    peer.settimeout(WAIT)
    return peer.recv(65536)


def test_a_whole_plain_request_is_answered_by_the_thread_it_wakes(kept):
    subject, conn, peer = kept
    peer.sendall(b'GET / HTTP/1.1\r\nHost: p\r\n\r\n')
    subject._on_kept_readable(conn)
    answer = _received(peer)
    assert answer.startswith(b'HTTP/1.1 200 OK\r\n')
    assert answer.endswith(b'{}')
    assert subject.tpool.watched == [conn]      # armed for the next one
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
    deadline = time.monotonic() + WAIT
    while not subject.method_queue.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert subject.method_queue.calls == [('_nothing', ())]
