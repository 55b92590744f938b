"""Request metrics: every answer counted and timed by route template."""

import time

from placement import metrics


class RequestMetrics:
    """Outermost falcon middleware, so that the time includes every other
    middleware and the answer's status is final."""

    def process_request(self, req, resp):
        req.context.metrics_started = time.monotonic()

    def process_response(self, req, resp, resource, req_succeeded):
        started = getattr(req.context, 'metrics_started', None)
        if started is None:
            return
        metrics.observe_request(
            req.uri_template or 'unmatched', req.method,
            resp.status[:3] if isinstance(resp.status, str)
            else str(int(resp.status)), time.monotonic() - started)
