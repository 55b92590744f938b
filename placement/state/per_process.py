"""State a process keeps per database it serves, safe across fork.

The in-memory candidate state (``placement.state.snapshot``) and the
project usages kept in memory (``project_usages``) are each one object
per database per process.  A worker forked from a process that had loaded
the application (``placement-api``, uwsgi without ``lazy-apps``, gunicorn
``--preload``) gets objects of its own: a lock the parent held at the
fork would never be released in the child.  Each is made afresh, or,
where ``inherit`` says how, from the parent's (the candidate state: the
child then shares the parent's pages until it changes them, and has only
to catch up with the change log, not to read everything).

The child's objects are settled in the fork itself (``os.register_at_fork``
runs in the child before it has a second thread), not at its first use:
two threads of a child each finding the parent's objects once made two
Snapshots of one inherited State, which they then refreshed at once under
two locks, and a listing showed each provider twice.  A process forked by
C code that runs no Python hook still finds out by its pid; one lock of
the child's own serializes that.
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
    ``make(db)`` the first time, or in a forked child by
    ``inherit(the parent's object)`` when that gives one (not None)."""

    def __init__(self, make, inherit=None):
        self._make = make
        self._inherit = inherit
        self._objects = _Objects()
        # Taken only in a child that learns of its fork by its pid.
        self._fork_lock = threading.Lock()
        alive = weakref.ref(self)

        def after_fork_in_child():
            settled = alive()
            if settled is not None:
                settled._after_fork()

        os.register_at_fork(after_in_child=after_fork_in_child)

    def of(self, db):
        objects = self._objects
        if objects.pid != os.getpid():
            objects = self._forked_late()
        with objects.lock:
            found = objects.by_database.get(db)
            if found is None:
                found = objects.by_database[db] = self._make(db)
            return found

    def holds(self, db):
        """Whether this process has made its object for ``db``."""
        return db in self._objects.by_database and (
            self._objects.pid == os.getpid())

    def forget(self, db):
        """Drop this process's object for ``db`` (made again when next
        asked for)."""
        objects = self._objects
        with objects.lock:
            objects.by_database.pop(db, None)

    def _after_fork(self):
        """In a child, before it has a second thread: its own objects."""
        self._fork_lock = threading.Lock()
        if self._objects.pid != os.getpid():
            self._objects = self._forked(self._objects)

    def _forked_late(self):
        """The child's objects where no fork hook ran: made once, by the
        first thread to ask."""
        with self._fork_lock:
            if self._objects.pid != os.getpid():
                self._objects = self._forked(self._objects)
            return self._objects

    def _forked(self, parent):
        """A forked child's objects, from its parent's ``parent``."""
        objects = _Objects()
        if self._inherit is not None:
            for db, inherited in list(parent.by_database.items()):
                child = self._inherit(inherited)
                if child is not None:
                    objects.by_database[db] = child
        return objects
