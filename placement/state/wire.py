"""What crosses the local sockets between a host's workers and its state
processes (``shared``, ``reader``, ``cmd.state_process``).

A request is one pickled value: ``('ask', question name, args,
wait)``, ``('ping',)`` or ``('retire',)``.  A state process answers in frames of
one byte each, then, for an answer, the pickled ``(ok, value)``:

- ``STARTED``: it has begun on the question (a reader busy with another
  says ``BUSY`` instead, at once, and the worker asks another, unless
  it asked to ``wait``: then the reader takes it next);
- ``BEAT``: it is still working on it, every ``BEAT_SECONDS``: a worker
  that hears nothing for ``SILENT_SECONDS`` takes the process for stuck
  (stopped, or dead without closing) and asks another;
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

STARTED = b'S'
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


def receive(sock):
    """The next value sent on ``sock``; EOFError once it is closed."""
    length, count = _HEADER.unpack(exactly(sock, _HEADER.size))
    data = exactly(sock, length)
    buffers = []
    for _ in range(count):
        (size,) = _LENGTH.unpack(exactly(sock, _LENGTH.size))
        buffers.append(exactly(sock, size))
    return pickle.loads(data, buffers=buffers)


def exactly(sock, size):
    """``size`` bytes from ``sock`` (a view); EOFError if it closes
    first."""
    view = memoryview(bytearray(size))
    got = 0
    while got < size:
        count = sock.recv_into(view[got:])
        if not count:
            raise EOFError('the state process closed the connection')
        got += count
    return view


def round_trip(value):
    """``value`` as the other side of a socket would read it: what the
    tests put every answer through (``questions.CROSS_THE_WIRE``)."""
    data, buffers = dumps(value)
    return pickle.loads(data, buffers=[bytes(raw) for raw in buffers])
