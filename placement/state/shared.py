"""One state per host for servers that load the application in each
worker: the workers ask the host's state readers over local sockets.

A server that loads the application before it forks (``placement-api``,
uwsgi without ``lazy-apps``, gunicorn ``--preload``) lets its workers
share the parent's state.  One that loads it in each worker after the
fork (uwsgi with kolla-ansible's ``lazy-apps``, mod_wsgi) would give each
worker a copy of its own, read as it starts: hundreds of megabytes each
at a large cloud.  There, a worker starts the host's state keeper
(``placement.cmd.state_process``) when it finds none; the keeper reads
the state once and forks readers (``state.reader``) that share its pages,
one per core the workers can use (at least two), and every read of the
state, in every worker, is a question to a reader.

No single process is in the way, and no question waits long on one:

- a worker asks its own reader first (workers spread over the readers),
  and another when that one is busy (it says so at once), silent (no
  frame for ``wire.SILENT_SECONDS``: stopped, stuck) or gone; a silent
  one is left alone for ``_DOWN_SECONDS``; when every reader is busy,
  its own takes the question next, and is waited for while it beats (a
  reader at work is no fault: a host whose readers are all busy has no
  core to spare for the worker's own answer either);
- when no reader has taken the question within ``DEADLINE`` (every one
  silent, gone, or of other code), the worker answers it from SQL where
  the caller has a way (a provider's reads, the listings of providers),
  else from a state of its own (read then, dropped once the readers
  answer again), logs
  why once and counts it (``placement_state_fallbacks_total``): exact
  either way;
- a worker that finds a reader's slot empty makes sure the keeper is
  there and answering, and starts another (killing one that stayed
  silent) when it is not; the keeper replaces readers that exit or
  stop beating;
- a keeper stopped or killed stops no answer: its readers go on, and a
  new keeper takes their slots back one at a time once it has read the
  state.

Processes are found by name: abstract Unix sockets named after the
user, this release, a digest of this code and the configuration, so
that two services on a host, an upgraded one, or code changed in place
never share one.  Each side checks the other runs as the same user
(``SO_PEERCRED``) before it reads anything (``wire``).
"""

import functools
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref

from placement import version
from placement.state import questions
from placement.state import wire

LOG = logging.getLogger(__name__)

# How long a question waits at most for a reader to start on it.
DEADLINE = 1.0
# How long a reader that stayed silent is not asked.
_DOWN_SECONDS = 2.0
# How long a worker loading the application waits for the first reader
# (the keeper reading the state of a large cloud).
_READY_SECONDS = 120
# How long a keeper may leave pings unanswered before a worker that
# needs it replaces it.
_KEEPER_SILENT_SECONDS = 3.0
# How often one process looks at the keeper at most.
_KEEPER_CHECK_EVERY = 1.0

_ANSWERED, _BUSY, _SILENT, _GONE, _EMPTY = range(5)


class Unreachable(Exception):
    """No reader answered in time (``reason`` 'unanswered'), or the
    readers run other code ('other_code')."""

    def __init__(self, message, reason='unanswered'):
        super().__init__(message)
        self.reason = reason


@functools.lru_cache(maxsize=None)
def code_digest():
    """A digest of this package's code: a process of other code (changed
    in place, without a new release) never answers this one."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, root).encode() + b'\0')
                with open(path, 'rb') as handle:
                    digest.update(handle.read())
    return digest.hexdigest()[:16]


def socket_name(conf):
    """The abstract socket name of the state keeper for ``conf``."""
    return 'placement-state-' + host_name(conf)


def host_name(conf):
    """What names the host's processes of one service: this user, this
    release and code, the database and configuration of ``conf``."""
    identity = '\n'.join([
        str(os.getuid()), version.release(), code_digest(),
        os.path.dirname(os.path.abspath(__file__)),
        str(conf.placement_database.connection),
        '\0'.join(os.path.abspath(path) for path in conf.config_file or ()),
        str(conf.config_dir or '')])
    return hashlib.sha256(identity.encode()).hexdigest()[:24]


def python():
    """The interpreter to run the keeper with: the WSGI server's own
    binary may be uwsgi's or Apache's."""
    for path in (os.path.join(sys.prefix, 'bin', 'python3'),
                 os.path.join(sys.exec_prefix, 'bin', 'python3'),
                 sys.executable):
        if path and os.path.basename(path).startswith('python') and (
                os.access(path, os.X_OK)):
            return path
    return None


# The launcher: starts its arguments as a program and exits, leaving it
# to be reaped by init (or the host's subreaper).  A uwsgi worker ignores
# SIGTERM and SIGHUP, and an exec keeps that: the program gets them as by
# default, so that the server's stop reaches it even while it starts.
_LAUNCH = ('import signal, subprocess, sys\n'
           'for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n'
           '    signal.signal(number, signal.SIG_DFL)\n'
           'subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)\n')
# A keeper just started is given this long to take its name before
# another is started.
_STARTING_SECONDS = 10


class Client:
    """A worker's way to its host's state readers: a connection per
    thread and reader, the keeper started when there is none.

    ``own_state``: whether the process answers from a state of its own
    when no reader answers in time (a worker's fallback); without it,
    the question raises Unreachable (the metrics process's: a scrape
    then goes without the gauges rather than read the whole state)."""

    def __init__(self, name, argv, readers, preferred=0, own_state=True):
        self.name = name
        self.readers = readers
        self.own_state = own_state
        self._argv = list(argv) + ['--readers', str(readers)]
        self._rotation = [(preferred + step) % readers
                          for step in range(readers)]
        self._local = threading.local()
        self._down_until = [0.0] * readers
        self._keeper_lock = threading.Lock()
        self._keeper_checked = 0.0
        self._keeper_silent_since = None
        self._started_at = None
        self._held = None   # (keeper pid, the connection held to it)

    # -- questions ----------------------------------------------------------

    def call(self, name, args, trace=None):
        """The answer of the question ``name`` to ``args`` from a reader
        (which continues ``trace``, ``tracing.carried``); what it raised
        is raised here; Unreachable when no reader has started on it
        within DEADLINE."""
        deadline = time.monotonic() + DEADLINE
        while True:
            slots = self._up()
            if not slots:
                raise Unreachable('every state reader is silent')
            busy = []
            for slot in slots:
                outcome, value = self._ask(
                    slot, ('ask', name, args, False, trace), deadline)
                if outcome == _ANSWERED:
                    return _answer(value)
                if outcome == _BUSY:
                    busy.append(slot)
                elif outcome == _EMPTY:
                    # The keeper fills it, if there is one that answers.
                    self.check_keeper()
            if busy:
                # Every reader is busy: the first is asked to take it
                # next, and waited for while it beats.
                outcome, value = self._ask(
                    busy[0], ('ask', name, args, True, trace), deadline)
                if outcome == _ANSWERED:
                    return _answer(value)
            if time.monotonic() >= deadline:
                raise Unreachable('no state reader started on %s within '
                                  '%.1f s' % (name, DEADLINE))

    def _up(self):
        now = time.monotonic()
        return [slot for slot in self._rotation
                if self._down_until[slot] <= now]

    def _ask(self, slot, message, deadline):
        """(outcome, the pickled answer's value) of ``message`` to the
        reader of ``slot``; a connection it closed since it was last
        used is made again once."""
        for _attempt in (0, 1):
            incoming = self._connection(slot)
            if incoming is None:
                return _EMPTY, None
            sock = incoming.sock
            started = False
            try:
                wire.send(sock, message)
                while True:
                    sock.settimeout(_silence(started, deadline))
                    frame = incoming.frame()
                    if frame == wire.ANSWER:
                        return _ANSWERED, incoming.value()
                    if frame == wire.BUSY:
                        return _BUSY, None
                    started = True
            except socket.timeout:
                self._drop(slot)
                self._down_until[slot] = time.monotonic() + _DOWN_SECONDS
                return _SILENT, None
            except (EOFError, OSError):
                self._drop(slot)
                if started:
                    return _GONE, None
        return _GONE, None

    def _connection(self, slot):
        """This thread's connection to the reader of ``slot`` (its
        ``wire.Incoming``), made first when it has none; None when no
        reader holds the slot."""
        socks = self._socks()
        incoming = socks.get(slot)
        if incoming is None:
            sock = _connect(wire.slot_name(self.name, slot))
            if sock is None:
                return None
            incoming = socks[slot] = wire.Incoming(sock)
        return incoming

    def _socks(self):
        socks = getattr(self._local, 'socks', None)
        if socks is None:
            socks = self._local.socks = {}
        return socks

    def _drop(self, slot):
        incoming = self._socks().pop(slot, None)
        if incoming is not None:
            incoming.sock.close()

    def close(self):
        """Close this thread's connections to the readers, and the one
        this process holds to the keeper (the keeper and its readers
        exit once no worker holds one for a while)."""
        for slot in list(self._socks()):
            self._drop(slot)
        with self._keeper_lock:
            if self._held is not None:
                self._held[1].close()
                self._held = None

    # -- the keeper -----------------------------------------------------

    def check_keeper(self):
        """Make sure a keeper is there to fill empty slots: start one when
        none is, and replace one that has left pings unanswered for
        ``_KEEPER_SILENT_SECONDS`` (at most every
        ``_KEEPER_CHECK_EVERY``, by one thread, a ping of 0.2 s)."""
        now = time.monotonic()
        if now - self._keeper_checked < _KEEPER_CHECK_EVERY or (
                not self._keeper_lock.acquire(blocking=False)):
            return
        try:
            self._keeper_checked = now
            pid = self._ping_keeper(0.2)
            if pid is None:
                return
            if pid > 0:
                self._keeper_silent_since = None
                self._hold_keeper(pid)
                return
            if self._keeper_silent_since is None:
                self._keeper_silent_since = now
            elif now - self._keeper_silent_since > _KEEPER_SILENT_SECONDS:
                LOG.warning('The state keeper %s (pid %d) has not answered '
                            'for %.0f s: replacing it', self.name, -pid,
                            now - self._keeper_silent_since)
                _kill(-pid)
                self._keeper_silent_since = None
                self._start()
        finally:
            self._keeper_lock.release()

    def _ping_keeper(self, timeout):
        """The keeper's pid when it answers a ping within ``timeout``,
        minus its pid when it does not, None when there was none (one is
        started then, unless one was started lately)."""
        sock = _connect(self.name)
        if sock is None:
            self._start_once()
            return None
        with sock:
            pid = wire.peer(sock)[0]
            try:
                sock.settimeout(timeout)
                wire.send(sock, ('ping',))
                incoming = wire.Incoming(sock)
                if incoming.frame() != wire.ANSWER:
                    return -pid
                incoming.value()
            except (socket.timeout, OSError, EOFError):
                return -pid
            return pid

    def _hold_keeper(self, pid):
        """Hold a connection to the keeper ``pid`` for as long as this
        process runs: the keeper stays while a worker does."""
        if self._held is not None and self._held[0] == pid:
            return
        if self._held is not None:
            self._held[1].close()
            self._held = None
        sock = _connect(self.name)
        if sock is not None:
            self._held = (wire.peer(sock)[0], sock)

    def ready(self, timeout=_READY_SECONDS):
        """Whether a reader answers, within ``timeout``: the keeper is
        started if none runs, and given the time it takes to read the
        state (a worker loading the application waits here, before it
        takes requests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for slot in self._rotation:
                if self._pings(slot):
                    with self._keeper_lock:
                        self._hold_keeper(-1)
                    return True
            if _connect(self.name) is None:
                self._start_once()
            time.sleep(0.05)
        return False

    def _pings(self, slot):
        """Whether the reader of ``slot`` answers a ping within a second
        (a reader just forked may take that long on a busy host)."""
        sock = _connect(wire.slot_name(self.name, slot))
        if sock is None:
            return False
        with sock:
            try:
                sock.settimeout(1)
                wire.send(sock, ('ping',))
                return sock.recv(1) == wire.ANSWER
            except OSError:
                return False

    def _start_once(self):
        """Start a keeper, unless this process started one lately that
        may still be on its way to taking the name."""
        if self._started_at is not None and (
                time.monotonic() - self._started_at < _STARTING_SECONDS):
            return
        self._start()

    def _start(self):
        """Start a keeper (of several started at once, one keeps the
        name and the others exit), not as a child of this worker: a
        launcher starts it and exits at once, so that nothing here waits
        to reap it.  A uwsgi worker with a thread of its own waiting for
        a child did not exit when told to stop, and held the server's
        stop for its ``worker-reload-mercy`` (60 s under kolla)."""
        interpreter = python()
        if interpreter is None:
            raise Unreachable('no Python interpreter found to run the '
                              'state keeper')
        LOG.info('Starting the state keeper %s', self.name)
        self._started_at = time.monotonic()
        launch(interpreter, 'placement.cmd.state_process',
               ['--socket-name', self.name] + self._argv)


def launch(python, module, argv):
    """Start ``python -m module argv`` through a launcher that exits at
    once (``_LAUNCH``), in this process's group: what stops the server
    as a whole (its service manager, a terminal) stops it too."""
    launcher = subprocess.Popen(
        [python, '-c', _LAUNCH, python, '-m', module] + list(argv),
        stdin=subprocess.DEVNULL, close_fds=True)
    launcher.wait()


def _silence(started, deadline):
    """How long to wait for the next frame: a reader beats while it
    works; one that has not started may take until the deadline."""
    if started:
        return wire.SILENT_SECONDS
    return max(0.001, min(wire.SILENT_SECONDS,
                          deadline - time.monotonic()))


def _answer(reply):
    ok, value = reply
    if ok:
        return value
    if isinstance(value, questions.UnknownQuestion):
        raise Unreachable(str(value), reason='other_code')
    raise value


def _connect(name):
    """A connection to the process listening on ``name``; None when none
    does; Unreachable when another user's does."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(wire.address(name))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    if wire.peer(sock)[1] != os.getuid():
        sock.close()
        raise Unreachable('the state process at %s runs as another user'
                          % name)
    return sock


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _server_workers():
    """(how many workers the WSGI server runs, this worker's number from
    0), where it loads the application in each worker after forking it
    (so no parent holds a state to share); None elsewhere."""
    try:
        import uwsgi
    except ImportError:
        pass
    else:
        if uwsgi.worker_id() > 0:
            return uwsgi.numproc, uwsgi.worker_id() - 1
        return None
    try:
        import mod_wsgi
    except ImportError:
        return None
    # Only Apache's embedded module says which process group runs us
    # (the PyPI package of the same name, mod_wsgi-express, does not).
    if not hasattr(mod_wsgi, 'process_group'):
        return None
    return getattr(mod_wsgi, 'maximum_processes', 1), os.getpid()


def loaded_in_each_worker():
    """Whether the WSGI server loads the application in each of its
    workers (``_server_workers``)."""
    return _server_workers() is not None


def reader_count(workers):
    """Readers for ``workers`` workers: one per core they can use, and
    two at least, so that one stopped or busy never leaves the workers
    without an answer."""
    return max(2, min(workers, os.cpu_count() or 1))


_clients = weakref.WeakKeyDictionary()


def config_argv(conf):
    """The command-line arguments that give another process ``conf``'s
    configuration files."""
    argv = []
    for path in conf.config_file or ():
        argv += ['--config-file', os.path.abspath(path)]
    if conf.config_dir:
        argv += ['--config-dir', os.path.abspath(conf.config_dir)]
    return argv


def attach(db, conf):
    """Whether ``db`` is answered by the host's state readers: only when
    the application is loaded in a worker (``_server_workers``) and
    ``[placement] share_state_between_workers`` is on.  The keeper is
    started now if none runs, and the worker waits for a reader before
    it takes requests."""
    found = _server_workers()
    if not conf.placement.share_state_between_workers or found is None:
        return False
    workers, number = found
    readers = reader_count(workers)
    client = Client(socket_name(conf), config_argv(conf), readers,
                    number % readers)
    try:
        if not client.ready():
            LOG.warning('No state reader answered within %d s; this '
                        'worker answers from its own state until one '
                        'does', _READY_SECONDS)
    except Unreachable as error:
        LOG.warning('Each worker keeps its own state: %s', error)
        return False
    answer_through(db, client)
    return True


def answer_through(db, client):
    """Have ``client``'s readers answer for ``db`` in this process (None:
    this process's own state again)."""
    if client is None:
        _clients.pop(db, None)
    else:
        _clients[db] = client


def client_of(db):
    """The Client answering for ``db`` in this process, or None (the
    process keeps its own state)."""
    return _clients.get(db)
