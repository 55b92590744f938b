"""One log line per request, written once the answer is sent.

``RequestLog`` (falcon middleware) composes the line when the answer is
final; ``WriteAfterAnswer`` (WSGI, right around falcon) writes it when the
server closes the answer's iterable, which WSGI servers do once they have
sent the answer: the client need not wait for it.  It goes to
oslo.log's handlers, formatted as ``log_format.ContextFormatter`` does.
"""

import logging
import time

from placement import log_format

LOG = logging.getLogger('placement.requestlog')
_FORMAT = ('%(remote)s "%(method)s %(uri)s" status: %(status)s '
           'len: %(length)s microversion: %(version)s time: %(elapsed).6f')
# Where RequestLog leaves the line's values for WriteAfterAnswer.
_ENV_LINE = 'placement.request_log'


class RequestLog:

    def process_request(self, req, resp):
        req.context.started = time.monotonic()

    def process_response(self, req, resp, resource, req_succeeded):
        elapsed = time.monotonic() - getattr(req.context, 'started',
                                             time.monotonic())
        version = req.context.microversion
        req.env[_ENV_LINE] = {
            'remote': req.remote_addr, 'method': req.method,
            'uri': req.relative_uri, 'status': resp.status_code,
            'length': len(resp.text or resp.data or b'')
            or resp.content_length or 0,
            'version': version or '-', 'elapsed': elapsed}


class WriteAfterAnswer:

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        result = self.application(environ, start_response)
        line = environ.pop(_ENV_LINE, None)
        if line is None:
            return result
        return _ThenWrite(result, line)


class _ThenWrite:
    """An answer's iterable that writes the request's line when closed."""

    def __init__(self, result, line):
        self.result = result
        self.line = line

    def __iter__(self):
        return iter(self.result)

    def close(self):
        try:
            close = getattr(self.result, 'close', None)
            if close is not None:
                close()
        finally:
            _write(self.line)


def _write(line):
    """``LOG.info(_FORMAT, line)``: straight to the log's streams where
    it can be (``log_format.write_directly``), else as a record made
    without the look up the stack for where it is called from."""
    if LOG.isEnabledFor(logging.INFO) and not log_format.write_directly(
            LOG, logging.INFO, _FORMAT, line):
        LOG.handle(LOG.makeRecord(LOG.name, logging.INFO, __file__,
                                  _write.__code__.co_firstlineno, _FORMAT,
                                  (line,), None, func='_write'))
