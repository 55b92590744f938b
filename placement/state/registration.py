"""This process's record among the API processes reading the change log
(``storage.api_processes``), kept while it keeps a state from the log.

The record says which protocol of the log this process follows, so that
``placement-status upgrade check`` can name processes a newer release's
migration left behind.  Whichever thread reads the state first after
REPORT_EVERY seconds writes it, in a transaction of its own; a failure
to write it is never a request's failure.  A process that exits normally
removes its record; one killed leaves it to age out.
"""

import atexit
import logging
import os
import socket
import threading
import time
import weakref

from placement.storage import api_processes
from placement.storage import changes
from placement.storage import tables

LOG = logging.getLogger(__name__)

# How often a process says it is still reading the log.
REPORT_EVERY = 60


class Registration:
    """This process's record for one database."""

    def __init__(self, release):
        self._release = release
        self._lock = threading.Lock()
        self._pid = None
        self._id = None
        self._due = 0.0
        self._db = None     # weakly: a registration keeps no database
        _registrations.add(self)

    def report(self, db):
        """Write this process's row if it is due; cheap when it is not."""
        if time.monotonic() < self._due or not self._lock.acquire(False):
            return
        try:
            self._due = time.monotonic() + REPORT_EVERY
            if self._pid != os.getpid():    # new, or a forked child
                self._pid, self._id = os.getpid(), None
            now = tables.utcnow()
            if self._id is None or not db.write(api_processes.seen,
                                                self._id, now):
                self._id = db.write(
                    api_processes.register, socket.gethostname()[:255],
                    self._pid, changes.PROTOCOL, self._release, now)
                self._db = weakref.ref(db)
        except Exception as error:  # noqa: BLE001 - retried later
            LOG.debug('API process not recorded: %s', error)
        finally:
            self._lock.release()

    def forget(self):
        """Remove the row of this process (a child forked after its
        parent registered has a row of its own, or none)."""
        db = self._db() if self._db is not None else None
        if db is None or self._id is None or self._pid != os.getpid():
            return
        try:
            db.write(api_processes.forget, self._id)
        except Exception as error:  # noqa: BLE001 - it ages out instead
            LOG.debug('API process record not removed: %s', error)


_registrations = weakref.WeakSet()


@atexit.register
def _forget_all():
    """At a normal exit, every registration's row goes."""
    for registration in list(_registrations):
        registration.forget()
