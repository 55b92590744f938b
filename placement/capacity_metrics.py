"""The placement_capacity gauges: how many copies of requests the
operator names (``[metrics] capacity_request``) fit now.

The placement-api parent, which serves the metrics, computes them every
``[metrics] capacity_interval`` seconds in a thread of its own, from a
candidate state of its own (``providers.State``, refreshed from the
change log like the workers' ones), and a scrape reads the last result:
scraping never computes.  A round reads the database between forks
(``Database.between_forks``): no worker is forked while it holds a
connection.

- ``placement_capacity{request, root}``: copies the root's tree holds;
- ``placement_capacity_total{request}``: their sum;
- ``placement_capacity_limited_by_sharing{request}``: 1 when sharing
  providers could not serve that total at once;
- ``placement_capacity_refreshed_timestamp_seconds``: when the values
  were computed.
"""

import logging
import threading
import time

from placement import errors
from placement.candidates import capacity
from placement.candidates import filters
from placement.state import providers
from placement.state import snapshot
from placement import candidate_query

LOG = logging.getLogger(__name__)


class BadCapacityRequest(ValueError):
    """A [metrics] capacity_request that cannot be parsed."""


def parse_request(value):
    """(name, CandidateRequest) of one ``NAME=REQUEST`` option value."""
    name, sep, text = value.partition('=')
    if not sep or not name.strip() or not text.strip():
        raise BadCapacityRequest(
            '[metrics] capacity_request %r is not NAME=REQUEST' % value)
    try:
        return name.strip(), candidate_query.from_text(text)
    except errors.PlacementError as exc:
        raise BadCapacityRequest('[metrics] capacity_request %s: %s' % (
            name.strip(), exc.description)) from exc


def parse_requests(values):
    """[(name, CandidateRequest)]; BadCapacityRequest for the first bad
    one."""
    return [parse_request(value) for value in values]


class Collector:
    """A prometheus-client collector of the last computed values."""

    def __init__(self):
        self.samples = None     # (time, {name: capacity body})
        self.lock = threading.Lock()

    def update(self, results):
        with self.lock:
            self.samples = (time.time(), results)

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        with self.lock:
            samples = self.samples
        if samples is None:
            return
        computed, results = samples
        per_root = GaugeMetricFamily(
            'placement_capacity', 'Copies of the named request the root '
            "provider's tree holds now.", labels=['request', 'root'])
        total = GaugeMetricFamily(
            'placement_capacity_total', 'Copies of the named request that '
            'fit now, summed over roots.', labels=['request'])
        limited = GaugeMetricFamily(
            'placement_capacity_limited_by_sharing', '1 when sharing '
            'providers cannot serve that total at once.',
            labels=['request'])
        for name, body in sorted(results.items()):
            for root, copies in sorted(body['roots'].items()):
                per_root.add_metric([name, root], copies)
            total.add_metric([name], body['total'])
            limited.add_metric([name], int(body['limited_by_sharing']))
        yield per_root
        yield total
        yield limited
        yield GaugeMetricFamily(
            'placement_capacity_refreshed_timestamp_seconds',
            'When the placement_capacity gauges were computed.',
            value=computed)


def compute(state, requests):
    """{name: capacity body} for every named request, from ``state``; a
    request naming a class or trait that does not exist (yet) is left
    out, with a warning."""
    results = {}
    for name, request in requests:
        try:
            results[name] = capacity.capacity(state, request)
        except (filters.UnknownResourceClass, filters.UnknownTrait) as exc:
            LOG.warning('[metrics] capacity_request %s: %s', name,
                        exc.message)
    return results


class Refresher(threading.Thread):
    """Computes the gauges every ``interval`` seconds."""

    def __init__(self, db, requests, interval, collector):
        super().__init__(name='placement-capacity-metrics', daemon=True)
        self.db = db
        self.requests = requests
        self.interval = interval
        self.collector = collector
        self.state = providers.State()

    def refresh(self):
        try:
            # Only the read holds off forks: the count may take seconds
            # in a large cloud, and a worker's fork would wait for it.
            with self.db.between_forks():
                self.db.read(snapshot.refresh, self.state)
            self.collector.update(compute(self.state, self.requests))
        except Exception:  # noqa: BLE001 - the next round tries again
            LOG.exception('placement_capacity gauges not refreshed')
            self.state = providers.State()

    def run(self):
        while True:
            self.refresh()
            time.sleep(self.interval)
