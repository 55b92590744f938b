"""A process forked after the application was built (uwsgi without
``lazy-apps``, gunicorn ``--preload``) uses nothing the parent made: no
pooled connection, no lock, no candidate state.

Forked here with ``os.fork``; no ``os.register_at_fork`` hook is relied on
(uwsgi forks from C and calls none), so this stands for every server.
"""

import os
import signal

import pytest

from placement.candidates import snapshot

# What identifies the server session a connection is, per backend.
_SESSION_ID = {'postgresql': 'SELECT pg_backend_pid()',
               'mysql': 'SELECT CONNECTION_ID()'}


def _in_child(work, timeout=20):
    """Run ``work()`` in a forked child; its return value (a short text)
    or the exception it raised, as text.  The child never returns into
    pytest: it writes its answer to a pipe and exits."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        os.close(read_end)
        try:
            # A child that would hang (a lock never released) is killed.
            signal.alarm(timeout)
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


def _session_id(db):
    def read(conn):
        return conn.exec_driver_sql(_SESSION_ID[db.backend]).scalar()
    return db.read(read)


@pytest.mark.backends('postgresql', 'mysql')
def test_a_forked_worker_opens_connections_of_its_own(db):
    """The parent's pooled connection (here, the one the application's
    build used) stays the parent's: the child is served by another
    server session, and the parent's still works afterwards."""
    parent_session = _session_id(db)
    child_session = _in_child(lambda: _session_id(db))
    assert child_session.startswith('ok:'), child_session
    assert child_session != 'ok:%s' % parent_session
    # The pool checked in the parent's connection; it is still alive and
    # still the parent's own session.
    assert _session_id(db) == parent_session


def test_a_forked_worker_is_not_blocked_by_a_lock_held_in_the_parent(db):
    """A fork while another thread of the parent holds the candidate
    state's locks (a search under way) must not leave the child waiting
    for a release that will never come in its copy."""
    state = snapshot.of(db)
    with snapshot._snapshots._objects.lock, state.lock:
        def search():
            with snapshot.of(db).fresh() as fresh:
                return len(fresh.providers)
        answer = _in_child(search)
    assert answer == 'ok:0', answer


def test_a_forked_worker_reads_its_own_candidate_state(db, client):
    """The child starts its own state at its first search: a provider
    written after the parent read its state, by the parent, is in the
    child's answer (and the parent's state object is not the child's)."""
    parent = snapshot.of(db)
    with parent.fresh() as parent_state:
        assert parent_state.providers == {}
    client.post('/resource_providers', json={'name': 'cn1'})

    def providers_seen():
        child = snapshot.of(db)
        with child.fresh() as state:
            return '%s,%d' % (child is parent, len(state.providers))
    answer = _in_child(providers_seen)
    assert answer == 'ok:False,1', answer
