"""A forked child's objects per database (``state.per_process``): one per
database, inherited once from the parent's, however many of the child's
threads ask first.

Two threads of a placement-api worker asking at once after the fork once
each inherited the parent's candidate state into a Snapshot of their own;
both then refreshed that one State under two locks, and the listing
showed every provider two or three times (issue 49).
"""

import os
import signal
import threading
import time

from placement.state import per_process


class _Database:
    """A key as the registry takes them (weakly referable)."""


class _Made:
    def __init__(self, origin):
        self.origin = origin


def _registry(inherit_seconds=0.0):
    """A PerDatabase whose ``inherit`` is slow and counts its calls."""
    calls = []

    def inherit(parent_object):
        calls.append(parent_object)
        time.sleep(inherit_seconds)
        return _Made(('inherited', parent_object))

    return per_process.PerDatabase(lambda db: _Made('made'), inherit), calls


def _asked_at_once(registry, db, threads=6):
    """The objects ``threads`` threads got from ``registry.of(db)``,
    asked at the same moment."""
    barrier = threading.Barrier(threads)
    found = []

    def ask():
        barrier.wait()
        found.append(registry.of(db))

    running = [threading.Thread(target=ask) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return found


def _in_child(work):
    """``work()``'s text from a forked child (``os.fork``: the fork hooks
    run), or the error it raised."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            signal.alarm(20)
            answer = 'ok:%s' % (work(),)
        except BaseException as error:  # noqa: BLE001 - reported to parent
            answer = 'error:%r' % (error,)
        os.write(write_end, answer.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, 'rb') as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    return answer


def test_a_child_inherits_at_the_fork_once_for_all_its_threads():
    registry, calls = _registry(inherit_seconds=0.2)
    db = _Database()
    parent_object = registry.of(db)

    def child():
        settled_at_fork = len(calls)
        found = _asked_at_once(registry, db)
        return '%d,%d,%d,%s' % (
            settled_at_fork, len(calls), len({id(item) for item in found}),
            found[0].origin == ('inherited', parent_object))

    assert _in_child(child) == 'ok:1,1,1,True'


def test_a_fork_no_hook_saw_is_inherited_once_by_the_first_thread():
    """A process forked by C code that runs no Python hook learns of it
    by its pid: the first thread to ask inherits, the others wait for it
    and get the same object."""
    registry, calls = _registry(inherit_seconds=0.2)
    db = _Database()
    parent_object = registry.of(db)
    # What such a fork leaves: objects that name another process.
    registry._objects.pid = -1
    found = _asked_at_once(registry, db)
    assert len(calls) == 1
    assert len({id(item) for item in found}) == 1
    assert found[0].origin == ('inherited', parent_object)


def test_a_registry_gone_leaves_no_hook_behind():
    """The fork hook holds its registry weakly: a registry dropped (a
    test's) is neither kept alive nor called at later forks."""
    registry, calls = _registry()
    registry.of(_Database())
    del registry
    assert _in_child(lambda: len(calls)) == 'ok:0'
