"""``GET /healthcheck``: oslo.middleware's health check, for load balancers.

Answered before authentication, as the OpenStack convention has it: 200
``OK`` while the service can reach its database, 503 when it cannot, so
that a load balancer takes a node out while its database is away.  Also
503 when the database's change log follows a protocol this process does
not (a newer release migrated it while this process kept serving): the
process still answers exactly, by reading the tables again for every
answer it would give from memory, but slowly, and it should be drained
and restarted with the new release.  The
database check is the ``placement_database`` backend (on by default in
``[healthcheck] backends``); oslo.middleware's own backends
(``disable_by_file`` ...) may be added.  The answer says only "OK" or
"database unreachable" unless ``[healthcheck] detailed`` is set.
"""

import threading

from oslo_config import cfg
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import opts as healthcheck_opts
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from placement.storage import changes
from placement.storage import engine

PATH = '/healthcheck'
BACKEND = 'placement_database'
# Seconds a probe may take to connect: a load balancer's check must get
# its 503 well before its own timeout when the database host is gone.
_CONNECT_TIMEOUT = 3


def set_defaults():
    """The database check on by default (also in the generated sample)."""
    cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS, backends=[BACKEND])


def register_opts(conf):
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, 'healthcheck')


class DatabaseHealthcheck(pluginbase.HealthcheckBaseExtension):
    """Can this process open a connection and run a query?"""

    def __init__(self, oslo_conf, conf):
        super().__init__(oslo_conf, conf)
        url = engine.parse_url(engine.build_url(oslo_conf))
        connect_args = {}
        if url.get_backend_name() in ('postgresql', 'mysql'):
            connect_args['connect_timeout'] = _CONNECT_TIMEOUT
        # A pool of its own, of one: the probe never waits behind requests
        # for a connection, and costs at most one per process (a
        # Database's, so that a worker forked after it was made opens its
        # own).
        self.db = engine.Database(sa.create_engine(
            url, pool_size=1, max_overflow=0, pool_timeout=_CONNECT_TIMEOUT,
            pool_pre_ping=True, connect_args=connect_args))

    def healthcheck(self, server_port):
        try:
            with self.db.engine.connect() as conn:
                conn.exec_driver_sql('SELECT 1').scalar()
                mismatch = _protocol_mismatch(conn)
        except Exception as exc:  # any failure to reach it is the answer
            self.db.dispose()
            return pluginbase.HealthcheckResult(
                available=False, reason='database unreachable',
                details=str(exc))
        if mismatch is not None:
            return pluginbase.HealthcheckResult(
                available=False, reason='change log protocol mismatch',
                details=mismatch)
        return pluginbase.HealthcheckResult(available=True, reason='OK')


def _protocol_mismatch(conn):
    """``changes.protocol_mismatch``, or why it could not be read from a
    database that answers (one not migrated to this release)."""
    try:
        return changes.protocol_mismatch(conn)
    except Exception as exc:  # noqa: BLE001 - the answer is the reason
        return ('the database has no change log of this release (%s): '
                'run "placement-manage db sync"' % type(exc).__name__)


class HealthcheckRouter:
    """Sends ``/healthcheck`` to oslo.middleware's health check and every
    other path to ``application``."""

    def __init__(self, application, conf):
        self.application = application
        self.conf = conf
        self._check = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == PATH:
            return self.check()(environ, start_response)
        return self.application(environ, start_response)

    def check(self):
        """oslo.middleware's health check, made at the first probe: it
        imports jinja2 (2 MB of each worker that is never probed), and
        its database backend opens a pool of its own."""
        with self._lock:
            if self._check is None:
                self._check = healthcheck.Healthcheck(None, self.conf)
        return self._check
