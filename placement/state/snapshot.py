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
import logging
import threading
import weakref

from placement import version
from placement.state import catch_up
from placement.state import per_process
from placement.state import providers
from placement.state import registration

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
        if catch_up.unchanged(db, self.state.position):
            return False, 0
        return db.read(refresh, self.state)

    def warm(self):
        """Read the state now (a worker starting), so that no request
        waits for it; a failure leaves that to the first request."""
        try:
            with self.fresh():
                pass
        except Exception as error:  # noqa: BLE001 - only a head start
            LOG.warning('Allocation-candidate state not read at start: %s',
                        error)


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


_snapshots = per_process.PerDatabase(Snapshot)


def of(db):
    """The process's Snapshot of the database ``db`` serves (a forked
    worker's own: see ``per_process``)."""
    return _snapshots.of(db)
