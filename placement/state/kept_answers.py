"""Answers a process gave, kept until the change log says they moved.

Some reads are asked all day and change seldom: a project's usages
(``project_usages``), a provider's allocations
(``provider_allocations``), a provider's traits, aggregates and usages
(``provider_reads``), a short listing of providers (``listing``).  Each
answer is owned by the ids the change log names when a write moves it (a
project's, the providers'), or by ANY_PROVIDER: a write to any provider
moves it.  A process keeps the answers it gave, per database, all
valid at one log position, and drops an answer the moment the log
(``catch_up``) shows a write to one of its owners; a write the log cannot
describe (anything but this service's, a log pruned past the position,
another database) or a class or trait named anew drops every answer.

Every kind of answer (a ``Shelf``: its own keys, count and byte limits)
shares its process's one position, so that a write costs each process one
reading of the log, whatever it keeps.

An answer is given from memory only when the log, read at the request,
still stands at the answers' position: exactly what a fresh read would
answer at that moment, whoever wrote last.
"""

import collections
import threading

from placement.state import catch_up
from placement.state import per_process

PROVIDER = 'provider'
PROJECT = 'project'
# The owner of an answer that a write to any provider may move: which
# providers an aggregate or a trait holds is no one provider's answer.
ANY_PROVIDER = ('any provider', None)


def owners_moved(changed):
    """The owners (kind, id) a ``catch_up.Changed`` moves."""
    return ([(PROVIDER, id_) for id_ in changed.providers]
            + [(PROJECT, id_) for id_ in changed.projects]
            + ([ANY_PROVIDER] if changed.providers else []))


class Shelf:
    """One kind of answer a process keeps: at most ``keep`` of them (the
    least recently used go first) and, when ``size`` is given, at most
    ``budget`` of ``size(answer)`` in all: a new answer that would go past
    it is not kept (under a round-robin of more owners than fit, evicting
    would keep none that is asked again)."""

    def __init__(self, name, keep, size=None, budget=None):
        self.name = name
        self.keep = keep
        self.size = size
        self.budget = budget

    def __repr__(self):
        return 'Shelf(%r)' % self.name


class Held:
    """What one process holds of one Shelf for one database."""

    def __init__(self, shelf):
        self.shelf = shelf
        self.answers = collections.OrderedDict()   # key: (owners, answer)
        self.bytes = 0

    def remember(self, key, owners, answer, keys_of):
        self.forget(key, keys_of)
        shelf = self.shelf
        size = shelf.size(answer) if shelf.size else 0
        if shelf.budget is not None and self.bytes + size > shelf.budget:
            return
        self.answers[key] = (owners, answer)
        for owner in owners:
            keys_of[owner].add((self, key))
        self.bytes += size
        while len(self.answers) > shelf.keep:
            self.forget(next(iter(self.answers)), keys_of)

    def forget(self, key, keys_of):
        kept = self.answers.pop(key, None)
        if kept is None:
            return
        owners, answer = kept
        if self.shelf.size:
            self.bytes -= self.shelf.size(answer)
        for owner in owners:
            keys = keys_of[owner]
            keys.discard((self, key))
            if not keys:
                del keys_of[owner]

    def clear(self):
        self.answers.clear()
        self.bytes = 0


class KeptAnswers:
    """One process's answers for one database, on every shelf."""

    def __init__(self):
        self._lock = threading.Lock()
        self._position = None       # changes.Position the answers are at
        self._held = {}             # Shelf: Held
        self._keys_of = collections.defaultdict(set)  # owner: (Held, key)

    def held(self, shelf):
        """What this process holds of ``shelf`` (the tests look)."""
        with self._lock:
            return self._holding(shelf)

    def _holding(self, shelf):
        held = self._held.get(shelf)
        if held is None:
            held = self._held[shelf] = Held(shelf)
        return held

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
        with self._lock:
            found = self._found(position.summary(), shelf, key)
        if found is not None:
            return found[1]
        owners, answer = read()
        if owners is not None:
            with self._lock:
                if self._position.summary() == position.summary():
                    self._holding(shelf).remember(key, tuple(owners),
                                                  answer, self._keys_of)
        return answer

    def _found(self, summary, shelf, key):
        """The kept (owners, answer) for ``key`` if the answers are at
        ``summary`` (``Position.summary``); called with the lock held."""
        if self._position is None or self._position.summary() != summary:
            return None
        held = self._held.get(shelf)
        kept = held.answers.get(key) if held is not None else None
        if kept is not None:
            held.answers.move_to_end(key)
        return kept

    def _catch_up(self, conn):
        """Drop what changed since the answers' position and stand where
        the log does now (returned).

        Another thread may have moved the position meanwhile: dropping
        what changed since an earlier position drops more than needed,
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
            self._drop(changed)
            self._position = current
        return current

    def _drop(self, changed):
        """Drop what ``changed`` touches: every answer when the log
        cannot say or a class or trait was named anew (answers show
        names), else those of the owners it moved."""
        if changed.unknown or changed.names:
            for held in self._held.values():
                held.clear()
            self._keys_of.clear()
            return
        for owner in owners_moved(changed):
            for held, key in list(self._keys_of.get(owner, ())):
                held.forget(key, self._keys_of)


_kept = per_process.PerDatabase(lambda _db: KeptAnswers())


def of(db):
    """This process's KeptAnswers of the database ``db`` serves."""
    return _kept.of(db)


def answer(db, shelf, key, read):
    """``KeptAnswers.answer`` of this process's answers of ``db``."""
    return _kept.of(db).answer(db, shelf, key, read)
