"""A host's state readers: the processes that answer its workers'
questions to the state (``shared``), forked by the keeper
(``cmd.state_process``) once it has read the state, so that they share
its pages as placement-api's workers share their parent's.

Each reader owns a slot: the abstract socket ``<name>-<slot>``, bound by
the keeper before the fork, so that a slot has one reader at most.  It
answers one question at a time (its work is the search, under the GIL),
and tells a worker that finds it busy so at once (``wire.BUSY``): the
worker asks another reader, and a host's searches run in as many
processes as it has readers; a worker that found them all busy asks its
own to take its question next, and waits for it as long as it beats.  While it works it beats, on the
connection it answers (``wire.BEAT``) and on the ``Board`` the keeper
reads: a reader stopped or stuck is noticed within a second by the
worker and within ``Board.STUCK_SECONDS`` by the keeper, which kills it
and forks another from its own state.

A reader the keeper asks to retire (it has copied more than its share
of the keeper's pages: answering about providers all over the cloud
touches them) lets its slot go at once, to a fresh fork, finishes the
answer under way and exits.  One left behind by a keeper that died goes
on answering until a new keeper asks it to retire, or until no worker
has been connected for ``idle_seconds``; a reader that finds its keeper
gone starts another.
"""

import logging
import mmap
import os
import socket
import struct
import sys
import threading
import time

from placement import tracing
from placement.state import questions
from placement.state import shared
from placement.state import snapshot
from placement.state import wire

LOG = logging.getLogger(__name__)

# How long an orphaned reader waits for the keeper it started before it
# starts another.
_RELAUNCH_SECONDS = 10


class Board:
    """What the keeper and its readers tell each other, in memory they
    share (an anonymous shared mapping made before the forks): per slot,
    when the reader last beat, how many workers it has connected, and
    whether the keeper asked it to retire."""

    _SLOT = struct.Struct('dqq')
    STUCK_SECONDS = 2.0

    def __init__(self, slots):
        self.slots = slots
        self._map = mmap.mmap(-1, self._SLOT.size * slots)

    def start(self, slot):
        """A new reader's slot: beaten now, not asked to retire."""
        self._SLOT.pack_into(self._map, slot * self._SLOT.size,
                             time.monotonic(), 0, 0)

    def beat(self, slot, connections):
        """The reader's beat; whether it is asked to retire."""
        offset = slot * self._SLOT.size
        retire = self._SLOT.unpack_from(self._map, offset)[2]
        self._SLOT.pack_into(self._map, offset, time.monotonic(),
                             connections, retire)
        return bool(retire)

    def ask_to_retire(self, slot):
        beat, connections, _ = self._SLOT.unpack_from(
            self._map, slot * self._SLOT.size)
        self._SLOT.pack_into(self._map, slot * self._SLOT.size, beat,
                             connections, 1)

    def read(self, slot):
        """(seconds since the reader last beat, connections)."""
        beat, connections, _ = self._SLOT.unpack_from(
            self._map, slot * self._SLOT.size)
        return time.monotonic() - beat, connections


class Reader:
    """One reader, in the process the keeper forked for it."""

    def __init__(self, db, listener, keeper_name, slot, board,
                 idle_seconds):
        self.db = db
        self.slot = slot
        self._listener = listener
        self._board = board
        self._idle_seconds = idle_seconds
        self._keeper = os.getppid()
        self._work = threading.Lock()
        self._lock = threading.Lock()   # the two below
        self._connections = 0
        self._answering = {}    # socket -> its send lock
        self._idle_since = time.monotonic()
        self._retiring = False
        self._keeper_name = keeper_name
        self._relaunched_at = -_RELAUNCH_SECONDS

    def run(self):
        """Answer until retired, too big, or left idle by a dead keeper;
        then exit the process."""
        threading.Thread(target=self._beating, daemon=True).start()
        self._listener.settimeout(0.2)
        while not self._retiring and not self._orphaned_and_idle():
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            sock.settimeout(None)
            threading.Thread(target=self._serve, args=(sock,),
                             daemon=True).start()
        # The slot's name goes with the listener: the keeper may give it
        # to another reader while this one finishes its answer.
        self._listener.close()
        with self._work:
            pass
        self.db.dispose()
        os._exit(0)

    def _orphaned_and_idle(self):
        with self._lock:
            idle = not self._connections and (
                time.monotonic() - self._idle_since > self._idle_seconds)
        return idle and os.getppid() != self._keeper

    def _beating(self):
        while True:
            with self._lock:
                connections = self._connections
                answering = list(self._answering.items())
            if self._board.beat(self.slot, connections):
                self._retiring = True
            self._keeper_gone()
            for sock, send_lock in answering:
                try:
                    with send_lock:
                        sock.sendall(wire.BEAT)
                except OSError:
                    pass
            time.sleep(wire.BEAT_SECONDS)

    def _keeper_gone(self):
        """Start a keeper when this reader's has died (killed: one that
        exits stops its readers first) and none took its place, at most
        every ``_RELAUNCH_SECONDS``; the new keeper reads the state and
        then takes the slots back, while this reader goes on answering."""
        if os.getppid() == self._keeper or self._retiring:
            return
        now = time.monotonic()
        if now - self._relaunched_at < _RELAUNCH_SECONDS:
            return
        self._relaunched_at = now
        if _listening(self._keeper_name):
            return
        LOG.warning('State reader %d: its keeper is gone; starting '
                    'another', self.slot)
        shared.launch(sys.executable, 'placement.cmd.state_process',
                      sys.argv[1:])

    def _serve(self, sock):
        with self._lock:
            self._connections += 1
        send_lock = threading.Lock()
        incoming = wire.Incoming(sock)
        try:
            if wire.peer(sock)[1] != os.getuid():
                LOG.warning('Refused a connection from another user')
                return
            while True:
                message = incoming.value()
                if message[0] == 'ask':
                    self._ask(sock, send_lock, *message[1:])
                elif message[0] == 'retire':
                    self._retiring = True
                    with send_lock:
                        wire.send_answer(sock, True, None)
                else:
                    with send_lock:
                        wire.send_answer(sock, True, os.getpid())
        except (EOFError, OSError):
            pass
        finally:
            sock.close()
            with self._lock:
                self._connections -= 1
                self._idle_since = time.monotonic()

    def _ask(self, sock, send_lock, name, args, wait, trace):
        """Answer the question ``name``.  Busy with another, say so at
        once; or, when the worker found every reader busy (``wait``),
        take it next, beating while it waits: a worker waits for a
        reader that works, never for one that is stuck."""
        if wait:
            self._beat_on(sock, send_lock)
            self._work.acquire()
        elif self._retiring or not self._work.acquire(blocking=False):
            with send_lock:
                sock.sendall(wire.BUSY)
            return
        try:
            self._beat_on(sock, send_lock)
            try:
                with tracing.continued(trace):
                    ok, value = True, snapshot.answer_here(
                        self.db, questions.lookup(name), args)
            except Exception as error:  # noqa: BLE001 - raised in the worker
                ok, value = False, error
            finally:
                with self._lock:
                    del self._answering[sock]
            # Sent before the next question starts, and before an exit.
            with send_lock:
                wire.send_answer(sock, ok, value)
        finally:
            self._work.release()

    def _beat_on(self, sock, send_lock):
        """Beat (``wire.BEAT``) on ``sock`` until the answer is sent."""
        with self._lock:
            self._answering[sock] = send_lock



def _listening(name):
    """Whether a process listens on the abstract socket ``name``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(wire.address(name))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        return True
