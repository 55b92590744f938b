"""The API processes that read the change log, as they report themselves.

A process that keeps a state from the change log (see ``changes``)
follows one protocol of it.  When a migration raises the database's
protocol, every process still running the release before it can no
longer trust the log; ``placement-status upgrade check`` names them from
here.  Rows are written only by the processes themselves: one when a
process first reads the log, then its ``seen_at`` at most once a minute
while it keeps reading (``Registration``), never in a request's own
transaction.
"""

import atexit
import datetime
import logging
import os
import socket
import threading
import time
import weakref

import sqlalchemy as sa

from placement.storage import changes
from placement.storage import tables

LOG = logging.getLogger(__name__)

_PROCESSES = tables.api_processes

# How often a process says it is still reading the log.
REPORT_EVERY = 60
# A process not heard of for this long is taken to be gone...
LIVE_WITHIN = datetime.timedelta(minutes=10)
# ...and its row is removed by the next process to start after this.
FORGET_AFTER = datetime.timedelta(days=1)


def _register(conn, host, pid, protocol, release, now):
    """The id of a new row for this process; rows of processes long gone
    are removed with it."""
    changes.touch(conn)     # nothing the candidate state reads
    conn.execute(_PROCESSES.delete().where(
        _PROCESSES.c.seen_at < now - FORGET_AFTER))
    return conn.execute(_PROCESSES.insert().values(
        host=host, pid=pid, protocol=protocol, release=release,
        started_at=now, seen_at=now)).inserted_primary_key[0]


def _seen(conn, process_id, now):
    """Whether the row ``process_id`` was there to be marked seen."""
    changes.touch(conn)
    return conn.execute(_PROCESSES.update().where(
        _PROCESSES.c.id == process_id).values(seen_at=now)).rowcount == 1


def _forget(conn, process_id):
    changes.touch(conn)
    conn.execute(_PROCESSES.delete().where(_PROCESSES.c.id == process_id))


def live(conn, now=None):
    """(host, pid, protocol, release, seen_at) of the processes heard of
    within LIVE_WITHIN, oldest protocol first."""
    now = now or tables.utcnow()
    return [tuple(row) for row in conn.execute(
        sa.select(_PROCESSES.c.host, _PROCESSES.c.pid,
                  _PROCESSES.c.protocol, _PROCESSES.c.release,
                  _PROCESSES.c.seen_at)
        .where(_PROCESSES.c.seen_at >= now - LIVE_WITHIN)
        .order_by(_PROCESSES.c.protocol, _PROCESSES.c.host,
                  _PROCESSES.c.pid))]


class Registration:
    """This process's row, kept current from whichever thread reads the
    log next after REPORT_EVERY seconds, and removed when the process
    exits normally (a process killed leaves it to age out).  A failure to
    write it is never a request's failure: it is tried again a period
    later."""

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
            if self._id is None or not db.write(_seen, self._id, now):
                self._id = db.write(
                    _register, socket.gethostname()[:255], self._pid,
                    changes.PROTOCOL, self._release, now)
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
            db.write(_forget, self._id)
        except Exception as error:  # noqa: BLE001 - it ages out instead
            LOG.debug('API process record not removed: %s', error)


_registrations = weakref.WeakSet()


@atexit.register
def _forget_all():
    """At a normal exit, every registration's row goes."""
    for registration in list(_registrations):
        registration.forget()
