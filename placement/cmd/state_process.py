"""A host's state process: one state for the workers of a WSGI server
that loads the application in each worker (``placement.state.shared``).

Started by the first worker that finds none, with that worker's
configuration; not a command for operators.  It takes its socket's name
before it reads anything, so that of several started at once one stays
and the others exit; it then reads the state, and answers each worker's
connection in a thread of its own, one question after another.  It
exits once no worker has been connected for ``--idle-seconds`` (10):
after the server stopped, or reloaded into another release (whose
workers start a process of their own).
"""

import errno
import logging
import pickle
import signal
import socket
import sys
import threading
import time

from oslo_config import cfg

from placement import allocator
from placement import config_loader
from placement.state import shared
from placement.state import snapshot
from placement.storage import engine

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.StrOpt('socket-name', required=True,
               help='The abstract Unix socket to answer on.'),
    cfg.IntOpt('idle-seconds', default=10, min=1,
               help='Exit once no worker has been connected this long.'),
]


class Answering:
    """The connected workers, and when the last of them left."""

    def __init__(self, db):
        self.db = db
        self._lock = threading.Lock()
        self._connected = 0
        self._idle_since = time.monotonic()

    def idle_for(self):
        with self._lock:
            if self._connected:
                return 0
            return time.monotonic() - self._idle_since

    def serve(self, sock):
        with self._lock:
            self._connected += 1
        try:
            if shared.same_user(sock):
                self._answer_each(sock)
            else:
                LOG.warning('Refused a connection from another user')
        finally:
            sock.close()
            with self._lock:
                self._connected -= 1
                self._idle_since = time.monotonic()

    def _answer_each(self, sock):
        while True:
            try:
                fn, args = shared.receive(sock)
            except (EOFError, OSError):
                return
            try:
                reply = (True, snapshot.answer_here(self.db, fn, args))
            except Exception as error:  # noqa: BLE001 - raised in the worker
                reply = (False, error)
            try:
                shared.send(sock, reply)
            except (pickle.PicklingError, TypeError, AttributeError) as error:
                LOG.exception('An answer could not be sent')
                shared.send(sock, (False, shared.Unreachable(
                    'the state process could not send its answer: %s'
                    % error)))


def _listening(name):
    """The bound, listening socket; None when another process has it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(shared.address(name))
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            return None
        raise
    listener.listen(128)
    return listener


def main(argv=None):
    # A uwsgi worker that starts this process ignores SIGTERM and SIGHUP,
    # and the exec kept that: what stops the server's process group (a
    # service manager's stop) must stop this process too.
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)
    allocator.return_large_buffers()
    conf = config_loader.load(
        sys.argv[1:] if argv is None else argv, cli_opts=CLI_OPTS)
    listener = _listening(conf.socket_name)
    if listener is None:
        return 0
    db = engine.Database.from_conf(conf)
    LOG.info('State process %s reading the state', conf.socket_name)
    snapshot.serving(db)
    answering = Answering(db)
    listener.settimeout(1)
    while answering.idle_for() < conf.idle_seconds:
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        sock.settimeout(None)
        threading.Thread(target=answering.serve, args=(sock,),
                         daemon=True).start()
    LOG.info('State process %s exits: no worker connected for %d s',
             conf.socket_name, conf.idle_seconds)
    listener.close()
    db.dispose()
    return 0


if __name__ == '__main__':
    sys.exit(main())
