"""One state per host for servers that load the application in each
worker: the workers ask a state process over a local socket.

A server that loads the application before it forks (``placement-api``,
uwsgi without ``lazy-apps``, gunicorn ``--preload``) lets its workers
share the parent's state.  One that loads it in each worker after the
fork (uwsgi with kolla-ansible's ``lazy-apps``, mod_wsgi) would give each
worker a copy of its own, read as it starts: hundreds of megabytes each
at a large cloud, and seconds during which a single worker keeps its
requests waiting.  There, the first worker starts a state process
(``placement.cmd.state_process``) and every worker on the host asks it:
the state is read once per host, is still warm when a worker restarts,
and an answer equals the local one (the process reads the change log
before each, as every state does).

The process is found by name: an abstract Unix socket named after the
user, this release and the configuration, so that two services on a
host, or an upgraded one, never share one.  Each side checks the other
runs as the same user (``SO_PEERCRED``) before it reads anything: the
messages are pickles, and an abstract name has no file permissions.
The process exits once no worker has been connected for a while.

What is asked is ``fn(state, *args)``: ``fn`` a module-level function
(pickled by name), the arguments and the result plain values.
"""

import copyreg
import hashlib
import io
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref

from placement import version

LOG = logging.getLogger(__name__)

_LENGTH = struct.Struct('!Q')
_HEADER = struct.Struct('!QQ')
_PEER = struct.Struct('3i')

# How long a worker waits for a state process it started to listen.
_START_SECONDS = 30


class Unreachable(Exception):
    """No state process answers, and none could be started."""


def socket_name(conf):
    """The abstract socket name of the state process for ``conf``."""
    identity = '\n'.join([
        str(os.getuid()), version.release(),
        os.path.dirname(os.path.abspath(__file__)),
        str(conf.placement_database.connection),
        '\0'.join(os.path.abspath(path) for path in conf.config_file or ()),
        str(conf.config_dir or '')])
    return 'placement-state-' + hashlib.sha256(
        identity.encode()).hexdigest()[:24]


def address(name):
    return '\0' + name


def same_user(sock):
    """Whether the process at the other end of ``sock`` runs as us."""
    _pid, uid, _gid = _PEER.unpack(sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER.size))
    return uid == os.getuid()


def _out_of_band(view):
    return memoryview, (pickle.PickleBuffer(view),)


# The JSON pieces of an answer (views of the encoded batches, megabytes
# each in a large listing) go after the pickle as they are, not copied
# into it.
_DISPATCH = dict(copyreg.dispatch_table)
_DISPATCH[memoryview] = _out_of_band


def send(sock, value):
    """Send ``value``: (the pickle's length, how many buffers) and the
    pickle, then each buffer (its length, its bytes)."""
    buffer = io.BytesIO()
    buffers = []
    pickler = pickle.Pickler(buffer, protocol=5,
                             buffer_callback=buffers.append)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(value)
    sock.sendall(_HEADER.pack(buffer.tell(), len(buffers))
                 + buffer.getbuffer())
    for out_of_band in buffers:
        raw = out_of_band.raw()
        sock.sendall(_LENGTH.pack(raw.nbytes))
        sock.sendall(raw)


def receive(sock):
    """The next value sent on ``sock``; EOFError once it is closed."""
    length, count = _HEADER.unpack(_exactly(sock, _HEADER.size))
    data = _exactly(sock, length)
    buffers = []
    for _ in range(count):
        (size,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size))
        buffers.append(_exactly(sock, size))
    return pickle.loads(data, buffers=buffers)


def _exactly(sock, size):
    view = memoryview(bytearray(size))
    got = 0
    while got < size:
        count = sock.recv_into(view[got:])
        if not count:
            raise EOFError('the state process closed the connection')
        got += count
    return view


def _loaded_in_a_worker():
    """Whether the WSGI server loads the application in each worker,
    after it forked them (so no parent holds a state to share)."""
    try:
        import uwsgi
    except ImportError:
        pass
    else:
        return uwsgi.worker_id() > 0
    try:
        import mod_wsgi
    except ImportError:
        return False
    # Only Apache's embedded module says which process group runs us
    # (the PyPI package of the same name, mod_wsgi-express, does not).
    return hasattr(mod_wsgi, 'process_group')


def _python():
    """The interpreter to run the state process with: the WSGI server's
    own binary may be uwsgi's or Apache's."""
    for path in (os.path.join(sys.prefix, 'bin', 'python3'),
                 os.path.join(sys.exec_prefix, 'bin', 'python3'),
                 sys.executable):
        if path and os.path.basename(path).startswith('python') and (
                os.access(path, os.X_OK)):
            return path
    return None


class Client:
    """A worker's way to its host's state process: one connection per
    thread, the process started when none answers."""

    def __init__(self, name, argv):
        self.name = name
        self._argv = argv
        self._local = threading.local()
        self._start_lock = threading.Lock()

    def call(self, fn, args):
        """``fn(state, *args)`` in the state process; what it raised is
        raised here.  A process gone (it exits when idle, or crashed) is
        started again and asked once more."""
        try:
            ok, value = self._ask((fn, args))
        except (OSError, EOFError):
            self.close()
            ok, value = self._ask((fn, args))
        if ok:
            return value
        raise value

    def _ask(self, message):
        sock = self.connected()
        send(sock, message)
        return receive(sock)

    def connected(self):
        """This thread's connection, made first (and the process started)
        when it has none."""
        sock = getattr(self._local, 'sock', None)
        if sock is None:
            sock = self._local.sock = self.connect(start=True)
        return sock

    def close(self):
        """Close this thread's connection (the process exits once no
        worker holds one)."""
        sock = getattr(self._local, 'sock', None)
        self._local.sock = None
        if sock is not None:
            sock.close()

    def connect(self, start):
        """A connection to the state process, started first when none
        listens and ``start`` says so; Unreachable otherwise."""
        deadline = time.monotonic() + _START_SECONDS
        started_at = None
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(address(self.name))
            except (ConnectionRefusedError, FileNotFoundError):
                sock.close()
                if not start or time.monotonic() > deadline:
                    raise Unreachable('no state process at %s' % self.name)
                # Again after a while: the one started may have found
                # the name still held by one about to exit.
                if started_at is None or time.monotonic() - started_at > 2:
                    self._start()
                    started_at = time.monotonic()
                time.sleep(0.05)
                continue
            if not same_user(sock):
                sock.close()
                raise Unreachable('the state process at %s runs as another '
                                  'user' % self.name)
            return sock

    def _start(self):
        """Start a state process (of several started at once, one keeps
        the name and the others exit), not as a child of this worker: a
        launcher starts it and exits at once, so that nothing here waits
        to reap it.  A uwsgi worker with a thread of its own waiting for
        a child did not exit when told to stop, and held the server's
        stop for its ``worker-reload-mercy`` (60 s under kolla)."""
        with self._start_lock:
            python = _python()
            if python is None:
                raise Unreachable('no Python interpreter found to run the '
                                  'state process')
            LOG.info('Starting the state process %s', self.name)
            # In the server's own process group: what stops the server
            # as a whole (its service manager, a terminal) stops it too.
            launcher = subprocess.Popen(
                [python, '-c', _LAUNCH, python, '-m',
                 'placement.cmd.state_process', '--socket-name',
                 self.name] + self._argv,
                stdin=subprocess.DEVNULL, close_fds=True)
            launcher.wait()


# The launcher: starts its arguments as a program and exits, leaving it
# to be reaped by init (or the host's subreaper).
_LAUNCH = ('import subprocess, sys; '
           'subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)')


_clients = weakref.WeakKeyDictionary()


def attach(db, conf):
    """Whether ``db`` is answered by the host's state process: only when
    the application is loaded in a worker (``_loaded_in_a_worker``) and
    ``[placement] share_state_between_workers`` is on; the process is
    started now, so that it reads the state while the worker starts."""
    if not conf.placement.share_state_between_workers or (
            not _loaded_in_a_worker()):
        return False
    argv = []
    for path in conf.config_file or ():
        argv += ['--config-file', os.path.abspath(path)]
    if conf.config_dir:
        argv += ['--config-dir', os.path.abspath(conf.config_dir)]
    client = Client(socket_name(conf), argv)
    try:
        # Kept: the thread that loads the application is usually the
        # one that then serves (uwsgi's).
        client.connected()
    except Unreachable as error:
        LOG.warning('Each worker keeps its own state: %s', error)
        return False
    answer_through(db, client)
    return True


def answer_through(db, client):
    """Have ``client``'s state process answer for ``db`` in this process
    (None: this process's own state again)."""
    if client is None:
        _clients.pop(db, None)
    else:
        _clients[db] = client


def client_of(db):
    """The Client answering for ``db`` in this process, or None (the
    process keeps its own state)."""
    return _clients.get(db)
