"""placement-api's worker threads wait on one epoll (placement/cmd/pool):
what the event loop hands over runs in one of them, and a watched
connection turning readable wakes one of them, once per arming. (What
the worker does with such a connection: test_worker_plain.)"""

import queue
import socket
import threading
import types

import pytest

from placement.cmd import pool

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
