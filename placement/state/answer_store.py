"""Kept answers in memory every process of a host maps: one store per
host and database, of a fixed size, whatever the worker count.

``kept_answers`` keeps answers that change seldom.  Kept by each worker,
they cost a host its budget once per worker (five workers at 100,000
providers: 145 MB), and a worker answered again what another already
kept.  Here they are records in a file on the host's shared-memory
filesystem, mapped by every worker of one service (``for_host``): a
page counts once however many map it, the host's memory for them is at
most ``SIZE``, and an answer one worker kept is found by all.  Anywhere
else (one process, the tests) the same store lives in an anonymous
mapping of its own (``private``).

The store knows bytes only: a key, and a record ``kept_answers`` makes
and checks (what it holds and the log position it is valid at).  Its
layout: a header, a table of slots (key hash, round, where the record
is, its length and CRC), and an arena the records are appended to.
When the arena is full, nothing more is kept for ``FULL_SECONDS``, then
a writer starts a new round: every slot of an earlier round is empty at
once, and the arena is written again from its start.  Keeping what fits
rather than the latest (as a ring would) still finds the answers kept
when more are asked in turn than fit; the new round drops the answers
that stale ones crowd out.

No process waits on another.  Readers take no lock: a record is copied,
then its CRC and the round are checked again, so that a record being
overwritten (a new round) or half written (a writer killed) is a miss.
Writers take a lock that is never waited for (``fcntl.lockf`` without
blocking, released by the kernel when its holder dies): a writer that
finds it taken does not keep its answer.  A writer stopped while it
holds it stops only the keeping of new answers.
"""

import atexit
import contextlib
import errno
import fcntl
import glob
import hashlib
import logging
import mmap
import os
import struct
import threading
import time
import weakref
import zlib

LOG = logging.getLogger(__name__)

# The host's bytes for kept answers, per service and database: a compute
# node's allocations of 20 servers are a record of about 3 KB, one of
# none or its usages, traits or aggregates about 150 bytes; so 10,000
# nodes of 20 servers nearly fit, and 100,000 nodes holding none with
# every read of theirs.
SIZE = 32 * 1024 * 1024
# How long the store stays full before a new round empties it.
FULL_SECONDS = 60.0
# A record larger than this is not kept: it would crowd out hundreds.
LARGEST = 1024 * 1024

_MAGIC = b'PLCANSW1'
_HEADER = struct.Struct('<8sQQQQd')    # magic, slots, arena, round, used,
_PAGE = 4096                           # when it was found full
_SLOT = struct.Struct('<QIIII')        # hash, round, offset, length, crc
_AVERAGE_RECORD = 160                  # bytes: one slot per this much arena
_PROBES = 8                            # slots a key may take
_DIGEST = 16                           # bytes of a key a record holds
DIRECTORY = '/dev/shm'
_PREFIX = 'placement-answers-%d-' % os.getuid()


class _Layout:
    """Where the slots and the arena of a store of ``size`` bytes are."""

    def __init__(self, size):
        self.slots = size // (_AVERAGE_RECORD + _SLOT.size)
        self.slots_at = _PAGE
        table = -(-self.slots * _SLOT.size // _PAGE) * _PAGE
        self.arena_at = _PAGE + table
        self.arena = size - self.arena_at


class Store:
    """One store of kept answers, over ``mapping`` (``fd`` is the file
    mapped, None for an anonymous mapping)."""

    def __init__(self, mapping, layout, fd=None, path=None):
        self._map = mapping
        self._layout = layout
        self._fd = fd
        self._path = path
        self._lock = threading.Lock()

    @property
    def shared(self):
        """Whether other processes map this store."""
        return self._fd is not None

    def get(self, key):
        """The record kept for ``key`` (bytes), or None."""
        digest = _digest(key)
        hashed = _hashed(digest)
        layout = self._layout
        current = self._round()
        for slot in self._probes(hashed):
            slot_hash, round_, offset, length, crc = _SLOT.unpack_from(
                self._map, layout.slots_at + slot * _SLOT.size)
            if slot_hash != hashed or round_ != current:
                continue
            if offset + length > layout.arena:
                return None     # a slot torn by a writer killed in it
            start = layout.arena_at + offset
            record = self._map[start:start + length]
            if self._round() != current or zlib.crc32(record) != crc:
                return None     # overwritten by a new round, or torn
            if record[:_DIGEST] == digest:
                return record[_DIGEST:]
        return None

    def put(self, key, record):
        """Keep ``record`` (bytes) for ``key`` (bytes), when it fits and
        no other writer is at work."""
        digest = _digest(key)
        data = digest + record
        if len(data) > min(LARGEST, self._layout.arena):
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._lock_writers():
                return
            try:
                self._write(_hashed(digest), data)
            finally:
                self._unlock_writers()
        finally:
            self._lock.release()

    def _write(self, hashed, data):
        layout = self._layout
        _, _, _, current, used, full_since = _HEADER.unpack_from(self._map)
        if used + len(data) > layout.arena:
            now = time.monotonic()
            if not full_since:
                self._set_header(current, used, now)
                return
            if now - full_since < FULL_SECONDS:
                return
            current, used = current + 1, 0
            self._set_header(current, used, 0.0)
        slot = self._free_slot(hashed, current)
        if slot is None:
            return
        start = layout.arena_at + used
        self._map[start:start + len(data)] = data
        self._set_header(current, used + len(data), 0.0)
        _SLOT.pack_into(self._map, layout.slots_at + slot * _SLOT.size,
                        hashed, current, used, len(data), zlib.crc32(data))

    def _free_slot(self, hashed, current):
        """The slot for ``hashed`` this round: its own, else an empty
        one, else None (the key's slots are all taken)."""
        empty = None
        for slot in self._probes(hashed):
            slot_hash, round_, _, _, _ = _SLOT.unpack_from(
                self._map, self._layout.slots_at + slot * _SLOT.size)
            if round_ != current:
                if empty is None:
                    empty = slot
            elif slot_hash == hashed:
                return slot
        return empty

    def _probes(self, hashed):
        slots = self._layout.slots
        return [(hashed + step) % slots for step in range(_PROBES)]

    def _round(self):
        return _HEADER.unpack_from(self._map)[3]

    def _set_header(self, round_, used, full_since):
        layout = self._layout
        _HEADER.pack_into(self._map, 0, _MAGIC, layout.slots, layout.arena,
                          round_, used, full_since)

    def used(self):
        """(records' bytes this round, the arena's bytes)."""
        header = _HEADER.unpack_from(self._map)
        return header[4], header[2]

    def _lock_writers(self):
        if self._fd is None:
            return True
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as error:
            if error.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise
        return True

    def _unlock_writers(self):
        if self._fd is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)

    def close(self):
        """Unmap the store; the last process to let a shared one go
        removes its file (its pages are memory until removed)."""
        self._map.close()
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass    # another process maps it still
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)
        finally:
            os.close(fd)


def _digest(key):
    """What a record holds of its key: a collision of two keys' 16-byte
    digests is not to be expected (1 in 2 ** 64 at 2 ** 32 keys)."""
    return hashlib.blake2b(key, digest_size=_DIGEST).digest()


def _hashed(digest):
    return int.from_bytes(digest[:8], 'little')


def private(size=SIZE):
    """A store of this process alone."""
    layout = _Layout(size)
    mapping = mmap.mmap(-1, size)
    _lay_out(mapping, layout)
    return Store(mapping, layout)


def _lay_out(mapping, layout):
    """Write a new store's header: round 1, nothing kept."""
    _HEADER.pack_into(mapping, 0, _MAGIC, layout.slots, layout.arena, 1, 0,
                      0.0)


def for_host(name, size=SIZE, directory=DIRECTORY):
    """The store every process of this host opening ``name`` maps (a
    file of ``directory``), or a private one where none can be: no
    shared-memory filesystem, or a file of another layout under the
    name."""
    path = os.path.join(directory, _PREFIX + name)
    try:
        remove_unused(directory, keep=path)
        fd = _opened(path, size)
    except OSError as error:
        LOG.warning('Each process keeps its own answers: no store of '
                    'kept answers at %s (%s)', path, error)
        return private(size)
    layout = _Layout(size)
    mapping = mmap.mmap(fd, size)
    header = _HEADER.unpack_from(mapping)
    if header[:3] != (_MAGIC, layout.slots, layout.arena):
        mapping.close()
        os.close(fd)
        LOG.warning('Each process keeps its own answers: %s has another '
                    'layout', path)
        return private(size)
    store = Store(mapping, layout, fd, path)
    atexit.register(_closed_at_exit, weakref.ref(store))
    return store


def _closed_at_exit(store):
    store = store()
    if store is not None and store.shared:
        store.close()


def _opened(path, size):
    """A descriptor of the store file at ``path``, held shared (so that
    ``remove_unused`` leaves it), made and laid out first when there is
    none: made under another name and linked into place whole, so that
    no process maps a file not yet laid out."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            pass
        else:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.fstat(fd).st_size == size:
                return fd
            os.close(fd)    # linked only once laid out: another layout
            raise OSError(errno.EINVAL, 'a store of another size')
        made = '%s.%d.new' % (path, os.getpid())
        fd = os.open(made, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            # Its pages taken now: a page of a full tmpfs first written
            # through a mapping would kill the writer (SIGBUS).
            os.posix_fallocate(fd, 0, size)
            layout = _Layout(size)
            with mmap.mmap(fd, size) as mapping:
                _lay_out(mapping, layout)
            try:
                os.link(made, path)
            except FileExistsError:
                os.close(fd)
                continue    # another process made it first: open theirs
            return fd
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(made)


def remove_unused(directory, keep=None):
    """Remove the stores of this user no process maps any more (of code
    or a configuration since changed, a database no longer served): a
    file of a shared-memory filesystem is memory until removed."""
    for path in glob.glob(os.path.join(directory, _PREFIX + '*')):
        if path == keep or path.endswith('.new'):
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass    # mapped by a live process
        else:
            os.unlink(path)
        finally:
            os.close(fd)
