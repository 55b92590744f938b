"""Traces, as upstream Placement has them (osprofiler), and spans of what
costs time here and nowhere upstream.

osprofiler is optional, as upstream imports it: where it is installed,
its options are registered (``[profiler]``, ``[profiler_jaeger]``,
``[profiler_otlp]``, the same groups and names upstream registers), and
with ``[profiler] enabled`` each process that builds the application
sends its spans to ``connection_string`` and the application is wrapped
in osprofiler's WSGI middleware, which takes a request's trace from the
headers nova's scheduler signs (``X-Trace-Info``, ``X-Trace-HMAC``, with
one of ``hmac_keys``).  Placement's part of a server boot is then in the
boot's trace.  ``trace_sqlalchemy`` adds every SQL statement.

Besides the request and its SQL, a traced request shows what upstream has
no part like: the question asked of the state in memory (``span``:
``state.question``), the catch-up with the change log before it
(``state.catch_up``), and, where the host's workers share state readers,
the round trip to a reader (``state.reader``), inside which the reader
continues the trace (``carried``, ``continued``): its question, its
catch-up and its SQL are in the request's trace too.

Tracing off costs nothing but one global read at each of those places:
``span`` and ``sql`` are a no-op context until ``init`` has run.
"""

import contextlib
import logging
import socket
from urllib import parse

from oslo_utils import importutils

LOG = logging.getLogger(__name__)

# osprofiler's modules, imported when first needed (``_osprofiler``):
# with its drivers they are 5 MB of a process, which the state keeper
# and its readers need only when tracing is on.
_initializer = _notifier = _profiler = _requests = _sqlalchemy = None
_web = None

_ON = False
_SQL = False
_OFF = contextlib.nullcontext()
# The groups of osprofiler's options.
GROUPS = ('profiler', 'profiler_jaeger', 'profiler_otlp')


def register_opts(conf):
    """osprofiler's options, where osprofiler is installed: ``[profiler]``
    as upstream registers it (``set_defaults``), and the Jaeger and OTLP
    groups, which osprofiler registers on oslo.config's global object
    only (upstream's own configuration never has them, and its OTLP and
    Jaeger drivers then fail to start: no such option)."""
    opts = importutils.try_import('osprofiler.opts')
    if opts is None:
        return
    opts.set_defaults(conf)
    for group, group_opts in opts.list_opts():
        if group != 'profiler':
            conf.register_opts(group_opts, group=group)


def register_opts_if_set(conf):
    """``register_opts`` once ``conf`` has been read, only where its
    files set one of osprofiler's groups: a process that answers no API
    request (the state keeper) imports osprofiler only to trace."""
    if set(GROUPS) & set(conf.list_all_sections()):
        register_opts(conf)


def enabled(conf):
    return 'profiler' in conf and conf.profiler.enabled


def _osprofiler():
    """Import osprofiler's modules into this module's globals."""
    global _initializer, _notifier, _profiler, _requests, _sqlalchemy
    global _web
    from osprofiler import initializer
    from osprofiler import notifier
    from osprofiler import profiler
    from osprofiler import requests
    from osprofiler import sqlalchemy
    from osprofiler import web
    _initializer, _notifier, _profiler = initializer, notifier, profiler
    _requests, _sqlalchemy, _web = requests, sqlalchemy, web


def init(conf, db=None, service='placement-api'):
    """Send this process's spans where ``[profiler]`` says, and trace
    ``db``'s SQL with ``trace_sqlalchemy``; nothing unless enabled."""
    global _ON, _SQL
    if not enabled(conf):
        return
    _osprofiler()
    host = socket.gethostname()
    sentinels = _sentinels(conf.profiler.connection_string)
    if sentinels is None:
        _initializer.init_from_conf(conf=conf, context={},
                                    project='placement', service=service,
                                    host=host)
    else:
        _notifier.set(_through_sentinels(conf, service, host, *sentinels))
        _web.enable(conf.profiler.hmac_keys)
        if conf.profiler.trace_requests:
            _requests.enable()
    _notifier.set(_guarded(_notifier.get()))
    if conf.profiler.trace_sqlalchemy:
        _SQL = True
        if db is not None:
            import sqlalchemy
            _sqlalchemy.add_tracing(sqlalchemy, db.engine, 'db')
    _ON = True


def wrap(application, conf):
    """``application`` in osprofiler's WSGI middleware, when enabled."""
    if not enabled(conf):
        return application
    _osprofiler()
    return _web.WsgiMiddleware.factory({}, **conf.profiler)(application)


def span(name, **info):
    """A span ``name`` of the request being traced, as a context
    manager; a shared no-op one when nothing is traced."""
    if not _ON or _profiler.get() is None:
        return _OFF
    return _profiler.Trace(name, info=info)


def carried():
    """The trace this thread is in, as another process continues it
    (``continued``): None when there is none."""
    if not _ON:
        return None
    current = _profiler.get()
    if current is None:
        return None
    return {'hmac_key': current.hmac_key, 'base_id': current.get_base_id(),
            'parent_id': current.get_id()}


@contextlib.contextmanager
def continued(trace):
    """The spans of the block in ``trace`` (``carried`` in another
    process: a worker asking a state reader), when this process traces;
    a no-op otherwise."""
    if not _ON or trace is None:
        yield
        return
    _profiler.init(**trace)
    try:
        yield
    finally:
        _profiler.clean()


def sql(statement, params=None):
    """A ``db`` span of one statement, as osprofiler's own SQLAlchemy
    tracing records it, for the statements this service sends past
    SQLAlchemy (``storage.prepared``): only with ``trace_sqlalchemy``."""
    if not _SQL or _profiler.get() is None:
        return _OFF
    return _profiler.Trace('db', info={'db': {
        'statement': statement, 'params': params}})


def _sentinels(connection_string):
    """What kolla-ansible's ``redis://[user:password@]host:port
    ?sentinel=NAME[&sentinel_fallback=host:port...]`` names (its valkey
    behind Sentinel): ([(host, port)], NAME, user, password, db), or None
    for any other string.  osprofiler's redis driver hands such a string
    to redis-py as a plain server's, whose connections then refuse the
    ``sentinel`` argument: no trace is kept, upstream's neither."""
    url = parse.urlsplit(connection_string or '')
    query = parse.parse_qs(url.query)
    if url.scheme != 'redis' or 'sentinel' not in query:
        return None
    sentinels = [(url.hostname, url.port or 26379)]
    for fallback in query.get('sentinel_fallback', ()):
        host, _sep, port = fallback.rpartition(':')
        sentinels.append((host.strip('[]'), int(port)))
    return (sentinels, query['sentinel'][0], url.username or None,
            url.password or None, int(query.get('db', ['0'])[0]))


def _through_sentinels(conf, service, host, sentinels, name, user,
                       password, db):
    """osprofiler's redis driver, writing to the master the sentinels
    name ``name``."""
    from osprofiler.drivers import redis_driver
    from redis import sentinel
    timeout = conf.profiler.socket_timeout
    driver = redis_driver.Redis('redis://', project='placement',
                                service=service, host=host, conf=conf)
    # The credentials are the master's (kolla's sentinels ask none).
    driver.db = sentinel.Sentinel(
        sentinels, socket_timeout=timeout,
        sentinel_kwargs={'socket_timeout': timeout}).master_for(
        name, username=user, password=password, db=db,
        socket_timeout=timeout)
    return driver.notify


def _guarded(notify):
    """``notify``, never failing the request it traces: a backend out of
    reach loses the trace, says so in the log once, and the request is
    answered as it would be untraced."""
    said = []

    def guarded(info, **kwargs):
        try:
            notify(info, **kwargs)
        except Exception as error:  # noqa: BLE001 - only a trace lost
            if not said:
                said.append(True)
                LOG.warning('A trace could not be sent to the [profiler] '
                            'connection_string (said once): %s', error)
    return guarded
