"""A host's metrics process: ``[metrics] bind`` for a WSGI server's workers
(``placement.metrics_serving``).

Started by a worker (or the master loading the application) that finds
the samples' directory's lock free, through the launcher the state
keeper is started by, with the worker's configuration; not a command
for operators.  It takes the lock before anything else, so that of
several started at once one serves and the others exit, then binds
(again every ``_TICK`` seconds while another process holds the
address), and serves the sums of the workers' samples with the gauges it
works out when scraped.  Where the workers share state readers
(``--state-name``), it asks them, with their deadline, and a scrape they
do not answer in time goes without the state's gauges; otherwise it
keeps a state of its own.  It exits, removing the directory, once no
process of its process group (the server's) other than the server's
helpers has run for ``--idle-seconds``.
"""

import logging
import os
import shutil
import signal
import sys
import time

from oslo_config import cfg

from placement import config_loader
from placement import metrics
from placement import metrics_serving
from placement.state import shared
from placement.storage import engine

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.StrOpt('directory', required=True,
               help='Where the workers record their samples.'),
    cfg.StrOpt('state-name',
               help='The state keeper whose readers answer the state\'s '
                    'questions (none: a state of its own).'),
    cfg.IntOpt('readers', default=2, min=1,
               help='How many readers the keeper runs.'),
    cfg.IntOpt('idle-seconds', default=10, min=1,
               help='Exit once the server\'s process group has had no '
                    'process but the server\'s helpers this long.'),
]

# How often the dead workers' live gauges are forgotten, the server looked
# for, and the address tried again.
_TICK = 5


def _server_alive():
    """Whether a process of this process group other than the server's
    helpers (metrics_serving.HELPERS) runs (not one that has exited and
    waits for its parent to reap it)."""
    group = os.getpgrp()
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open('/proc/%s/stat' % entry, 'rb') as handle:
                stat = handle.read()
            # The fields after the command's name, in parentheses: its
            # state (a zombie has exited), its parent, its group.
            fields = stat[stat.rindex(b')') + 2:].split()
            if fields[0] == b'Z' or int(fields[2]) != group:
                continue
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                argv = handle.read().split(b'\0')
        except (OSError, ValueError, IndexError):
            continue
        if not any(helper.encode() in argv
                   for helper in metrics_serving.HELPERS):
            return True
    return False


def _bind(conf, served):
    """The metrics' HTTP server on ``[metrics] bind``, once the address is
    free (tried every _TICK s, said once)."""
    said = False
    while True:
        try:
            return metrics.serve(conf.metrics.bind, served)
        except OSError as error:
            if not said:
                LOG.error('[metrics] bind %s: %s; trying again every %d s',
                          conf.metrics.bind, error, _TICK)
                said = True
        if not _server_alive():
            return None
        time.sleep(_TICK)


def _stop(number, _frame):
    raise SystemExit(128 + number)


def main(argv=None):
    # The server's stop (its process group's SIGTERM) stops this process
    # too, which removes the directory as it goes.
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, _stop)
    conf = config_loader.load(
        sys.argv[1:] if argv is None else argv, cli_opts=CLI_OPTS,
        api=False)
    with metrics_serving.serving_lock(conf.directory) as mine:
        if not mine:
            return 0
        try:
            return _serve(conf)
        finally:
            shutil.rmtree(conf.directory, ignore_errors=True)


def _serve(conf):
    metrics_serving.record_in(conf.directory)
    db = engine.Database.from_conf(conf)
    if conf.state_name:
        shared.answer_through(db, shared.Client(
            conf.state_name, shared.config_argv(conf), conf.readers,
            own_state=False))
    server = _bind(conf, metrics_serving.collectors(conf, db))
    if server is not None:
        LOG.info('Metrics served on http://%s/metrics', conf.metrics.bind)
        _serve_while_the_server_runs(conf)
    return 0


def _serve_while_the_server_runs(conf):
    alone_since = None
    while True:
        time.sleep(_TICK)
        metrics_serving.forget_dead(conf.directory)
        if _server_alive():
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > conf.idle_seconds:
            return


if __name__ == '__main__':
    sys.exit(main())
