"""A host's state keeper: the one state of the workers of a WSGI server
that loads the application in each worker (``placement.state.shared``).

Started by a worker that finds none, with that worker's configuration;
not a command for operators.  It takes its socket's name before it reads
anything, so that of several started at once one stays and the others
exit.  It reads the state (again and again while the database cannot be
read), then forks ``--readers`` readers (``state.reader``), each into a
slot of its own, and from then on:

- a reader that exits (killed, crashed) is replaced by a fresh fork,
  and one that has not beaten for ``Board.STUCK_SECONDS`` (stopped,
  stuck) is killed and replaced; one with more than ``--reader-memory``
  of its own is asked to retire, one at a time, and its slot given to a
  fresh fork at once while it finishes its answer: the keeper brings its
  own state up to date every second, so a new reader starts near where
  the log stands;
- a slot held by a reader some earlier keeper forked (it died, and its
  readers went on answering) is taken back, one slot at a time: that
  reader is asked to retire once the keeper is ready to fork another,
  so that every reader shares this keeper's pages;
- each worker holds a connection to the keeper while it runs, and
  pings on it are answered by a thread of the keeper's own, so that a
  long read of the state never makes the keeper look stuck;
- once no worker has been connected to it or to any reader for
  ``--idle-seconds`` (the server stopped, or reloaded into another
  release, whose workers start a keeper of their own), it stops its
  readers and exits.

The keeper answers no question itself: it stopped, or killed, costs no
answer, since its readers go on.
"""

import errno
import logging
import os
import signal
import socket
import sys
import threading
import time

from oslo_config import cfg

from placement import allocator
from placement import config_loader
from placement import metrics
from placement import tracing
from placement.state import reader
from placement.state import snapshot
from placement.state import wire
from placement.storage import engine

LOG = logging.getLogger(__name__)

CLI_OPTS = [
    cfg.StrOpt('socket-name', required=True,
               help='The abstract Unix socket to answer on; reader N '
                    'answers on this name followed by -N.'),
    cfg.IntOpt('readers', default=2, min=1,
               help='How many readers answer the workers.'),
    cfg.IntOpt('reader-memory', default=32, min=0,
               help='MB of its own above which a reader is replaced by '
                    'a fresh fork (0: never).'),
    cfg.IntOpt('idle-seconds', default=10, min=1,
               help='Exit once no worker has been connected this long.'),
]

# How often the keeper looks at its readers.
_TICK = 0.1
# How often it brings its own state up to the change log (a reader it
# forks catches up the rest itself).
_REFRESH_EVERY = 1.0
# How long a reader from an earlier keeper is given to give its slot up.
_RETIRE_SECONDS = 5
# How long the keeper waits between two failed reads of the state.
_READ_AGAIN_SECONDS = 2
# How often the keeper looks at its readers' memory.
_MEMORY_EVERY = 2.0
# How long a retiring reader has to finish its answer.
_LEAVING_SECONDS = 120


def listening(name):
    """A bound, listening socket on the abstract ``name``; None when
    another process holds it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(wire.address(name))
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            return None
        raise
    listener.listen(128)
    return listener


class Keeper:
    """The keeper's readers and its state."""

    def __init__(self, conf, db, listener):
        self.name = conf.socket_name
        self.db = db
        self.board = reader.Board(conf.readers)
        self._listener = listener
        self._idle_seconds = conf.idle_seconds
        self._reader_memory = conf.reader_memory * 2 ** 20
        self.children = {}      # slot -> pid
        self._leaving = {}      # pid -> when it was asked to retire
        self._retiring = {}     # slot -> when an earlier reader was asked
        self._memory_checked = time.monotonic()
        self._busy_at = time.monotonic()
        self._workers_lock = threading.Lock()
        self._workers = 0   # connections to the keeper held

    def run(self):
        threading.Thread(target=self._answer_pings, daemon=True).start()
        self._read_state()
        self._busy_at = time.monotonic()
        refreshed = time.monotonic()
        while not self._idle():
            self._reap()
            self._replace_stuck()
            self._retire_the_largest()
            if time.monotonic() - refreshed > _REFRESH_EVERY:
                self._refresh()
                refreshed = time.monotonic()
            for slot in range(self.board.slots):
                if slot not in self.children:
                    self._fill(slot)
            time.sleep(_TICK)
        LOG.info('State keeper %s exits: no worker connected for %d s',
                 self.name, self._idle_seconds)
        self._stop_readers()

    # -- the state ------------------------------------------------------

    def _read_state(self):
        """The state read whole, once the database answers."""
        while True:
            try:
                snapshot.serving(self.db, strict=True)
                return
            except Exception as error:  # noqa: BLE001 - tried again
                LOG.warning('State keeper %s could not read the state, '
                            'trying again: %s', self.name, error)
                time.sleep(_READ_AGAIN_SECONDS)

    def _refresh(self):
        """The keeper's state where the log stands, so that a reader
        forked now has little to catch up; a failure is left to the next
        time (and to each reader's own catch-up)."""
        try:
            with snapshot.of(self.db).fresh():
                pass
        except Exception as error:  # noqa: BLE001 - next tick
            LOG.warning('State keeper %s could not read the change log: '
                        '%s', self.name, error)

    # -- readers --------------------------------------------------------

    def _fill(self, slot):
        """Fork a reader into ``slot``; a slot an earlier keeper's reader
        holds is first asked back."""
        listener = listening(wire.slot_name(self.name, slot))
        if listener is None:
            self._ask_back(slot)
            return
        self._retiring.pop(slot, None)
        self.board.start(slot)
        pid = os.fork()
        if pid == 0:
            try:
                self._listener.close()
                reader.Reader(self.db, listener, self.name, slot,
                              self.board, self._idle_seconds).run()
            finally:
                os._exit(1)
        listener.close()
        self.children[slot] = pid
        LOG.info('State keeper %s forked reader %d (pid %d)', self.name,
                 slot, pid)

    def _ask_back(self, slot):
        """Ask the reader holding ``slot`` (not ours) to retire, one slot
        at a time, at most every ``_RETIRE_SECONDS``."""
        asked = self._retiring.get(slot)
        now = time.monotonic()
        if asked is not None and now - asked < _RETIRE_SECONDS:
            return
        if any(now - when < _RETIRE_SECONDS
               for other, when in self._retiring.items() if other != slot):
            return
        self._retiring[slot] = now
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(1)
                sock.connect(wire.address(wire.slot_name(self.name, slot)))
                if wire.peer(sock)[1] == os.getuid():
                    wire.send(sock, ('retire',))
        except OSError:
            pass

    def _reap(self):
        for slot, pid in list(self.children.items()):
            if _exited(pid):
                del self.children[slot]
        for pid, asked in list(self._leaving.items()):
            if _exited(pid):
                del self._leaving[pid]
            elif time.monotonic() - asked > _LEAVING_SECONDS:
                _kill(pid, signal.SIGKILL)

    def _retire_the_largest(self):
        """Every ``_MEMORY_EVERY`` seconds, unless one is still leaving:
        ask the reader with the most memory of its own, past the limit,
        to retire, and give its slot to a fresh fork at once."""
        now = time.monotonic()
        if not self._reader_memory or self._leaving or (
                now - self._memory_checked < _MEMORY_EVERY):
            return
        self._memory_checked = now
        own = {slot: allocator.own_memory(pid)
               for slot, pid in self.children.items()}
        if not own:
            return
        slot = max(own, key=own.get)
        if own[slot] <= self._reader_memory:
            return
        pid = self.children.pop(slot)
        LOG.info('State keeper %s retires reader %d (pid %d): %d MB of its '
                 'own', self.name, slot, pid, own[slot] // 2 ** 20)
        self.board.ask_to_retire(slot)
        self._leaving[pid] = now

    def _replace_stuck(self):
        for slot, pid in self.children.items():
            silent, _connections = self.board.read(slot)
            if silent > reader.Board.STUCK_SECONDS:
                LOG.warning('State keeper %s kills reader %d (pid %d): '
                            'silent for %.1f s', self.name, slot, pid,
                            silent)
                _kill(pid, signal.SIGKILL)

    def _stop_readers(self):
        for pid in list(self.children.values()) + list(self._leaving):
            _kill(pid, signal.SIGTERM)

    # -- workers --------------------------------------------------------

    def _answer_pings(self):
        """Each worker holds a connection to the keeper for as long as it
        runs (the keeper is needed while one does) and pings on it, or
        on one of its own, when it needs the keeper."""
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(sock,),
                             daemon=True).start()

    def _hold(self, sock):
        with sock:
            try:
                if wire.peer(sock)[1] != os.getuid():
                    return
                with self._workers_lock:
                    self._workers += 1
                incoming = wire.Incoming(sock)
                try:
                    while True:
                        incoming.value()
                        wire.send_answer(sock, True, os.getpid())
                finally:
                    with self._workers_lock:
                        self._workers -= 1
            except (EOFError, OSError):
                pass

    def _idle(self):
        now = time.monotonic()
        if self._workers or any(self.board.read(slot)[1]
                                for slot in self.children):
            self._busy_at = now
        return now - self._busy_at > self._idle_seconds


def _exited(pid):
    """Whether the child ``pid`` has exited (and is reaped now)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _kill(pid, number):
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def main(argv=None):
    # A uwsgi worker that starts this process ignores SIGTERM and SIGHUP,
    # and the exec kept that: what stops the server's process group (a
    # service manager's stop) must stop this process, and its readers.
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)
    allocator.return_large_buffers()
    conf = config_loader.load(
        sys.argv[1:] if argv is None else argv, cli_opts=CLI_OPTS,
        api=False)
    listener = listening(conf.socket_name)
    if listener is None:
        return 0
    if conf.metrics.enabled and metrics.samples_directory():
        # Its readers' catch-ups count with the workers' (the worker
        # that started it gave it the samples' directory).
        metrics.enable()
    db = engine.Database.from_conf(conf)
    # Its readers continue the traces of the questions they answer.
    tracing.init(conf, db, service='placement-state')
    LOG.info('State keeper %s reading the state', conf.socket_name)
    Keeper(conf, db, listener).run()
    listener.close()
    db.dispose()
    return 0


if __name__ == '__main__':
    sys.exit(main())
