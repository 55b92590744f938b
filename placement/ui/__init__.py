"""The dashboard: static files under /ui/, served before authentication.

They are the same for everyone and hold no data: the page asks the API
for everything it shows, with the token its user enters (kept in the
browser's session storage only), so it shows what policy lets that token
see and nothing else.  Served from this package (``static/``), read
once when the application is built; every answer carries a strict
Content-Security-Policy (nothing inline, nothing from elsewhere), an
ETag and a Last-Modified, and a request naming either as current is
answered 304.  ``[api] ui_enabled = False`` leaves /ui/ to the API,
which answers 404.
"""

import email.utils
import hashlib
import json
import mimetypes
import pathlib

from placement.middleware import request_id

PREFIX = '/ui'
STATIC = pathlib.Path(__file__).parent / 'static'
INDEX = 'index.html'

CONTENT_SECURITY_POLICY = '; '.join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "font-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
))
_SECURITY_HEADERS = [
    ('Content-Security-Policy', CONTENT_SECURITY_POLICY),
    ('X-Content-Type-Options', 'nosniff'),
    ('X-Frame-Options', 'DENY'),
    ('Referrer-Policy', 'no-referrer'),
    ('Cross-Origin-Opener-Policy', 'same-origin'),
]
_TYPES = {'.js': 'text/javascript; charset=utf-8',
          '.css': 'text/css; charset=utf-8',
          '.html': 'text/html; charset=utf-8',
          '.svg': 'image/svg+xml'}


class _File:
    __slots__ = ('body', 'content_type', 'etag', 'modified', 'last_modified')

    def __init__(self, path):
        self.body = path.read_bytes()
        self.content_type = _TYPES.get(path.suffix) or (
            mimetypes.guess_type(path.name)[0] or 'application/octet-stream')
        self.etag = '"%s"' % hashlib.sha256(self.body).hexdigest()[:32]
        self.modified = int(path.stat().st_mtime)
        self.last_modified = email.utils.formatdate(self.modified,
                                                    usegmt=True)


def load(directory=STATIC):
    """{path below /ui/: _File} of every file under ``directory``."""
    return {path.relative_to(directory).as_posix(): _File(path)
            for path in sorted(directory.rglob('*')) if path.is_file()}


def _etags(header):
    return {tag.strip().removeprefix('W/') for tag in header.split(',')}


def _not_modified(environ, found):
    """Whether the request's validators say its copy is current
    (If-None-Match first, as RFC 9110 orders them)."""
    none_match = environ.get('HTTP_IF_NONE_MATCH')
    if none_match is not None:
        tags = _etags(none_match)
        return '*' in tags or found.etag in tags
    since = environ.get('HTTP_IF_MODIFIED_SINCE')
    if since:
        try:
            when = email.utils.parsedate_to_datetime(since)
        except (TypeError, ValueError, IndexError):
            return False
        return when is not None and when.timestamp() >= found.modified
    return False


def _error(environ, start_response, status, detail, headers=()):
    """An error in the OpenStack API's format."""
    code, title = status.split(' ', 1)
    body = json.dumps({'errors': [{
        'status': int(code), 'title': title, 'detail': detail,
        'code': 'placement.undefined_code',
        'request_id': environ.get(request_id.ENV_REQUEST_ID)}]}).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(body)))]
                   + list(headers) + _SECURITY_HEADERS)
    return [body]


class Dashboard:
    """WSGI: /ui/... from the static files, every other path to
    ``application``."""

    def __init__(self, application, files=None):
        self.application = application
        self.files = load() if files is None else files

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path == PREFIX:
            location = '%s%s/' % (environ.get('SCRIPT_NAME', ''), PREFIX)
            start_response('301 Moved Permanently', [
                ('Location', location), ('Content-Length', '0')]
                + _SECURITY_HEADERS)
            return [b'']
        if not path.startswith(PREFIX + '/'):
            return self.application(environ, start_response)
        name = path[len(PREFIX) + 1:] or INDEX
        found = self.files.get(name)
        if found is None:
            return _error(environ, start_response, '404 Not Found',
                          'The resource could not be found.\n\n No file '
                          '%s in the dashboard.  ' % name)
        method = environ.get('REQUEST_METHOD')
        if method not in ('GET', 'HEAD'):
            return _error(environ, start_response, '405 Method Not Allowed',
                          'The method %s is not allowed for this resource.'
                          % method, [('Allow', 'GET, HEAD')])
        headers = [('ETag', found.etag),
                   ('Last-Modified', found.last_modified),
                   ('Cache-Control', 'no-cache')] + _SECURITY_HEADERS
        if _not_modified(environ, found):
            start_response('304 Not Modified', headers)
            return [b'']
        start_response('200 OK', [
            ('Content-Type', found.content_type),
            ('Content-Length', str(len(found.body)))] + headers)
        return [b''] if method == 'HEAD' else [found.body]
