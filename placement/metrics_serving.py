"""Serving ``[metrics]``: what is served, and by which process.

Workers record their samples in files of a directory the host's workers
share (prometheus-client's multiprocess mode), and one process of the
host serves their sums on ``[metrics] bind``, with the gauges it works
out when scraped (``collectors``):

- under ``placement-api``, its parent, which makes the directory before
  it forks the workers (``cmd/api.py``);
- under uwsgi (with or without ``lazy-apps``), gunicorn or mod_wsgi, the
  host's metrics process (``cmd/metrics_process.py``).  The directory is
  named after the configuration's identity on the host and the server's
  process group (``wsgi_directory``): every worker of one server, and no
  other server's, writes there, and a server started again begins its
  counters afresh, as under placement-api.  The process holds the
  directory's lock while it runs; a worker that finds the lock free
  (when it loads the application, and then at most every
  ``_CHECK_EVERY`` seconds as it answers) starts one (``HostServer``).
  Nothing a worker does waits on it: workers only write their files.

The gauges worked out from the state (``placement_gauges``, the audit's)
ask it as every read does (``snapshot.answer``): the placement-api
parent's own state, or the host's state readers, with their deadline,
where the workers share them, or a state of the metrics process's own
where they do not (servers that load the application before they fork).
"""

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
import time

from placement import audit_metrics
from placement import capacity_metrics
from placement import metrics
from placement import placement_gauges
from placement.state import shared

LOG = logging.getLogger(__name__)

_PREFIX = 'placement-metrics-'
# A WSGI server's directory: the configuration's digest, the group's id.
_WSGI_DIRECTORY = re.compile(_PREFIX + '[0-9a-f]{16}-([0-9]+)')
_LOCK = 'serving.lock'
# How often, at most, a worker looks for the host's metrics process.
_CHECK_EVERY = 5.0
# The helper processes of a server, which do not keep its metrics process.
HELPERS = ('placement.cmd.state_process', 'placement.cmd.metrics_process')


def collectors(conf, db):
    """The collectors of what this process works out for a scrape, and
    the capacity gauges' refresher started.  A bad ``capacity_request``
    (placement-api refuses to start on one; a WSGI server's metrics
    process has no one to tell but its log) leaves out the capacity
    gauges, not the rest."""
    found = []
    try:
        requests = capacity_metrics.parse_requests(
            conf.metrics.capacity_request)
    except capacity_metrics.BadCapacityRequest as error:
        LOG.error('[metrics] capacity_request: %s: no placement_capacity '
                  'gauges are served', error)
        requests = []
    if requests:
        collector = capacity_metrics.Collector()
        capacity_metrics.Refresher(db, requests,
                                   conf.metrics.capacity_interval,
                                   collector).start()
        found.append(collector)
    if conf.metrics.audit_interval:
        found.append(audit_metrics.Collector(db, conf.metrics.audit_interval))
    if conf.metrics.placement_gauges:
        found.append(placement_gauges.Collector(
            db, conf.metrics.placement_gauges_per_provider,
            conf.metrics.placement_allocation_gauges))
    return found


# -- the samples' directory of a WSGI server ---------------------------------

def wsgi_directory(conf):
    """The samples' directory of this WSGI server's workers, made private
    to this user; directories that servers now gone left are removed."""
    folder = tempfile.gettempdir()
    _remove_left_over(folder)
    path = os.path.join(folder, '%s%s-%d' % (_PREFIX, hashlib.sha256(
        shared.socket_name(conf).encode()).hexdigest()[:16], os.getpgrp()))
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _remove_left_over(folder):
    """Remove the directories of process groups gone (a metrics process
    killed, or never started, leaves its directory)."""
    for name in os.listdir(folder):
        found = _WSGI_DIRECTORY.fullmatch(name)
        if found and not group_alive(int(found.group(1))):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def group_alive(group):
    """Whether a process of process group ``group`` runs."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def record_in(directory):
    """Record this process's samples in ``directory`` (before anything
    imports prometheus-client, whose multiprocess mode reads it then)."""
    metrics.prepare_multiprocess(directory)


def forget_dead(directory):
    """Let the live gauges of processes gone no longer count (their
    counters and histograms still do, as prometheus-client sums them)."""
    from prometheus_client import multiprocess
    pids = set()
    for name in os.listdir(directory):
        stem, _, pid = name[:-len('.db')].rpartition('_')
        if name.endswith('.db') and stem.startswith('gauge_live') and (
                pid.isdigit()):
            pids.add(int(pid))
    for pid in pids:
        if not os.path.exists('/proc/%d' % pid):
            multiprocess.mark_process_dead(pid, directory)


@contextlib.contextmanager
def serving_lock(directory):
    """Hold ``directory``'s lock for the block: True when this process
    took it, False when another process holds it."""
    fd = os.open(os.path.join(directory, _LOCK), os.O_RDWR | os.O_CREAT,
                 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class HostServer:
    """The host's metrics process, from a worker: started when nothing
    holds the directory's lock (a process that holds it serves, or is
    starting to: it takes the lock before it binds)."""

    def __init__(self, directory, argv):
        self.directory = directory
        self.argv = argv
        self._lock = threading.Lock()
        self._checked = None

    def check(self):
        """Start the metrics process if none runs: at most every
        ``_CHECK_EVERY`` s, by one thread, never waiting on another."""
        now = time.monotonic()
        if self._checked is not None and now - self._checked < _CHECK_EVERY:
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._checked = now
            with serving_lock(self.directory) as free:
                if not free:
                    return
            interpreter = shared.python()
            if interpreter is None:
                LOG.error('[metrics] not served: no Python interpreter '
                          'found to run the metrics process')
                return
            LOG.info('Starting the metrics process for %s', self.directory)
            shared.launch(interpreter, 'placement.cmd.metrics_process',
                          self.argv + ['--directory', self.directory])
        except OSError as error:
            LOG.error('[metrics] not served: %s', error)
        finally:
            self._lock.release()
