"""WSGI entry points, for any WSGI server.

- ``placement.wsgi.api:application``: upstream's documented entry point,
  the one deployment tools load (kolla-ansible's and devstack's uwsgi
  configurations, mod_wsgi set-ups).  Importing ``placement.wsgi.api``
  builds it; mod_wsgi may also run that file as a script.
- ``placement.wsgi:application``: the same application object, built on
  first access rather than when this package is imported, so that
  importing ``placement.wsgi.api`` builds one application, not two.
- ``placement.wsgi:init_application()``: a new application at each call,
  for servers that take a factory.

The configuration file is ``$PLACEMENT_CONFIG_FILE``, else
``$OS_PLACEMENT_CONFIG_DIR/placement.conf``, else oslo.config's default
locations (``/etc/placement/placement.conf`` ...); see README.rst.

The candidate state is read when the application is built.  A worker
that loads it (uwsgi's ``lazy-apps``, mod_wsgi) asks the host's state
readers instead, forked by the keeper the first such worker started
(``state.shared``): one state per host, still warm when a worker
restarts.  Every entry point may be loaded before the server forks
its workers (uwsgi without ``lazy-apps``, gunicorn ``--preload``): a
worker never uses a database connection or lock the parent made
(``storage.engine.Database``), and starts from the parent's candidate
state, catching up with the change log (``state.snapshot``).

With ``[metrics] enabled``, workers record their samples in a directory
of the server's, and the host's metrics process serves their sums on
``[metrics] bind`` (``metrics_serving``): started here when none runs,
and again by a worker that finds it gone.
"""

from placement import allocator
from placement import app
from placement import config_loader
from placement import metrics
from placement import metrics_serving
from placement.state import kept_answers
from placement.state import shared
from placement.state import snapshot
from placement.storage import engine


def init_application():
    """A new WSGI application, configured as the module docstring says."""
    conf = config_loader.load(
        default_config_files=config_loader.wsgi_config_files())
    samples = None
    if conf.metrics.enabled:
        samples = metrics_serving.wsgi_directory(conf)
        metrics_serving.record_in(samples)
    db = engine.Database.from_conf(conf)
    application = app.build_app(conf, db)
    if shared.loaded_in_each_worker():
        kept_answers.keep_on_host(db, shared.host_name(conf))
    if shared.attach(db, conf):
        # Answers arrive whole from a state reader: a large one's
        # buffers go back to the system once sent.
        allocator.return_large_buffers()
    else:
        snapshot.serving(db)
    if samples is not None:
        _keep_metrics_served(conf, samples, shared.client_of(db))
    db.dispose()
    return application


def _keep_metrics_served(conf, samples, client):
    """Start the host's metrics process if none runs, and have the
    workers look for it as they answer; it asks ``client``'s readers
    (None: it keeps a state of its own)."""
    argv = shared.config_argv(conf)
    if client is not None:
        argv += ['--state-name', client.name, '--readers',
                 str(client.readers)]
    host_server = metrics_serving.HostServer(samples, argv)
    host_server.check()
    metrics.keep_served(host_server.check)


def __getattr__(name):
    if name == 'application':
        from placement.wsgi import api
        return api.application
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
