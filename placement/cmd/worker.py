"""The gunicorn worker placement-api runs.

gunicorn's threaded worker, with these changes:

- **A thread only for a complete request.** gunicorn hands a new (or
  newly readable kept-alive) connection to a thread at once, and the
  thread then blocks reading it: a few clients that send half a request
  and stall take every thread, and everyone else waits. Here the worker's
  own event loop reads each request without blocking until it is whole
  (request line, headers and a body of the declared length, or the last
  chunk of a chunked one), and only then gives it to a thread, which finds
  it all in memory. A stalled client costs an idle socket; one that has
  not completed its request within ``--client-timeout`` seconds is
  answered 408 and closed. Limits are enforced while reading, before any
  thread is involved: the request line (414), the header block (431) and
  a declared body size (413, ``[oslo_middleware] max_request_body_size``).
- **A refusal the client reads.** Closing a socket whose client is still
  sending (a 40 MB body refused after its first bytes) makes the kernel
  answer with a reset, which destroys the refusal before the client reads
  it. So, as nginx does, the worker says it is done writing (FIN) and
  then reads and drops what still arrives, without a thread and without
  keeping it, until the client closes, falls silent for
  ``LINGER_SILENCE`` seconds or has sent ``LINGER_BYTES`` more, or
  ``LINGER_SECONDS`` (at most ``--client-timeout``) have passed; only then
  does it close.
- **Plain requests read and answered here.** A request received whole
  that is plain HTTP/1.1 (nearly all of them) becomes its WSGI environ in
  one pass, and its answer goes out in one send, without gunicorn's
  parser and request and response objects (see ``http1``); anything else
  is read by gunicorn as before.
- **Threads that wait where requests arrive** (see ``pool``). gunicorn's
  thread finishes a future whose callback wakes the event loop through a
  pipe; the loop puts the connection back on its poller, wakes again when
  the next request arrives and hands it to a thread. Here the thread that
  answered a plain request arms the kept-alive connection on the pool's
  epoll itself, and the next request wakes one of the threads, which
  reads it and, when it is whole and plain (nearly always), answers it:
  no event loop and no hand-over. A body sent after its head (http.client
  and urllib3 write them apart) is awaited for ``BODY_WAIT`` (2 ms) at
  most. Anything else it hands back to the loop, which reads and
  dispatches it as above. The connection is armed before what the
  application leaves for after its answer (the request log line), so a
  client's next request is taken meanwhile.
- **A heartbeat a second.** gunicorn's arbiter restarts a worker that
  has not touched its heartbeat file for ``timeout`` seconds (120 here);
  gunicorn touches it at every turn of the event loop, a system call per
  request under load (3 % of a worker's CPU on a cheap read). Here it is
  touched at most once per ``HEARTBEAT_EVERY``.
- **Replaced once it no longer shares.** A worker starts sharing the
  parent's pages (the application, the candidate state: see
  ``placement.cmd.api``), and each page it writes to becomes its own;
  Python writes to an object's page whenever it takes a reference to
  it, so answering requests about providers all over the cloud copies,
  within minutes, the whole state.  Every ``MEMORY_CHECK_EVERY`` seconds
  the worker reads how much memory is its own alone; past
  ``--max-worker-memory`` it stops taking requests, finishes those it
  has and exits, and the arbiter forks a fresh worker from the parent's
  up-to-date state, which has only a few changes to catch up with.
- **OpenStack errors.** What gunicorn itself refuses (malformed HTTP, too
  many headers) is answered with the JSON error document every other
  answer uses, not gunicorn's HTML page.
"""

import collections
import errno
import functools
import http
import json
import os
import re
import select
import selectors
import socket
import threading
import time
import uuid

from gunicorn import http as gunicorn_http
from gunicorn.http import errors as http_errors
from gunicorn import util
from gunicorn.workers import gthread

from placement import allocator
from placement import error_codes
from placement import errors
from placement.cmd import http1
from placement.cmd import pool

_RECV_SIZE = 65536
# Lingering close (see above): how long, how long a silence ends it, and
# how much is dropped at most. Past them the client may get a reset.
LINGER_SECONDS = 30
LINGER_SILENCE = 5
LINGER_BYTES = 128 * 1024 * 1024
# How long a stopping worker keeps idle kept-alive connections (gunicorn:
# 2 s, which every restart and every test server then waits out).
_STOP_LINGER = 0.25
# The least time between two touches of the heartbeat file.
HEARTBEAT_EVERY = 1.0
# Seconds between two reads of how much memory the worker has of its own.
MEMORY_CHECK_EVERY = 5.0
# How long a thread woken by a request's head waits for its body (see
# _body_following), in seconds.
BODY_WAIT = 0.002
_CONTENT_LENGTH = re.compile(rb'\r\ncontent-length[ \t]*:[ \t]*(\d+)', re.I)
_CHUNKED = re.compile(rb'\r\ntransfer-encoding[ \t]*:[^\r]*chunked', re.I)
_EXPECT_CONTINUE = re.compile(rb'\r\nexpect[ \t]*:[ \t]*100-continue', re.I)
_LAST_CHUNK = b'0\r\n\r\n'

# gunicorn's refusals, by status; any other ParseException is a 400.
_STATUS = (
    (http_errors.LimitRequestLine, 414),
    (http_errors.LimitRequestHeaders, 431),
    (http_errors.ExpectationFailed, 417),
    (http_errors.UnsupportedTransferCoding, 501),
    (http_errors.ForbiddenProxyRequest, 403),
)


def _status_of(exc):
    if isinstance(exc, (http_errors.InvalidResponseHeader,
                        http_errors.InvalidResponseHeaderName,
                        http_errors.ConfigurationProblem)):
        return 500
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400 if isinstance(exc, http_errors.ParseException) else 500


def _nothing():
    pass


def _body_following(sock, data, head):
    """``data`` (a head whole, its body not) with what of the body arrives
    within ``BODY_WAIT``: http.client and urllib3 send a request's head
    and body in two writes, and the thread the head woke would otherwise
    hand the request to the event loop to read the body, which then hands
    it to another thread. A client that holds its body back costs the
    thread that long, then the loop reads the rest."""
    if head.length > _RECV_SIZE:
        return data
    waiting = select.poll()
    waiting.register(sock, select.POLLIN)
    deadline = time.monotonic() + BODY_WAIT
    while not head.complete(data):
        left = deadline - time.monotonic()
        if left <= 0 or not waiting.poll(left * 1000):
            break
        try:
            more = sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break
        if not more:
            break
        data += more
    return data


def _has_bytes(sock):
    """Whether a non-blocking socket has bytes to read (not EOF)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except OSError:
        return False


def error_response(status, detail):
    """A complete HTTP/1.1 answer carrying the OpenStack error document;
    the connection is closed after it. The request's microversion is not
    known here, so the error has the ``code`` it has from 1.23 on."""
    title = http.HTTPStatus(status).phrase
    request_id = 'req-%s' % uuid.uuid4()
    body = json.dumps({'errors': [{
        'status': status, 'title': title, 'detail': detail,
        'code': error_codes.DEFAULT, 'request_id': request_id}]}).encode()
    head = ('HTTP/1.1 %d %s\r\nConnection: close\r\n'
            'Content-Type: application/json\r\nContent-Length: %d\r\n'
            'x-openstack-request-id: %s\r\n\r\n'
            % (status, title, len(body), request_id))
    return head.encode('latin-1') + body


class _Head:
    """The framing of a request read so far, from one scan of it."""

    def __init__(self, data):
        line_end = data.find(b'\r\n')
        self.line_length = line_end if line_end >= 0 else len(data)
        # Where the header block ends (-1: not yet received).
        self.end = data.find(b'\r\n\r\n')
        self.length = self.chunked = self.expects_continue = None
        if self.end >= 0:
            block = (data, 0, self.end + 2)
            length = _CONTENT_LENGTH.search(*block)
            self.length = int(length.group(1)) if length else 0
            self.chunked = bool(_CHUNKED.search(*block))
            self.expects_continue = bool(_EXPECT_CONTINUE.search(*block))

    def complete(self, data):
        """Whether ``data`` holds a whole request (and maybe more)."""
        if self.end < 0:
            return False
        if self.chunked:
            return data.endswith(_LAST_CHUNK)
        return len(data) >= self.end + 4 + self.length


class Limits:
    """What a request may be, and how long its client has to send it."""

    def __init__(self, request_line, header_block, body, client_timeout,
                 own_memory=0):
        self.request_line = request_line
        self.header_block = header_block
        self.body = body
        self.client_timeout = client_timeout
        self.own_memory = own_memory    # bytes; 0: no limit

    @classmethod
    def from_conf(cls, conf):
        return cls(conf.max_request_line, conf.max_header_size,
                   conf.oslo_middleware.max_request_body_size,
                   conf.client_timeout, conf.max_worker_memory * 2 ** 20)

    def problem(self, data, head):
        """(status, detail) if ``data`` (a request so far, framed as
        ``head``) breaks a limit, ``None`` while it may yet become a
        valid request."""
        if head.line_length > self.request_line:
            return 414, ('The request line is longer than %d bytes.'
                         % self.request_line)
        head_length = (head.end if head.end >= 0 else len(data)) - (
            head.line_length)
        if head_length > self.header_block:
            return 431, ('The request headers are longer than %d bytes.'
                         % self.header_block)
        if head.end >= 0 and max(
                head.length, len(data) - head.end - 4) > self.body:
            return 413, errors.PayloadTooLarge.detail(self.body)
        return None


class Worker(gthread.ThreadWorker):

    # When the heartbeat file was last touched (monotonic seconds).
    heartbeat_at = float('-inf')

    def init_process(self):
        self.limits = Limits.from_conf(self.app.conf)
        # Connections whose request is still arriving, oldest first.
        self.arriving = collections.deque()
        # Refused connections whose client may still be sending.
        self.lingering = set()
        # Once the worker stops: when requests still arriving are refused.
        self.arrivals_end = None
        self.memory_checked_at = time.monotonic()
        # Kept-alive connections armed on the pool (see _keep), oldest
        # first; gunicorn's own are in keepalived_conns, on the poller.
        self.watched_conns = collections.deque()
        self.dropped = memoryview(bytearray(_RECV_SIZE))
        # The constant part of a plain request's environ; None where
        # every request goes through gunicorn (see http1).
        self.plain_environ = (
            http1.base_environ(self.cfg) if self._plain_possible() else None)
        super().init_process()

    def _plain_possible(self):
        """Whether this configuration lets plain requests skip gunicorn's
        reading: not with TLS, the PROXY protocol, HTTP/2 cleartext or a
        SCRIPT_NAME from the environment, each of which gunicorn handles
        per request."""
        cfg = self.cfg
        return (not cfg.is_ssl and cfg.proxy_protocol == 'off'
                and cfg.http2_cleartext == 'off'
                and 'SCRIPT_NAME' not in os.environ)

    def notify(self):
        now = time.monotonic()
        if now - self.heartbeat_at >= HEARTBEAT_EVERY:
            self.heartbeat_at = now
            super().notify()
            if (self.limits.own_memory and self.alive
                    and now >= self.memory_checked_at + MEMORY_CHECK_EVERY):
                self.memory_checked_at = now
                self._replaced_if_grown()

    def _replaced_if_grown(self):
        """Stop (the arbiter forks a fresh worker) once this one's own
        memory passed its limit (see the module's docstring)."""
        own = allocator.own_memory()
        if own > self.limits.own_memory:
            self.log.info('Worker %d has %d MB of memory of its own, more '
                          'than --max-worker-memory: replacing it.',
                          os.getpid(), own // 2 ** 20)
            self._retire()

    def _retire(self):
        """Stop taking requests by the worker's own choice (its memory,
        ``max_requests``); the arbiter forks another.  Nothing is in a
        hurry then, unlike at an operator's stop: the requests in flight
        have as long to finish as any request has (gunicorn's
        ``timeout``), not the graceful stop's 10 s, after which a long
        answer (listings at 100,000 providers on a loaded host) was cut
        and its client saw the connection closed."""
        self.alive = False
        self.cfg.set('graceful_timeout', self.cfg.timeout)

    def enqueue_req(self, conn):
        """Every way in (accept, a kept-alive connection turning readable,
        bytes left over after a response) leads here: a connection goes
        to a thread only with a whole request read."""
        if getattr(conn, 'request_read', False):
            conn.request_read = False
            if conn.plain is None:
                super().enqueue_req(conn)
            else:
                self.tpool.submit(self._serve_plain, conn)
            return
        self._read_request(conn, conn.parser.unreader.take_buffered()
                           if conn.parser is not None else b'')

    def _read_request(self, conn, received):
        """Read the rest of ``conn``'s request (``received`` so far)
        without a thread, then refuse or dispatch it."""
        # A bytearray: a large body arrives in many reads, and appending
        # to bytes would copy all that came before each time.
        conn.received = bytearray(received)
        conn.continued = False
        conn.sock.setblocking(False)
        conn.read_deadline = time.monotonic() + self.limits.client_timeout
        if not self._settle(conn):
            self.arriving.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 functools.partial(self._on_readable, conn))

    def _on_readable(self, conn, _sock):
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b''
        if not data:  # the client went away
            self._stop_reading(conn)
            self._close(conn)
            return
        conn.received += data
        self._settle(conn)

    def _settle(self, conn):
        """Refuse or dispatch the request if that can be decided yet."""
        head = _Head(conn.received)
        problem = self.limits.problem(conn.received, head)
        if problem:
            self._stop_reading(conn)
            self._refuse(conn, *problem)
            return True
        if not head.complete(conn.received):
            if not conn.continued and head.expects_continue:
                # gunicorn would say it once the body is wanted; the body
                # is wanted now.
                conn.continued = True
                try:
                    conn.sock.send(b'HTTP/1.1 100 Continue\r\n\r\n')
                except OSError:
                    pass
            return False
        self._stop_reading(conn)
        if conn.parser is None:
            conn.parser = gunicorn_http.get_parser(
                self.cfg, conn.sock, conn.client)
        data, conn.received = bytes(conn.received), None
        conn.plain = self._read_plain(conn, data, head)
        if conn.plain is None:
            conn.parser.unreader.unread(data)
        conn.data_ready = True
        conn.request_read = True
        self.enqueue_req(conn)
        return True

    def _read_plain(self, conn, data, head):
        """``data`` as an http1.Request when it can be served without
        gunicorn's reading (exactly one plain request received)."""
        if (self.plain_environ is None or head.chunked
                or len(data) != head.end + 4 + head.length
                or not isinstance(conn.client, tuple)
                or not isinstance(conn.server, tuple)):
            return None
        return http1.read(data, head.end, self.cfg.limit_request_fields)

    def get_thread_pool(self):
        return pool.Pool(self.cfg.threads, self._on_kept_readable)

    def _on_kept_readable(self, conn):
        """(In a thread) the next request on a connection this worker
        kept: answered here when it is whole and plain, else handed to
        the event loop to read and dispatch."""
        try:
            self.watched_conns.remove(conn)
        except ValueError:  # the loop closed it meanwhile (expired)
            return
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            if not self._keep(conn):
                self.method_queue.defer(self._close, conn)
            return
        except OSError:
            data = b''
        if not data:  # the client went away
            self.method_queue.defer(self._close, conn)
            return
        head = _Head(data)
        if (head.end >= 0 and not head.chunked and not head.complete(data)
                and not self.limits.problem(data, head)):
            data = _body_following(conn.sock, data, head)
        if head.complete(data) and not self.limits.problem(data, head):
            conn.plain = self._read_plain(conn, data, head)
            if conn.plain is not None:
                self._serve_plain(conn)
                return
        self.method_queue.defer(self._read_request, conn, data)

    def _serve_plain(self, conn):
        """Answer a plain request (in a thread), then hand its connection
        on: armed on the pool, or to the loop to close."""
        request, conn.plain = conn.plain, None
        close = None
        try:
            kept, close = self._answer_plain(conn, request)
        except Exception:
            kept = False
            self.log.exception('Error handling request')
        if not kept:
            self.method_queue.defer(self._close, conn, True)
        if close is not None:
            try:
                close()
            except Exception:
                self.log.exception('Error closing an answer')

    def _answer_plain(self, conn, request):
        """Answer in one send with gunicorn's keep-alive rules (the
        client's wish, the worker still serving, room for another
        kept-alive connection); whether the connection was kept, and the
        call to make once the answer is sent."""
        self.nr += 1
        keep_alive = (request.keep_alive and self.alive and self.cfg.keepalive
                      and len(self.keepalived_conns) + len(self.watched_conns)
                      < self.max_keepalived)
        if self.nr >= self.max_requests and self.alive:
            self.log.info('Autorestarting worker after current request.')
            self._retire()
            keep_alive = False
        env = http1.environ(self.plain_environ, request, conn.client,
                            conn.server)
        env['gunicorn.socket'] = conn.sock
        try:
            head, body, close = http1.answer(self.wsgi, env, keep_alive)
        except Exception as exc:
            self.handle_error(None, conn.sock, conn.client, exc)
            return False, None
        sent = self._send(conn, head, body)
        return sent and keep_alive and self._keep(conn), close

    def _send(self, conn, head, body):
        try:
            conn.sock.setblocking(True)
            http1.send(conn.sock, head, body)
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET,
                                 errno.ENOTCONN):
                self.log.exception('Socket error sending an answer.')
            return False
        return True

    def _keep(self, conn):
        """Arm an answered connection on the pool for its next request,
        from the thread that answered (see the module's docstring). Safe
        from threads: ``watched_conns`` (which only this class's code
        touches) changes in one step under the GIL, whoever removes a
        connection from it owns it (the thread its request wakes, or the
        loop expiring it), and the connection is in it before the pool
        can report it."""
        conn.sock.setblocking(False)
        conn.set_timeout()
        self.watched_conns.append(conn)
        if not self.alive:
            # After the append: the loop's _cap_keepalive caps it, or this.
            conn.timeout = min(conn.timeout, time.monotonic() + _STOP_LINGER)
        try:
            self.tpool.watch(conn)
        except (ValueError, OSError):  # closed: the worker is exiting
            self.watched_conns.remove(conn)
            return False
        return True

    def murder_keepalived(self, force=False):
        """Also close the connections kept on the pool past their time
        (all of them when ``force``d). One whose next request arrived
        while every thread was busy is read and dispatched instead: that
        request waits for a thread, as one the loop hands over does."""
        super().murder_keepalived(force)
        now = time.monotonic()
        while self.watched_conns:
            try:
                conn = self.watched_conns[0]
            except IndexError:  # taken by a thread meanwhile
                break
            if conn.timeout > now and not force:
                break
            try:
                self.watched_conns.remove(conn)
            except ValueError:  # taken by a thread meanwhile
                continue
            self.tpool.forget(conn)
            if not force and _has_bytes(conn.sock):
                self._read_request(conn, b'')
            else:
                self._close(conn)

    def _stop_reading(self, conn):
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            self.arriving.remove(conn)
        except ValueError:
            pass

    def _refuse(self, conn, status, detail):
        self.log.warning('Refused a request from %s: %s', conn.client[0],
                         detail)
        try:
            conn.sock.send(error_response(status, detail))
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        self._linger(conn)

    def _linger(self, conn):
        """Drop what the client still sends, within the bounds, before
        closing (see the module's docstring)."""
        now = time.monotonic()
        conn.linger_until = now + min(self.limits.client_timeout,
                                      LINGER_SECONDS)
        conn.linger_silent_at = now + LINGER_SILENCE
        conn.linger_left = LINGER_BYTES
        self.lingering.add(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ,
                             functools.partial(self._on_lingering, conn))

    def _on_lingering(self, conn, _sock):
        try:
            count = conn.sock.recv_into(self.dropped)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            count = 0
        conn.linger_left -= count
        if not count or conn.linger_left <= 0:
            self._stop_lingering(conn)
        else:
            conn.linger_silent_at = time.monotonic() + LINGER_SILENCE

    def _stop_lingering(self, conn):
        self.lingering.discard(conn)
        self._stop_reading(conn)
        self._close(conn)

    def _close(self, conn, graceful=False):
        self.nr_conns -= 1
        conn.close(graceful=graceful)

    def _cap_keepalive(self, deadline):
        """(The loop, when the worker starts stopping.) Kept-alive
        connections close within ``_STOP_LINGER``; the loop is woken then
        to close those on the pool, which it does not wait for."""
        deadline = min(deadline, time.monotonic() + _STOP_LINGER)
        self.arrivals_end = deadline
        # Copies: answering threads change the deque meanwhile.
        for conn in list(self.keepalived_conns) + list(self.watched_conns):
            conn.timeout = min(conn.timeout, deadline)
        wake = threading.Timer(_STOP_LINGER, self.method_queue.defer,
                               (_nothing,))
        wake.daemon = True
        wake.start()

    def murder_pending(self):
        """Also answer 408 to, and close, requests not complete in time.
        Once the worker is stopping, a request still arriving (a client
        that connected just before) has ``_STOP_LINGER`` to complete and
        be served, as a kept-alive connection has; after that it is
        answered 503, never left to a timeout: a rolling restart costs
        its clients nothing they cannot retry at once."""
        super().murder_pending()
        now = time.monotonic()
        stopped = self.arrivals_end is not None and now >= self.arrivals_end
        while self.arriving and (
                stopped or self.arriving[0].read_deadline <= now):
            conn = self.arriving[0]
            self._stop_reading(conn)
            if stopped:
                self._refuse(conn, 503, 'The server is stopping.')
            else:
                self._refuse(conn, 408, 'The request was not complete '
                             'within %d seconds.'
                             % self.limits.client_timeout)
        if not self.alive:
            now = float('inf')  # lingering stops with the worker
        for conn in [conn for conn in self.lingering
                     if min(conn.linger_until, conn.linger_silent_at) <= now]:
            self._stop_lingering(conn)

    def handle_error(self, req, client, addr, exc):
        status = _status_of(exc)
        if status == 500:
            self.log.exception('Error handling request')
            detail = 'The server could not handle the request.'
        else:
            self.log.warning('Invalid request from %s: %s',
                             (addr or ('',))[0], exc)
            detail = '%s: %s' % (type(exc).__name__, exc)
        try:
            util.write_nonblock(client, error_response(status, detail))
        except Exception:
            self.log.debug('Failed to send the error answer.')
