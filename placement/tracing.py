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
the round trip to a reader (``state.reader``).

Tracing off costs nothing but one global read at each of those places:
``span`` and ``sql`` are a no-op context until ``init`` has run.
"""

import contextlib
import socket

from oslo_utils import importutils

_opts = importutils.try_import('osprofiler.opts')
_initializer = importutils.try_import('osprofiler.initializer')
_profiler = importutils.try_import('osprofiler.profiler')
_sqlalchemy = importutils.try_import('osprofiler.sqlalchemy')
_web = importutils.try_import('osprofiler.web')

_ON = False
_SQL = False
_OFF = contextlib.nullcontext()


def register_opts(conf):
    """osprofiler's options, where osprofiler is installed."""
    if _opts is not None:
        _opts.set_defaults(conf)


def enabled(conf):
    return _opts is not None and 'profiler' in conf and (
        conf.profiler.enabled)


def init(conf, db=None, service='placement-api'):
    """Send this process's spans where ``[profiler]`` says, and trace
    ``db``'s SQL with ``trace_sqlalchemy``; nothing unless enabled."""
    global _ON, _SQL
    if not enabled(conf):
        return
    _initializer.init_from_conf(conf=conf, context={}, project='placement',
                                service=service, host=socket.gethostname())
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
    return _web.WsgiMiddleware.factory({}, **conf.profiler)(application)


def span(name, **info):
    """A span ``name`` of the request being traced, as a context
    manager; a shared no-op one when nothing is traced."""
    if not _ON or _profiler.get() is None:
        return _OFF
    return _profiler.Trace(name, info=info)


def sql(statement, params=None):
    """A ``db`` span of one statement, as osprofiler's own SQLAlchemy
    tracing records it, for the statements this service sends past
    SQLAlchemy (``storage.prepared``): only with ``trace_sqlalchemy``."""
    if not _SQL or _profiler.get() is None:
        return _OFF
    return _profiler.Trace('db', info={'db': {
        'statement': statement, 'params': params}})
