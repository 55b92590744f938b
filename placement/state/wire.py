"""What crosses the local sockets between a host's workers and its state
processes (``shared``, ``reader``, ``cmd.state_process``).

A request is one pickled value: ``('ask', question name, args, wait,
trace)``, ``('ping',)`` or ``('retire',)``.  A state process answers in
frames of one byte each, then, for an answer, the pickled ``(ok,
value)``:

- ``BUSY``: a reader busy with another question says so at once, and
  the worker asks another, unless it asked to ``wait``: then the reader
  takes it next;
- ``BEAT``: it is working on the question, every ``BEAT_SECONDS`` (a
  usual answer comes before the first): a worker that hears nothing for
  ``SILENT_SECONDS`` takes the process for stuck (stopped, or dead
  without closing) and asks another;
- ``ANSWER``: the pickled ``(True, result)`` or ``(False, exception)``.

A pickle is its length and the number of out-of-band buffers, the pickle
itself, then each buffer (its length, its bytes): the JSON pieces of a
large answer (views of encoded batches, megabytes each in a listing of
every provider) are sent as they are, never copied into the pickle.

Each side checks that the other runs as the same user (``SO_PEERCRED``)
before it reads a pickle: an abstract socket name has no permissions.
"""

import copyreg
import io
import pickle
import socket
import struct

_LENGTH = struct.Struct('!Q')
_HEADER = struct.Struct('!QQ')
_PEER = struct.Struct('3i')

BEAT = b'B'
BUSY = b'N'
ANSWER = b'A'

BEAT_SECONDS = 0.1
SILENT_SECONDS = 0.4


def address(name):
    """The abstract Unix socket address of ``name``."""
    return '\0' + name


def slot_name(name, slot):
    """The socket name of reader ``slot`` of the keeper ``name``."""
    return '%s-%d' % (name, slot)


def peer(sock):
    """(pid, uid) of the process at the other end of ``sock``."""
    pid, uid, _gid = _PEER.unpack(sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER.size))
    return pid, uid


def _out_of_band(view):
    return memoryview, (pickle.PickleBuffer(view),)


_DISPATCH = dict(copyreg.dispatch_table)
_DISPATCH[memoryview] = _out_of_band


def dumps(value):
    """(the pickle of ``value``, its out-of-band buffers as raw views)."""
    buffer = io.BytesIO()
    buffers = []
    pickler = pickle.Pickler(buffer, protocol=5,
                             buffer_callback=buffers.append)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(value)
    return buffer.getbuffer(), [out_of_band.raw() for out_of_band in buffers]


def send(sock, value):
    """Send ``value`` pickled, its buffers after it."""
    data, buffers = dumps(value)
    sock.sendall(_HEADER.pack(data.nbytes, len(buffers)) + data)
    for raw in buffers:
        sock.sendall(_LENGTH.pack(raw.nbytes))
        sock.sendall(raw)


def send_answer(sock, ok, value):
    """Send the ANSWER frame of ``(ok, value)``; an answer that cannot
    be pickled is sent as the error saying so (nothing is sent before
    the pickle is whole)."""
    try:
        data, buffers = dumps((ok, value))
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        data, buffers = dumps((False, Unanswerable(
            'the answer could not be sent: %s' % error)))
    sock.sendall(ANSWER + _HEADER.pack(data.nbytes, len(buffers)) + data)
    for raw in buffers:
        sock.sendall(_LENGTH.pack(raw.nbytes))
        sock.sendall(raw)


class Unanswerable(Exception):
    """What a state process says of an answer it could not send."""


class Incoming:
    """What a socket sends, read in as few calls as it comes: a small
    answer (its frame, header and pickle) is one ``recv``; a large
    buffer is read straight into its own memory, never copied."""

    _CHUNK = 65536

    def __init__(self, sock):
        self.sock = sock
        self._buffer = b''
        self._at = 0

    def frame(self):
        """The next frame's byte."""
        return bytes(self._take(1))

    def value(self):
        """The next pickled value; EOFError once the socket is closed."""
        length, count = _HEADER.unpack(self._take(_HEADER.size))
        data = self._take(length)
        buffers = []
        for _ in range(count):
            (size,) = _LENGTH.unpack(self._take(_LENGTH.size))
            buffers.append(self._take(size))
        return pickle.loads(data, buffers=buffers)

    def _take(self, size):
        available = len(self._buffer) - self._at
        if available >= size:
            start = self._at
            self._at += size
            return memoryview(self._buffer)[start:self._at]
        if size - available < self._CHUNK:
            # Small: read more, as much as has come.
            kept = self._buffer[self._at:]
            while len(kept) < size:
                chunk = self.sock.recv(self._CHUNK)
                if not chunk:
                    raise EOFError('the state process closed the '
                                   'connection')
                kept += chunk
            self._buffer, self._at = kept, size
            return memoryview(kept)[:size]
        # Large: into memory of its own.
        whole = memoryview(bytearray(size))
        whole[:available] = memoryview(self._buffer)[self._at:]
        self._buffer, self._at = b'', 0
        got = available
        while got < size:
            count = self.sock.recv_into(whole[got:])
            if not count:
                raise EOFError('the state process closed the connection')
            got += count
        return whole


def round_trip(value):
    """``value`` as the other side of a socket would read it: what the
    tests put every answer through (``questions.CROSS_THE_WIRE``)."""
    data, buffers = dumps(value)
    return pickle.loads(data, buffers=[bytes(raw) for raw in buffers])
