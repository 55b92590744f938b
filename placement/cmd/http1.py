"""Plain HTTP/1.1 requests, served without gunicorn's request machinery.

Nearly every request placement gets is a plain one: a usual method, a
path and query, a handful of ordinary headers and, for a write, a body of
declared length. The worker's event loop has read such a request whole
before a thread sees it, so gunicorn's parser, its request and response
objects and its per-request environ (a third of a worker's CPU on a
cheap read, profiled) re-do work on bytes already in memory. Here the
request is read in one pass into the WSGI environ, and the answer is
built whole and sent in one ``sendall`` (gunicorn sends the headers and
the body apart).

Only a request that is unambiguous to both takes this path: what it
accepts is a subset of what gunicorn accepts, read the same way. Anything
else (HTTP/1.0, an absolute or ``//`` target, a fragment, a header name
with ``_``, a repeated ``Host``, ``Content-Type``, ``Content-Length``
or ``Connection``,
``Transfer-Encoding``, ``Expect``, ``Upgrade``, the forwarded-scheme
headers, a ``Connection`` other than ``close``/``keep-alive``, bytes
outside the grammar) goes through gunicorn as before, which serves it or
refuses it. So a request means the same whichever path it takes.

The environ holds what gunicorn's holds but ``wsgi.early_hints`` (no
placement answer sends 103). An answer without ``Content-Length`` gets
one rather than chunked framing, since the whole body is in hand.

Profiled on ``GET /`` (one worker, one kept-alive client): 700 us of the
worker's CPU per request through gunicorn's reading, 450 us here.
"""

import email.utils
import io
import re
import time
import urllib.parse

import gunicorn
from gunicorn.http import errors as http_errors
from gunicorn.http import message
from gunicorn.http import wsgi

# The request line: the methods placement serves, an origin-form target
# (no '//' start, no fragment, only visible ASCII) and HTTP/1.1.
_REQUEST_LINE = re.compile(
    rb'(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) '
    rb'(/(?!/)[\x21\x22\x24-\x7e]*) HTTP/1\.1')
# A header: a token name without '_' (gunicorn drops those), no space
# before the colon, and a value without control characters (stripped of
# spaces and tabs after the match: a pattern that strips them could
# backtrack quadratically on a long run of spaces).
_HEADER = re.compile(
    rb"([!#$%&'*+\-.^`|~0-9A-Za-z]+):([\t\x20-\x7e\x80-\xff]*)")
# Headers whose presence sends a request to gunicorn.
_ELSEWHERE = frozenset((
    'TRANSFER-ENCODING', 'EXPECT', 'UPGRADE', 'HTTP2-SETTINGS',
    'X-FORWARDED-PROTOCOL', 'X-FORWARDED-PROTO', 'X-FORWARDED-SSL'))
# Headers that may appear once only here.
_SINGLE = frozenset((
    'HOST', 'CONTENT-TYPE', 'CONTENT-LENGTH', 'CONNECTION'))
_HOP_BY_HOP = frozenset((
    'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization',
    'te', 'trailers', 'transfer-encoding', 'upgrade', 'server', 'date'))
_NO_CONTENT_LENGTH = frozenset((204,))
# The largest body sent in one piece with its head.
_JOINED = 256 * 1024
_NO_BODY = frozenset((204, 304))


class Request:
    """A plain request, read: what the environ and the answer need."""

    __slots__ = ('method', 'target', 'headers', 'body', 'keep_alive')

    def __init__(self, method, target, headers, body, keep_alive):
        self.method = method
        self.target = target
        # (environ key, value) in the order received.
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


def read(data, head_end, max_fields):
    """``data`` (exactly one request whose header block ends at
    ``head_end``) as a Request, or ``None`` when gunicorn should read it.
    """
    lines = data[:head_end].split(b'\r\n')
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None or len(lines) - 1 > max_fields:
        return None
    headers = []
    seen = set()
    keep_alive = True
    length = 0
    for raw in lines[1:]:
        field = _HEADER.fullmatch(raw)
        if field is None:
            return None
        name = field.group(1).decode('ascii').upper()
        value = field.group(2).decode('latin-1').strip(' \t')
        if name in _ELSEWHERE:
            return None
        if name in _SINGLE:
            if name in seen:
                return None
            seen.add(name)
        if name == 'CONTENT-LENGTH':
            if not value.isdigit() or not value.isascii():
                return None
            length = int(value)
            headers.append(('CONTENT_LENGTH', value))
        elif name == 'CONTENT-TYPE':
            headers.append(('CONTENT_TYPE', value))
        else:
            if name == 'CONNECTION':
                token = value.lower()
                if token not in ('close', 'keep-alive'):
                    return None
                keep_alive = token == 'keep-alive'
            headers.append(('HTTP_' + name.replace('-', '_'), value))
    body = data[head_end + 4:]
    if len(body) != length:
        return None
    return Request(line.group(1).decode('ascii'),
                   line.group(2).decode('ascii'), headers, body, keep_alive)


def environ(base, request, client, server):
    """The WSGI environ gunicorn would build for ``request``: ``base``
    (the worker's constant part) and the request's own keys."""
    env = base.copy()
    path, _, query = request.target.partition('?')
    env['wsgi.input'] = io.BytesIO(request.body)
    env['REQUEST_METHOD'] = request.method
    env['QUERY_STRING'] = query
    env['RAW_URI'] = request.target
    env['PATH_INFO'] = urllib.parse.unquote_to_bytes(path).decode('latin-1')
    env['REMOTE_ADDR'] = client[0]
    env['REMOTE_PORT'] = str(client[1])
    env['SERVER_NAME'] = server[0]
    env['SERVER_PORT'] = str(server[1])
    for key, value in request.headers:
        if key in env and key.startswith('HTTP_'):
            env[key] += ',' + value
        else:
            env[key] = value
    return env


def base_environ(cfg):
    """The part of every environ that does not depend on the request."""
    env = wsgi.base_environ(cfg)
    env.update({'wsgi.multithread': True, 'wsgi.url_scheme': 'http',
                'SERVER_PROTOCOL': 'HTTP/1.1', 'SCRIPT_NAME': ''})
    return env


class _Date:
    """The Date header's value, formatted once a second."""

    def __init__(self):
        self.at = (None, '')

    def now(self):
        second = int(time.time())
        at = self.at
        if at[0] != second:
            at = self.at = (second, email.utils.formatdate(
                second, usegmt=True))
        return at[1]


_DATE = _Date()


def answer(app, env, keep_alive):
    """Run ``app`` on ``env``: the HTTP answer's head and body, checked
    as gunicorn checks a response (status, header names and values;
    hop-by-hop headers dropped), and the call to make once they are sent.

    That call closes the application's iterable, which WSGI servers do
    after sending the answer; what the application leaves for then (its
    request log line) does not delay the client. If this raises, the
    iterable is already closed."""
    started = []
    chunks = []

    def start_response(status, headers, exc_info=None):
        if exc_info is None and started:
            raise AssertionError('Response headers already set!')
        started[:] = [status, headers]
        return chunks.append

    result = app(env, start_response)
    close = getattr(result, 'close', _nothing)
    try:
        for chunk in result:
            if not isinstance(chunk, bytes):
                raise TypeError('%r is not a byte' % chunk)
            chunks.append(chunk)
        if not started:
            raise AssertionError('The application did not start a response.')
        status, headers = started
        head, body = _encode(status, headers, b''.join(chunks),
                             env['REQUEST_METHOD'] == 'HEAD', keep_alive)
    except BaseException:
        close()
        raise
    return head, body, close


def _nothing():
    pass


def _encode(status, headers, body, head_only, keep_alive):
    if not isinstance(status, str) or not wsgi.STATUS_RE.fullmatch(status):
        raise ValueError('Invalid status %r' % (status,))
    code = int(status[:3])
    omits_body = head_only or code in _NO_BODY or code < 200
    lines = ['HTTP/1.1 %s\r\nServer: %s\r\nDate: %s\r\nConnection: %s\r\n'
             % (status, gunicorn.SERVER, _DATE.now(),
                'keep-alive' if keep_alive else 'close')]
    length = None
    for name, value in headers:
        if not isinstance(name, str) or not message.TOKEN_RE.fullmatch(name):
            raise http_errors.InvalidResponseHeaderName('%r' % (name,))
        if not isinstance(value, str) or (
                not wsgi.HEADER_VALUE_RE.fullmatch(value)):
            raise http_errors.InvalidResponseHeader('%r' % (name,))
        lowered = name.lower()
        if lowered == 'content-length':
            length = int(value)
            if code in _NO_CONTENT_LENGTH or code < 200:
                continue
        elif lowered in _HOP_BY_HOP:
            continue
        lines.append('%s: %s\r\n' % (name, value.strip(' \t')))
    if omits_body:
        body = b''
    elif length is None:
        lines.append('Content-Length: %d\r\n' % len(body))
    else:
        body = body[:length]
    lines.append('\r\n')
    return ''.join(lines).encode('latin-1'), body


def send(sock, head, body):
    """One send for a usual answer; a large body (a long listing) is not
    copied to be joined to its head."""
    if len(body) <= _JOINED:
        sock.sendall(head + body)
    else:
        sock.sendall(head)
        sock.sendall(body)
