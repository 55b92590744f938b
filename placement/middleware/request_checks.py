"""Falcon middleware for checks every route shares.

A body needs a content type, and a GET can only ever be answered in JSON,
so a client whose Accept excludes it learns that up front (406). A body
declared larger than ``[oslo_middleware] max_request_body_size`` is
refused (413) before any of it is read, and a path no backend could
store (NUL, lone surrogates) is a 400 on every backend.
"""

from placement import errors
from placement import input_checks
from placement.middleware import auth

JSON = 'application/json'


class RequestChecks:

    def process_request(self, req, resp):
        problem = input_checks.unstorable(req.path)
        if problem:
            raise errors.BadRequest('The path is not accepted: %s' % problem)
        length = req.get_header('Content-Length')
        if length:
            try:
                length = int(length)
            except ValueError:
                raise errors.BadRequest(
                    'content-length header must be an integer')
            limit = req.context.conf.oslo_middleware.max_request_body_size
            if length > limit:
                raise errors.PayloadTooLarge(
                    errors.PayloadTooLarge.detail(limit))
            if length > 0 and not req.content_type:
                raise errors.BadRequest(
                    'content-type header required when content-length > 0')

    def process_resource(self, req, resp, resource, params):
        if (req.method == 'GET' and resource is not None
                and req.path not in auth.ROOT_PATHS
                and req.get_header('Accept')
                and not req.client_accepts(JSON)):
            raise errors.NotAcceptable('Only %s is provided' % JSON)
