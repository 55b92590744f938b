"""HTTP errors in upstream Placement's JSON error format (codes: error_codes).

Every error response carries ``{"errors": [{"status", "title", "detail",
"request_id"[, "code"]}]}``; ``code`` appears from microversion 1.23.  The
``detail`` starts with the generic explanation of the status and then the
specific message, the shape clients of upstream have learned to read.
"""

import http
import json
import re

import falcon

from placement import microversion
from placement.error_codes import DEFAULT

ERROR_CODE_MICROVERSION = (1, 23)

# What upstream's detail looks like: webob's plain-text rendering of its
# error page, newlines included.  Most statuses share one layout; the three
# whose page names a request header have layouts of their own.
_LAYOUT = '{explanation}\n\n {detail}  '
_EXPLANATIONS = {
    400: 'The server could not comply with the request since it is either '
         'malformed or otherwise incorrect.',
    401: 'This server could not verify that you are authorized to access '
         'the document you requested.',
    403: 'Access was denied to this resource.',
    404: 'The resource could not be found.',
    409: 'There was a conflict when trying to complete your request.',
    500: 'The server has either erred or is incapable of performing the '
         'requested operation.',
    503: 'The server is currently unavailable. Please try again at a later '
         'time.',
}
_OWN_LAYOUTS = {
    405: 'The method {method} is not allowed for this resource. \n\n '
         '{detail}',
    406: 'The resource could not be generated that was acceptable to your '
         'browser (content of type {accept}. \n\n {detail}',
    415: 'The request media type {content_type} is not supported by this '
         'server. \n\n {detail}',
}


class PlacementError(falcon.HTTPError):
    """An HTTP error with a Placement error code."""

    status = falcon.HTTP_400

    def __init__(self, detail='', code=DEFAULT, headers=None, status=None):
        super().__init__(status or self.status, description=detail,
                         headers=headers)
        self.code = code


class BadRequest(PlacementError):
    status = falcon.HTTP_400


class Forbidden(PlacementError):
    status = falcon.HTTP_403


class NotFound(PlacementError):
    status = falcon.HTTP_404


class Conflict(PlacementError):
    status = falcon.HTTP_409


class NotAcceptable(PlacementError):
    status = falcon.HTTP_406


class PayloadTooLarge(PlacementError):
    status = falcon.HTTP_413

    @staticmethod
    def detail(limit):
        """The one wording of a body over ``limit`` bytes, wherever it is
        refused (the worker, the middleware, the body reader)."""
        return 'Request body is larger than the limit of %d bytes.' % limit


class ServiceUnavailable(PlacementError):
    status = falcon.HTTP_503


class UnsupportedMediaType(PlacementError):
    status = falcon.HTTP_415


class Unauthorized(PlacementError):
    status = falcon.HTTP_401


class MethodNotAllowed(PlacementError):
    status = falcon.HTTP_405

    def __init__(self, req, allowed=None):
        """``allowed``: the methods for the Allow header (``None``: no
        header and no explanation, as upstream answers a method its
        version does not serve)."""
        if allowed is None:
            super().__init__('')
        else:
            super().__init__(
                'The method specified is not allowed for this resource.',
                headers={'Allow': ', '.join(allowed)})


_TAG = re.compile(r'<.*?>', re.S)


def _plain(text):
    """The specific message as upstream renders it: one line, no markup.

    Upstream's error bodies pass through webob's tag stripping, which turns
    newlines into spaces and drops anything in angle brackets; clients that
    match on messages see the same text from us.
    """
    return _TAG.sub('', text.replace('\r', '').replace('\n', ' '))


def _detail(req, status_code, detail):
    layout = _OWN_LAYOUTS.get(status_code, _LAYOUT)
    accept = req.get_header('Accept')
    if not accept or accept == '*/*':
        accept = 'application/json'  # what upstream assumes then
    return layout.format(explanation=_EXPLANATIONS.get(status_code, ''),
                         detail=_plain(detail), method=req.method,
                         accept=accept,
                         # An empty header reads as none, as upstream's
                         # server passes it on.
                         content_type=req.content_type or None)


def error_body(req, error):
    """The error document for ``error`` (a falcon.HTTPError)."""
    status_code = error.status_code
    entry = {
        'status': status_code,
        'title': http.HTTPStatus(status_code).phrase,
        'detail': _detail(req, status_code, error.description or ''),
    }
    version = getattr(req.context, 'microversion', None)
    if version is not None and tuple(version) >= ERROR_CODE_MICROVERSION:
        # falcon's own errors have code None: they are undefined to us.
        entry['code'] = getattr(error, 'code', None) or DEFAULT
    request_id = req.env.get('openstack.request_id')
    if request_id:
        entry['request_id'] = request_id
    if status_code == 406 and version is None:
        entry['max_version'] = microversion.MAX_VERSION_STRING
        entry['min_version'] = microversion.MIN_VERSION_STRING
    return {'errors': [entry]}


def serialize_error(req, resp, error):
    """Falcon error serializer: JSON unless the client clearly wants text.

    An Accept that takes neither JSON nor HTML (``application/xml``,
    ``application/json;q=0``) gets plain text, as upstream's errors
    (webob's) fall back to it."""
    body = error_body(req, error)
    accept = req.get_header('Accept')
    preferred = (req.client_prefers(('application/json', 'text/html',
                                     'text/plain')) or 'text/plain'
                 if accept else 'application/json')
    if preferred == 'application/json':
        resp.content_type = 'application/json'
        resp.text = json.dumps(body)
        return
    entry = body['errors'][0]
    text = '%s %s\n\n%s' % (entry['status'], entry['title'], entry['detail'])
    resp.content_type = '%s; charset=UTF-8' % preferred
    resp.text = text
