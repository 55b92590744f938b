"""The API processes that read the change log, as they report themselves.

A process that keeps a state from the change log (see ``changes``)
follows one protocol of it.  When a migration raises the database's
protocol, every process still running the release before it can no
longer trust the log; ``placement-status upgrade check`` names them from
here.  Rows are written only by the processes themselves
(``placement.state.registration``), never in a request's own
transaction, and none is logged as a change.
"""

import datetime

import sqlalchemy as sa

from placement.storage import changes
from placement.storage import tables

_PROCESSES = tables.api_processes

# A process not heard of for this long is taken to be gone...
LIVE_WITHIN = datetime.timedelta(minutes=10)
# ...and its row is removed by the next process to start after this.
FORGET_AFTER = datetime.timedelta(days=1)


def register(conn, host, pid, protocol, release, now):
    """The id of a new row for this process; rows of processes long gone
    are removed with it."""
    changes.touch(conn)     # nothing the candidate state reads
    conn.execute(_PROCESSES.delete().where(
        _PROCESSES.c.seen_at < now - FORGET_AFTER))
    return conn.execute(_PROCESSES.insert().values(
        host=host, pid=pid, protocol=protocol, release=release,
        started_at=now, seen_at=now)).inserted_primary_key[0]


def seen(conn, process_id, now):
    """Whether the row ``process_id`` was there to be marked seen."""
    changes.touch(conn)
    return conn.execute(_PROCESSES.update().where(
        _PROCESSES.c.id == process_id).values(seen_at=now)).rowcount == 1


def forget(conn, process_id):
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
