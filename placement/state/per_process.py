"""State a process keeps per database it serves, safe across fork.

The in-memory candidate state (``placement.state.snapshot``) and the
project usages kept in memory (``project_usages``) are each one object
per database per process.  A worker forked from a process that had loaded
the application (uwsgi without ``lazy-apps``, gunicorn ``--preload``)
starts afresh: a lock the parent held at the fork would never be
released in the child, and the parent's state is not the worker's to
keep.  The worker reads its own at its first request, as at a start.
"""

import os
import threading
import weakref


class _Objects:
    """One process's objects, by database (weakly: a test suite making a
    database per test must be able to free each)."""

    def __init__(self):
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.by_database = weakref.WeakKeyDictionary()


class PerDatabase:
    """``of(db)``: this process's object for ``db``, made by
    ``make(db)`` the first time."""

    def __init__(self, make):
        self._make = make
        self._objects = _Objects()

    def of(self, db):
        objects = self._objects
        if objects.pid != os.getpid():
            # Threads racing here each start afresh; one is kept, and an
            # object made in the other is simply read again once.
            objects = self._objects = _Objects()
        with objects.lock:
            found = objects.by_database.get(db)
            if found is None:
                found = objects.by_database[db] = self._make(db)
            return found
