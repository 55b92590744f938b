"""Falcon middleware writing one log line per request."""

import logging
import time

LOG = logging.getLogger('placement.requestlog')


class RequestLog:

    def process_request(self, req, resp):
        req.context.started = time.monotonic()

    def process_response(self, req, resp, resource, req_succeeded):
        elapsed = time.monotonic() - getattr(req.context, 'started',
                                             time.monotonic())
        version = req.context.microversion
        LOG.info('%(remote)s "%(method)s %(uri)s" status: %(status)s '
                 'len: %(length)s microversion: %(version)s '
                 'time: %(elapsed).6f',
                 {'remote': req.remote_addr, 'method': req.method,
                  'uri': req.relative_uri, 'status': resp.status_code,
                  'length': len(resp.text or resp.data or b'')
                  or resp.content_length or 0,
                  'version': version or '-', 'elapsed': elapsed})
