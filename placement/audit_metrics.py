"""The placement_audit gauges: how many findings of each kind the audit
(``GET /audit``) has now.

The placement-api parent, which serves the metrics, works them out when
scraped, at most once every ``[metrics] audit_interval`` seconds: a
scrape within that time of the last one reads the values it left.  So a
cloud nobody scrapes costs nothing, and a dozen scrapers cost one audit
per interval.  An audit runs between forks (``Database.between_forks``):
no worker is forked while it holds a database connection.

- ``placement_audit_findings{kind}``: the findings of each kind;
- ``placement_audit_refreshed_timestamp_seconds``: when they were
  counted.
"""

import logging
import threading
import time

from placement.audit import findings

LOG = logging.getLogger(__name__)


class Collector:
    """A prometheus-client collector that audits when its last counts
    are older than ``interval`` seconds."""

    def __init__(self, db, interval, clock=time.monotonic):
        self.db = db
        self.interval = interval
        self.clock = clock
        self.lock = threading.Lock()
        self.counted = None     # (clock, time, {kind: count})

    def counts(self):
        """(when counted, {kind: count}); None when never counted."""
        with self.lock:
            if self.counted is None or (
                    self.clock() - self.counted[0] >= self.interval):
                try:
                    with self.db.between_forks():
                        body = findings.audit(self.db, findings.Scope())
                    self.counted = (self.clock(), time.time(),
                                    body['counts'])
                except Exception:  # noqa: BLE001 - the next scrape retries
                    LOG.exception('placement_audit gauges not refreshed')
            return self.counted and self.counted[1:]

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        counted = self.counts()
        if counted is None:
            return
        when, counts = counted
        family = GaugeMetricFamily(
            'placement_audit_findings', 'Findings of each kind GET /audit '
            'lists now.', labels=['kind'])
        for kind in findings.KINDS:
            family.add_metric([kind], counts[kind])
        yield family
        yield GaugeMetricFamily(
            'placement_audit_refreshed_timestamp_seconds',
            'When the placement_audit gauges were counted.', value=when)
