"""Answers given once, kept until the change log says they moved.

Some reads are asked all day and change seldom: a project's usages
(``project_usages``), a provider's allocations
(``provider_allocations``), a provider's traits, aggregates and usages
(``provider_reads``), a short listing of providers (``listing``).  Each
answer is owned by the ids the change log names when a write moves it (a
project's, the providers'), or by ANY_PROVIDER: a write to any provider
moves it.

The answers are kept in a store of the host's (``answer_store``: one for
every worker of a service, of a fixed size), each with its owners and
the log position it was read at.  Each process follows the log
(``catch_up``), and remembers at which position it last saw each owner
move; a kept answer is given only when none of its owners moved after
the answer's position, and when the log, read at the request, still
stands where this process last read it: exactly what a fresh read would
answer at that moment, whoever wrote last.  A write the log cannot
describe (anything but this service's, a log pruned past the position,
another database), or a class or trait named anew, moves every owner:
no answer read before it is given again.

Every kind of answer (a ``Shelf``) shares its process's one position, so
that a write costs each process one reading of the log, whatever it
keeps.
"""

import pickle
import threading
import types
import typing
import weakref
import zlib

from placement.state import answer_store
from placement.state import catch_up
from placement.state import per_process

PROVIDER = 'provider'
PROJECT = 'project'
# The owner of an answer that a write to any provider may move: which
# providers an aggregate or a trait holds is no one provider's answer.
ANY_PROVIDER = ('any provider', None)

# Bytes of a pickled answer from which it is kept compressed.
COMPRESSED_FROM = 512

# Owners whose last move a process remembers at most; past it, the
# oldest half is forgotten, and no answer read before their moves is
# given again (about 150 bytes each).
OWNERS_REMEMBERED = 10000


def owners_moved(changed):
    """The owners (kind, id) a ``catch_up.Changed`` moves."""
    return ([(PROVIDER, id_) for id_ in changed.providers]
            + [(PROJECT, id_) for id_ in changed.projects]
            + ([ANY_PROVIDER] if changed.providers else []))


class Shelf(typing.NamedTuple):
    """One kind of answer kept: its name, part of each key; and, where an
    answer may be large, ``size(answer)``: its bytes at least, so that
    one too large to keep is not encoded to find out."""
    name: str
    size: typing.Optional[typing.Callable] = None


class KeptAnswers:
    """One process's view of the answers kept for one database."""

    def __init__(self, store):
        self._lock = threading.Lock()
        self._position = None       # changes.Position last read
        # The log total before which no answer is given (nothing says
        # what moved before it), and each owner's last move seen after.
        self._floor = None
        self._moved_at = {}         # owner: log total, oldest first
        self.store = store

    def answer(self, db, shelf, key, read):
        """The answer for ``key`` on ``shelf``: kept, or ``read()``'s,
        which is (its owners, or None for an answer not to keep; the
        answer).  ``read`` runs after the log's position was read, so
        that what it reads is never older than the position the answer
        is kept at."""
        with self._lock:
            position = self._position
        if not catch_up.unchanged(db, position):
            position = db.read(self._catch_up)
        stamp = position.summary()
        name = _key(shelf, key) if isinstance(stamp, tuple) else None
        if name is not None:
            found = self._kept(name, stamp)
            if found is not None:
                return found
        owners, answer = read()
        if owners is not None and name is not None and (
                shelf.size is None
                or shelf.size(answer) < answer_store.LARGEST):
            self.store.put(name, _record((stamp, tuple(owners), answer)))
        return answer

    def holds(self, shelf, key):
        """Whether an answer for ``key`` is kept and still given, as of
        the position this process last read (the tests look)."""
        with self._lock:
            position = self._position
        stamp = None if position is None else position.summary()
        return isinstance(stamp, tuple) and self._kept(
            _key(shelf, key), stamp) is not None

    def _kept(self, name, stamp):
        """The answer kept under ``name`` if it is exact at ``stamp``
        (``Position.summary``, this process's latest), or None."""
        record = self.store.get(name)
        if record is None:
            return None
        (read_at, owners, answer) = _value(record)
        if read_at[1] != stamp[1] or read_at[0] > stamp[0]:
            return None     # another database, or read past this process
        with self._lock:
            if self._floor is None or read_at[0] < self._floor:
                return None
            moved_at = self._moved_at
            for owner in owners:
                if moved_at.get(owner, -1) > read_at[0]:
                    return None
        return answer

    def _catch_up(self, conn):
        """Note what moved since this process's position and stand where
        the log does now (returned).

        Another thread may have moved the position meanwhile: noting
        what changed since an earlier position notes more than needed,
        never less, and the position never goes back.
        """
        with self._lock:
            before = self._position
        changed, current = catch_up.since(conn, before)
        with self._lock:
            now = self._position
            if now is not before:
                if now.epoch != current.epoch:
                    changed = catch_up.UNKNOWN  # another database
                elif now.total >= current.total:
                    return current  # another thread got further
            self._note(changed, current.total)
            self._position = current
        return current

    def _note(self, changed, total):
        """Note that what ``changed`` touches moved by ``total``: every
        owner when the log cannot say or a class or trait was named anew
        (answers show names); called with the lock held."""
        if changed.unknown or changed.names:
            self._floor = total
            self._moved_at.clear()
            return
        moved_at = self._moved_at
        for owner in owners_moved(changed):
            moved_at.pop(owner, None)
            moved_at[owner] = total
        if len(moved_at) > OWNERS_REMEMBERED:
            forgotten = list(moved_at)[:len(moved_at) // 2]
            self._floor = moved_at[forgotten[-1]]
            for owner in forgotten:
                del moved_at[owner]


def _record(value):
    """``value`` as the store keeps it: pickled, and compressed from
    COMPRESSED_FROM bytes (a compute node's allocations of 20 servers,
    2.5 KB, take 0.7: nearly four times the answers fit; 7 us more to
    give one)."""
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    if len(data) < COMPRESSED_FROM:
        return b'p' + data
    return b'z' + zlib.compress(data, 1)


def _value(record):
    data = memoryview(record)[1:]
    if record[:1] == b'z':
        data = zlib.decompress(data)
    return pickle.loads(data)


def _key(shelf, key):
    """``key`` of ``shelf`` as bytes every process makes alike."""
    return ('%s\0%s' % (shelf.name, _text(key))).encode()


def _text(value):
    """``value`` (plain values, tuples, sets, module-level functions) as
    text independent of the process: no addresses, sets sorted."""
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool:
        return repr(value)
    if kind is types.FunctionType:
        return _function_names.get(value) or _function_name(value)
    if isinstance(value, (tuple, list)):
        return '%s(%s)' % (kind.__name__, ','.join(map(_text, value)))
    if isinstance(value, (frozenset, set)):
        return '{%s}' % ','.join(sorted(map(_text, value)))
    if isinstance(value, (float, bytes)):
        return repr(value)
    raise TypeError('%r cannot be part of a kept answer\'s key' % (value,))


_function_names = {}


def _function_name(function):
    if '<locals>' in function.__qualname__:
        raise TypeError('%r cannot be part of a kept answer\'s key'
                        % (function,))
    name = _function_names[function] = '%s.%s' % (function.__module__,
                                                  function.__qualname__)
    return name


_hosts = weakref.WeakKeyDictionary()


def keep_on_host(db, name):
    """Have every process that serves ``db`` with this ``name`` keep its
    answers in one store of the host (``answer_store.for_host``); called
    where a server runs several workers of one service."""
    _hosts[db] = name


def _kept_answers(db):
    name = _hosts.get(db)
    return KeptAnswers(answer_store.private() if name is None
                       else answer_store.for_host(name))


_kept = per_process.PerDatabase(_kept_answers)


def of(db):
    """This process's KeptAnswers of the database ``db`` serves."""
    return _kept.of(db)


def answer(db, shelf, key, read):
    """``KeptAnswers.answer`` of this process's answers of ``db``."""
    return _kept.of(db).answer(db, shelf, key, read)
