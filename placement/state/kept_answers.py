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


# What keeping an answer costs besides the answer's own bytes (its
# ``Shelf.size``), as tracemalloc measures it on CPython 3.11: its key,
# its place in the order of use, its first owner's entry in the index of
# owners; and each further owner's entry (a tree's listing has one per
# provider).  Counted toward a shelf's budget with the answer, so that a
# budget bounds the memory the answers take: an empty allocations answer
# kept costs 500 bytes, not the 50 of its body
# (tests/unit/test_kept_answers_cost.py).
ENTRY_BYTES = 500
OWNER_BYTES = 250


class Shelf:
    """One kind of answer a process keeps: at most ``keep`` of them (the
    least recently used go first) and, when ``size`` is given, at most
    ``budget`` bytes in all (``cost``): a new answer that would go past
    it is not kept (under a round-robin of more owners than fit, evicting
    would keep none that is asked again)."""

    def __init__(self, name, keep, size=None, budget=None):
        self.name = name
        self.keep = keep
        self.size = size
        self.budget = budget

    def __repr__(self):
        return 'Shelf(%r)' % self.name

    def cost(self, answer, owners):
        """The bytes keeping ``answer`` for ``owners`` takes (0 on a
        shelf without a budget)."""
        if self.size is None:
            return 0
        return (self.size(answer) + ENTRY_BYTES
                + OWNER_BYTES * max(0, len(owners) - 1))


class Held:
    """What one process holds of one Shelf for one database."""

    def __init__(self, shelf):
        self.shelf = shelf
        # key: (owners, answer), the least recently used first (a plain
        # dict: an OrderedDict's links cost each answer 100 bytes more).
        self.answers = {}
        self.bytes = 0

    def remember(self, key, owners, answer, keys_of):
        self.forget(key, keys_of)
        shelf = self.shelf
        size = shelf.cost(answer, owners)
        if shelf.budget is not None and self.bytes + size > shelf.budget:
            return
        self.answers[key] = (owners, answer)
        for owner in owners:
            _index(keys_of, owner, (self, key))
        self.bytes += size
        while len(self.answers) > shelf.keep:
            self.forget(next(iter(self.answers)), keys_of)

    def used(self, key):
        """The kept (owners, answer) of ``key``, now the most recently
        used, or None."""
        kept = self.answers.pop(key, None)
        if kept is not None:
            self.answers[key] = kept
        return kept

    def forget(self, key, keys_of):
        kept = self.answers.pop(key, None)
        if kept is None:
            return
        owners, answer = kept
        self.bytes -= self.shelf.cost(answer, owners)
        for owner in owners:
            _unindex(keys_of, owner, (self, key))

    def clear(self):
        self.answers.clear()
        self.bytes = 0


# The index of owners (``KeptAnswers._keys_of``) maps an owner to the one
# (Held, key) it owns, or to a set of them: most own one answer per
# shelf, and a set of one cost each answer 216 bytes more.

def _index(keys_of, owner, entry):
    found = keys_of.get(owner)
    if found is None:
        keys_of[owner] = entry
    elif isinstance(found, set):
        found.add(entry)
    elif found != entry:
        keys_of[owner] = {found, entry}


def _unindex(keys_of, owner, entry):
    found = keys_of.get(owner)
    if isinstance(found, set):
        found.discard(entry)
        if not found:
            del keys_of[owner]
    elif found == entry:
        del keys_of[owner]


def _owned(keys_of, owner):
    """The (Held, key) entries ``owner`` owns, as a list."""
    found = keys_of.get(owner)
    if found is None:
        return []
    return list(found) if isinstance(found, set) else [found]


class KeptAnswers:
    """One process's answers for one database, on every shelf."""

    def __init__(self):
        self._lock = threading.Lock()
        self._position = None       # changes.Position the answers are at
        self._held = {}             # Shelf: Held
        self._keys_of = {}          # owner: (Held, key), or a set of them

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
        return held.used(key) if held is not None else None

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
            for held, key in _owned(self._keys_of, owner):
                held.forget(key, self._keys_of)


_kept = per_process.PerDatabase(lambda _db: KeptAnswers())


def of(db):
    """This process's KeptAnswers of the database ``db`` serves."""
    return _kept.of(db)


def answer(db, shelf, key, read):
    """``KeptAnswers.answer`` of this process's answers of ``db``."""
    return _kept.of(db).answer(db, shelf, key, read)
