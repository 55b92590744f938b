"""Falcon middleware negotiating ``OpenStack-API-Version: placement X.Y``."""

from placement import errors
from placement import microversion

_VARY = microversion.HEADER.lower()


class MicroversionMiddleware:

    def process_request(self, req, resp):
        try:
            req.context.microversion = microversion.parse(req.env)
        except TypeError as exc:
            raise errors.BadRequest('Invalid microversion: %s' % exc)
        except ValueError as exc:
            raise errors.NotAcceptable('Invalid microversion: %s' % exc)

    def process_response(self, req, resp, resource, req_succeeded):
        version = req.context.microversion
        if version is None:
            return
        resp.set_header(microversion.HEADER, '%s %s' % (
            microversion.SERVICE_TYPE, microversion.version_string(version)))
        resp.append_header('Vary', _VARY)
