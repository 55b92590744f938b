"""``placement-api``: serve the API with gunicorn.

    placement-api [--config-file FILE] [--bind HOST:PORT] [--workers N]

The parent prepares the database (migrated when configured, standard
classes and traits synced), builds the application and reads the
candidate state, then forks the workers: each shares the parent's pages
of the application and the state until it changes them (a host's memory
for the state then grows little with its workers), opens connections of
its own, and has only to catch up with the change log to serve, so no
request waits for a worker to read the state.  The parent brings its
state up to date before each fork, so that a worker started later (one
that died, say) catches up as little.
"""

import atexit
import logging
import shutil
import sys
import tempfile

from gunicorn.app import base as gunicorn_base
from oslo_config import cfg

from placement import allocator
from placement import app
from placement import capacity_metrics
from placement import config_loader
from placement import metrics
from placement import metrics_serving
from placement.state import kept_answers
from placement.state import shared
from placement.state import snapshot
from placement.storage import engine

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.StrOpt('bind', default='127.0.0.1:8778',
               help='HOST:PORT to listen on.'),
    cfg.IntOpt('workers', default=1, min=1,
               help='Number of worker processes.'),
    cfg.IntOpt('threads', default=8, min=1,
               help='Requests each worker process serves at once.'),
    cfg.IntOpt('client-timeout', default=30, min=1,
               help='Seconds a client has to send a whole request once '
                    'it has connected (or, kept alive, started the next '
                    'one); a connection still incomplete then is answered '
                    '408 and closed. No thread waits on a slow client.'),
    cfg.IntOpt('max-request-line', default=16384, min=1024,
               help='Longest request line accepted, in bytes (414 '
                    'beyond).'),
    cfg.IntOpt('max-header-size', default=65536, min=1024,
               help='Largest header block accepted, in bytes (431 '
                    'beyond).'),
    cfg.IntOpt('max-worker-memory', default=64, min=0,
               help='Megabytes of memory a worker may have of its own '
                    '(not shared with the parent, which holds the '
                    'application and the candidate state) before it is '
                    'replaced by a fresh one forked from the parent; 0 '
                    'never replaces one.'),
]


class _Server(gunicorn_base.BaseApplication):

    def __init__(self, conf):
        self.conf = conf
        super().__init__()

    def load_config(self):
        self.cfg.set('bind', [self.conf.bind])
        self.cfg.set('workers', self.conf.workers)
        self.cfg.set('worker_class', 'placement.cmd.worker.Worker')
        self.cfg.set('threads', self.conf.threads)
        # The worker enforces the size limits while a request arrives
        # (--max-request-line, --max-header-size); gunicorn's own must not
        # undercut them (its request line limit is at most 8190 bytes
        # unless switched off).
        self.cfg.set('limit_request_line', 0)
        self.cfg.set('limit_request_field_size', self.conf.max_header_size)
        self.cfg.set('timeout', 120)
        self.cfg.set('graceful_timeout', 10)
        self.cfg.set('accesslog', None)
        self.cfg.set('proc_name', 'placement-api')
        self.cfg.set('control_socket_disable', True)
        self.cfg.set('child_exit', _child_exit)
        self.cfg.set('preload_app', True)
        self.cfg.set('pre_fork', self._pre_fork)

    def load(self):
        """The application, built in the parent (``preload_app``)."""
        self.db = engine.Database.from_conf(self.conf)
        application = app.build_app(self.conf, self.db, prepare=False)
        snapshot.serving(self.db)
        if self.conf.workers > 1:
            kept_answers.keep_on_host(self.db, shared.host_name(self.conf))
        if self.conf.metrics.enabled:
            _serve_metrics(self.conf, self.db)
        self.db.dispose()
        return application

    def _pre_fork(self, _arbiter, _worker):
        """Bring the parent's state up to date for the worker about to be
        forked: it then has little to catch up with, and shares the
        lookups worked out here.  A failure (the database away) leaves
        that to the worker."""
        with self.db.between_forks():
            snapshot.of(self.db).warm('before a fork')


def _child_exit(_server, worker):
    if metrics.samples_directory():
        metrics.worker_exited(worker.pid)


def _record_metrics(conf):
    """Before the workers fork: their samples' directory, removed when
    the server exits; a bad ``capacity_request`` stops the start."""
    try:
        capacity_metrics.parse_requests(conf.metrics.capacity_request)
    except capacity_metrics.BadCapacityRequest as exc:
        raise SystemExit(str(exc))
    directory = tempfile.mkdtemp(prefix='placement-metrics-')
    atexit.register(shutil.rmtree, directory, True)
    metrics_serving.record_in(directory)


def _serve_metrics(conf, db):
    """The workers' sums and the gauges worked out from the parent's own
    state (the one the workers are forked with) on [metrics] bind."""
    try:
        metrics.serve(conf.metrics.bind,
                      metrics_serving.collectors(conf, db))
    except OSError as error:
        raise SystemExit('placement-api: [metrics] bind %s: %s'
                         % (conf.metrics.bind, error))
    LOG.info('Metrics served on http://%s/metrics', conf.metrics.bind)


def main(argv=None):
    allocator.return_large_buffers()
    try:
        conf = config_loader.load(
            sys.argv[1:] if argv is None else argv, cli_opts=CLI_OPTS)
    except engine.NoConnection as error:
        sys.exit('placement-api: %s' % error)
    db = engine.Database.from_conf(conf)
    app.prepare_database(conf, db)
    db.dispose()
    if conf.metrics.enabled:
        _record_metrics(conf)
    LOG.info('placement-api listening on %s with %d worker(s), database %s',
             conf.bind, conf.workers, db.engine.url.render_as_string(
                 hide_password=True))
    _Server(conf).run()


if __name__ == '__main__':
    main()
