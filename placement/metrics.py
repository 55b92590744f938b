"""Prometheus metrics, off by default.

With ``[metrics] enabled``, they are exposed on ``[metrics] bind`` (a
separate address, 127.0.0.1 unless the operator says otherwise, so API
users never see them), summed across the server's workers with
prometheus-client's multiprocess mode: each worker writes its samples to
files in a directory of the server's, and one process serves them
(placement-api's parent, or under another WSGI server the host's metrics
process: see ``metrics_serving``), with the gauges it works out when
scraped (``placement_gauges``, ``audit_metrics``, ``capacity_metrics``).

- ``placement_http_requests_total{route,method,status}`` and
  ``placement_http_request_duration_seconds{route,method}``: every answer,
  by falcon's route template (``/resource_providers/{uuid}``), so the
  label values stay few;
- ``placement_db_transaction_retries_total{cause}``: transactions run
  again after a transient database error (deadlock, lock_wait_timeout,
  serialization_failure, connection_lost, sqlite_busy, galera_not_ready);
- ``placement_db_connections_in_use``: pooled connections checked out,
  summed over live workers;
- ``placement_allocation_candidates_returned``: allocation requests per
  ``GET /allocation_candidates`` answer;
- ``placement_state_catch_up_seconds{whole}``: bringing the state up to
  date with the change log, when it had changed (``whole``: read again
  whole), in workers and the host's state readers;
- ``placement_state_fallbacks_total{reason}``: reads of the state a
  worker answered from SQL or a state of its own because the host's state
  processes did not answer in time (``unanswered``) or run other code
  (``other_code``); see ``state.shared``.

Nothing here imports prometheus-client until metrics are enabled: its
multiprocess mode must be chosen (by environment) before it is imported.
Every recording function is a no-op while disabled.
"""

import os

from sqlalchemy import event

MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                    5.0, 10.0, 30.0)
_CANDIDATE_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000)

_metrics = None
# Called as requests are answered: keeps the host's metrics process
# running under a WSGI server (metrics_serving.HostServer.check).
_keep_served = None


class _Metrics:

    def __init__(self):
        import prometheus_client as prom
        self.requests = prom.Counter(
            'placement_http_requests_total', 'HTTP requests answered.',
            ['route', 'method', 'status'])
        self.latency = prom.Histogram(
            'placement_http_request_duration_seconds',
            'Time to answer an HTTP request.', ['route', 'method'],
            buckets=_LATENCY_BUCKETS)
        self.retries = prom.Counter(
            'placement_db_transaction_retries_total',
            'Transactions run again after a transient database error.',
            ['cause'])
        self.in_use = prom.Gauge(
            'placement_db_connections_in_use',
            'Pooled database connections checked out.',
            multiprocess_mode='livesum')
        self.candidates = prom.Histogram(
            'placement_allocation_candidates_returned',
            'Allocation requests per GET /allocation_candidates answer.',
            buckets=_CANDIDATE_BUCKETS)
        self.catch_ups = prom.Histogram(
            'placement_state_catch_up_seconds',
            'Time to bring the state up to date with the change log when '
            'it had changed.', ['whole'], buckets=_LATENCY_BUCKETS)
        self.state_fallbacks = prom.Counter(
            'placement_state_fallbacks_total',
            'Reads of the state answered by a worker\'s own state, the '
            'host\'s state processes not answering.', ['reason'])


def enable():
    """Start recording in this process (once; later calls do nothing)."""
    global _metrics
    if _metrics is None:
        _metrics = _Metrics()


def enabled():
    return _metrics is not None


def keep_served(check):
    """Have ``check`` called (cheap; it acts at most every few seconds)
    each time a request is observed."""
    global _keep_served
    _keep_served = check


def observe_request(route, method, status, seconds):
    if _metrics is not None:
        _metrics.requests.labels(route, method, status).inc()
        _metrics.latency.labels(route, method).observe(seconds)
        if _keep_served is not None:
            _keep_served()


def count_retry(cause):
    if _metrics is not None:
        _metrics.retries.labels(cause).inc()


def count_state_fallback(reason):
    if _metrics is not None:
        _metrics.state_fallbacks.labels(reason).inc()


def observe_catch_up(whole, seconds):
    if _metrics is not None:
        _metrics.catch_ups.labels('true' if whole else 'false').observe(
            seconds)


def observe_candidates(count):
    if _metrics is not None:
        _metrics.candidates.observe(count)


def watch_pool(engine):
    """Count ``engine``'s checked-out connections."""
    if _metrics is None:
        return
    in_use = _metrics.in_use

    @event.listens_for(engine, 'checkout')
    def on_checkout(*_args):
        in_use.inc()

    @event.listens_for(engine, 'checkin')
    def on_checkin(*_args):
        in_use.dec()

    # Leaves the pool for good (the freshness check's own sessions,
    # ``engine._PeekSessions``): no checkin will follow.
    @event.listens_for(engine, 'detach')
    def on_detach(*_args):
        in_use.dec()


# -- the process that serves them ---------------------------------------------

def prepare_multiprocess(directory):
    """Before any worker starts: where the workers write their samples
    (in the environment, which the processes started or forked from
    here inherit)."""
    os.environ[MULTIPROC_ENV] = directory


def samples_directory():
    """Where this process's samples go, None when nowhere (no process
    serves them)."""
    return os.environ.get(MULTIPROC_ENV) or None


def serve(bind, collectors=()):
    """Serve the workers' summed samples, and what ``collectors`` of this
    process collect, on ``bind`` (HOST:PORT) from a thread of this
    process; returns the HTTP server."""
    import prometheus_client as prom
    from prometheus_client import multiprocess
    registry = prom.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in collectors:
        registry.register(collector)
    host, _sep, port = bind.rpartition(':')
    server, _thread = prom.start_http_server(int(port), addr=host or '',
                                             registry=registry)
    return server


def worker_exited(pid):
    """A worker is gone: its live gauges no longer count."""
    from prometheus_client import multiprocess
    multiprocess.mark_process_dead(pid)
