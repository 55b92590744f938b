"""One process's state of one database, kept exact, under a lock.

Every allocation-candidates request used to read thousands of inventory,
usage and trait rows to answer; most of them had not changed since the
previous request.  Each process now keeps them in memory (a
``providers.State``) and, before each search, reads where the change log
stands (one statement over its few stamp rows).  Equal to where the
state is, nothing has changed anywhere, in any process on any host.
Otherwise it reads again the providers the log names since then (or
everything, when it is too far behind or a write did not say what it
changed: ``catch_up``) and then answers.  Writes made by anything else
are logged too, as everything (migration 0004), and stamp rows of
another epoch mean another database: both are read whole.  A write
committed before the request read the log is always seen, as a fresh
read of the database would see it.

The state is shared by the threads of a process; ``Snapshot.fresh``
holds its lock for the refresh and the search that follows, so no search
sees a half-applied refresh.
"""

import contextlib
import gc
import logging
import threading
import time
import weakref

from placement import allocator
from placement import metrics
from placement import tracing
from placement import version
from placement.state import catch_up
from placement.state import per_process
from placement.state import providers
from placement.state import questions
from placement.state import registration
from placement.state import shared
from placement.state import wire

LOG = logging.getLogger(__name__)

# Providers read again (at least this many, and a tenth of them all)
# after which Snapshot.after_large_read is called.
_LARGE_READ = 1000


class Snapshot:
    """One process's state of one database."""

    def __init__(self, db):
        # Weakly: the registry below is keyed weakly by ``db``, and a
        # strong reference from its value would keep both alive for ever
        # (a test suite making a database per test would never free one).
        self._db = weakref.ref(db)
        self.state = providers.State()
        self.lock = threading.Lock()
        # Called (with no arguments) after the state was read whole, or
        # after many providers were read again since the last call: what
        # was read is long-lived (placement-api freezes it).
        self.after_large_read = None
        self._read_since = 0
        self._registration = registration.Registration(version.release())

    @contextlib.contextmanager
    def fresh(self):
        """The state as of now, for the length of the ``with`` block."""
        self._registration.report(self._db())
        with self.lock:
            try:
                whole, read = self._refresh(self._db())
            except BaseException:
                # A refresh cut short may have left it half applied.
                self.state = providers.State()
                raise
            self._read_since += read
            if self.after_large_read is not None and (
                    whole or self._read_since >= max(
                        _LARGE_READ, len(self.state.providers) // 10)):
                self._read_since = 0
                self.after_large_read()
            yield self.state

    def _refresh(self, db):
        """(whether the state was read whole, how many providers were
        read); the common case, nothing changed, costs one statement
        outside any transaction."""
        with tracing.span('state.catch_up'):
            if catch_up.unchanged(db, self.state.position):
                return False, 0
            started = time.monotonic()
            whole, read = db.read(refresh, self.state)
            metrics.observe_catch_up(whole, time.monotonic() - started)
            return whole, read

    def warm(self, when='at start', strict=False):
        """Read the state now and work out its lookups (a worker
        starting, or a parent about to fork one that then shares them),
        so that no request waits for either; a failure, logged as not
        read ``when``, leaves that to the first request (``strict``:
        raised)."""
        try:
            with self.fresh() as state:
                state.work_out_lookups()
        except Exception as error:  # noqa: BLE001 - only a head start
            if strict:
                raise
            LOG.warning('Allocation-candidate state not read %s: %s',
                        when, error)

    def inherited(self):
        """A forked child's Snapshot (``per_process``): this one's state,
        shared with the parent until either changes it, and read again
        only as far as the change log moved since; None (the child reads
        its own) when a thread of the parent was changing it at the fork,
        as its held lock then says."""
        db = self._db()
        if db is None or self.lock.locked():
            return None
        child = Snapshot(db)
        child.state = self.state
        child.after_large_read = self.after_large_read
        return child


def serving(db, strict=False):
    """The Snapshot of ``db`` for a process about to serve (or to fork
    the workers that will): read now (``warm``), and what it read put
    beyond the cyclic garbage collector (``keep_out_of_gc``), now and
    after each large read."""
    kept = of(db)
    kept.after_large_read = keep_out_of_gc
    kept.warm(strict=strict)
    keep_out_of_gc()
    return kept


def keep_out_of_gc():
    """Put every object alive now (the application, the candidate state:
    hundreds of thousands of objects at a large cloud) beyond the cyclic
    garbage collector, which would otherwise walk them all again each
    time a request's many short-lived objects set off a full collection.
    Profiled: a 10,000-provider listing spent half its time there.  What
    the state drops later is still freed: nothing in it forms cycles, so
    reference counting frees it.  The collection first walks only what
    is not frozen yet; and a worker forked after it leaves the pages of
    the frozen objects alone, where the collector would write to each.
    """
    gc.collect()
    gc.freeze()


def refresh(conn, state):
    """Bring ``state`` up to the log's latest committed change; (whether
    that meant reading it whole, how many providers it read)."""
    changed, position = catch_up.since(conn, state.position)
    whole = changed.too_many()
    if whole:
        state.read(conn)
    else:
        state.read(conn, changed.providers, names=changed.names)
    state.position = position
    return whole, len(state.providers) if whole else len(changed.providers)


_snapshots = per_process.PerDatabase(Snapshot, Snapshot.inherited)


def answer(db, fn, *args, own_state=True):
    """``fn(state, *args)`` on the fresh state of ``db``: this process's
    own, or, where the workers of a host share state readers
    (``shared``), a reader's.  ``fn`` is a registered question
    (``questions``); its arguments and result are plain values, never
    the state's own objects, so that either way gives the same.

    When no reader starts on it in time, this process answers from a
    state of its own (read then, dropped once the readers answer again),
    unless its client says otherwise (``shared.Client.own_state``) or
    the caller has an answer of its own, from SQL (``own_state=False``):
    then ``shared.Unreachable`` is raised.  Reading a whole state is the
    slowest way to answer, and under load (readers busy with listings
    of every provider) it costs each worker that falls back a copy of
    the state: 140 MB at 100,000 providers."""
    name = questions.checked(fn)
    client = shared.client_of(db)
    if client is not None:
        try:
            with tracing.span('state.reader', question=name):
                result = client.call(name, args, tracing.carried())
        except shared.Unreachable as why:
            if not client.own_state:
                raise
            if not own_state:
                _fell_back(why, 'the database')
                raise
            _fell_back(why, "this worker's own state")
        else:
            if _snapshots.holds(db):
                _forget_own_state(db)
            return result
    return answer_here(db, fn, args)


def _forget_own_state(db):
    """Let this worker's own state go, and the memory it took back to
    the system: freed, its pages stayed with the worker (30 MB a worker
    at 100,000 providers)."""
    _snapshots.forget(db)
    allocator.give_back_free_memory()


_fallbacks_logged = set()


def _fell_back(why, to):
    """Say once per reason and way, and count each time, that a worker
    answers ``to`` another way than from a reader."""
    metrics.count_state_fallback(why.reason)
    if (why.reason, to) not in _fallbacks_logged:
        _fallbacks_logged.add((why.reason, to))
        LOG.warning('Answering from %s (said once per reason): %s', to, why)


def answer_here(db, fn, args):
    """``fn(state, *args)`` on this process's fresh state of ``db``;
    under the tests, its arguments, result and error crossed through
    the wire format (``questions.CROSS_THE_WIRE``)."""
    if not questions.CROSS_THE_WIRE:
        with of(db).fresh() as state, tracing.span(
                'state.question', question=fn.__qualname__):
            return fn(state, *args)
    args = wire.round_trip(args)
    try:
        with of(db).fresh() as state, tracing.span(
                'state.question', question=fn.__qualname__):
            result = fn(state, *args)
    except Exception as error:
        raise wire.round_trip(error) from error
    return wire.round_trip(result)


def of(db):
    """The process's Snapshot of the database ``db`` serves (a forked
    worker's own: see ``per_process``)."""
    return _snapshots.of(db)
