"""Answers a process gave, kept until the change log says they moved.

Some reads are asked all day and change seldom: a project's usages
(``project_usages``), a provider's allocations (``provider_allocations``).
Each answer is owned by an id the change log names when a write moves it
(a project's, a provider's).  A process keeps the answers it gave, per
database, all valid at one log position, and drops an answer the moment
the log (``catch_up``) shows a write to its owner; a write the log cannot
describe (anything but this service's, a log pruned past the position,
another database) or a class or trait named anew drops every answer.

An answer is given from memory only when the log, read at the request,
still stands at the answers' position: exactly what a fresh read would
answer at that moment, whoever wrote last.
"""

import collections
import threading

from placement.state import catch_up


class KeptAnswers:
    """One process's answers for one database.

    ``owners_moved(changed)``: the owner ids whose answers a
    ``catch_up.Changed`` drops.  At most ``keep`` answers (the least
    recently used go first), and, when ``size`` is given, at most
    ``budget`` of ``size(answer)`` in all: a new answer that would go past
    it is not kept (under a round-robin of more owners than fit, evicting
    would keep none that is asked again)."""

    def __init__(self, owners_moved, keep, size=None, budget=None):
        self._owners_moved = owners_moved
        self._keep_at_most = keep
        self._size = size
        self._budget = budget
        self._held = 0
        self._lock = threading.Lock()
        self._position = None       # changes.Position the answers are at
        self._answers = collections.OrderedDict()  # key: (owner, answer)
        self._keys_of = collections.defaultdict(set)    # owner: keys

    def answer(self, db, key, read):
        """The answer for ``key``: kept, or ``read(conn)``'s, which is
        (its owner's id, or None for an answer not to keep; the
        answer)."""
        with self._lock:
            position = self._position
        if catch_up.unchanged(db, position):
            with self._lock:
                found = self._found(position.summary(), key)
            if found is not None:
                return found
        return db.read(self._read, key, read)

    def _found(self, summary, key):
        """The kept answer for ``key`` if the answers are at ``summary``
        (``Position.summary``); called with the lock held."""
        if self._position is None or self._position.summary() != summary:
            return None
        kept = self._answers.get(key)
        if kept is None:
            return None
        self._answers.move_to_end(key)
        return kept[1]

    def _read(self, conn, key, read):
        with self._lock:
            before = self._position
        changed, current = catch_up.since(conn, before)
        self._apply(before, changed, current)
        with self._lock:
            found = self._found(current.summary(), key)
        if found is not None:
            return found
        owner, answer = read(conn)
        if owner is not None:
            with self._lock:
                if self._position.summary() == current.summary():
                    self._remember(key, owner, answer)
        return answer

    def _apply(self, before, changed, current):
        """Drop the answers ``changed`` (since the position ``before``)
        touches, and stand at ``current``.

        Another thread may have moved the position meanwhile: dropping
        what changed since an earlier position drops more than needed,
        never less, and the position never goes back.
        """
        with self._lock:
            now = self._position
            if now is not before:
                if now.epoch != current.epoch:
                    changed = catch_up.UNKNOWN  # another database
                elif now.total >= current.total:
                    return      # another thread got further: its drops hold
            self._drop(changed)
            self._position = current

    def _drop(self, changed):
        """Drop what ``changed`` touches: every answer when the log
        cannot say or a class or trait was named anew (answers show
        names), else those of the owners it moved."""
        if changed.unknown or changed.names:
            self._answers.clear()
            self._keys_of.clear()
            self._held = 0
            return
        for owner in self._owners_moved(changed):
            for key in list(self._keys_of.get(owner, ())):
                self._forget(key)

    def _remember(self, key, owner, answer):
        self._forget(key)
        size = self._size(answer) if self._size else 0
        if self._budget is not None and self._held + size > self._budget:
            return
        self._answers[key] = (owner, answer)
        self._keys_of[owner].add(key)
        self._held += size
        while len(self._answers) > self._keep_at_most:
            self._forget(next(iter(self._answers)))

    def _forget(self, key):
        kept = self._answers.pop(key, None)
        if kept is None:
            return
        owner, answer = kept
        if self._size:
            self._held -= self._size(answer)
        keys = self._keys_of[owner]
        keys.discard(key)
        if not keys:
            del self._keys_of[owner]
