"""A project's usages kept in memory, exact.

Conductors and the API ask ``GET /usages?project_id=`` all day.  The
answer sums every allocation of the project's consumers: thousands of
index probes for a large project, and most of the database's work in
``benchmarks/traffic.py`` at 10,000 compute nodes.  It changes only when
one of those consumers' allocations, project, user or type does.

So each process keeps the answers it gave, per database, and drops a
project's the moment the change log (``catch_up``) shows a write that
moved its usage.  This service's writes log the projects they change
(``changes.projects_changed``).  Anything else's write to allocations,
consumers, projects, users or consumer types is logged as EVERYTHING
(migrations 0004 and 0008), and so is a renamed resource class (NAMES);
either drops every answer.

All kept answers are valid at one log position.  One is given only when
the log, read at the request, still stands there: exactly what a fresh
read would answer at that moment, whoever wrote last.  A project nobody
has allocated for yet is not kept (its answer costs one index probe).
"""

import collections
import threading

from placement.state import catch_up
from placement.state import per_process
from placement.storage import usages

# Answers kept per process and database, the least recently used dropped
# first: a few hundred bytes each.
KEEP = 4096


class _Kept:
    """One process's answers for one database."""

    def __init__(self, _db):
        self._lock = threading.Lock()
        self._position = None       # changes.Position the answers are at
        self._answers = collections.OrderedDict()  # key: (project, answer)
        self._keys_of = collections.defaultdict(set)    # project: keys

    def answer(self, db, read, project_id, *rest):
        """``read(conn, project_id, *rest)``, given from memory while the
        project's usage has not moved."""
        key = (read, project_id, *rest)
        with self._lock:
            position = self._position
        if catch_up.unchanged(db, position):
            with self._lock:
                found = self._found(position.summary(), key)
            if found is not None:
                return found
        return db.read(self._read, key)

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

    def _read(self, conn, key):
        with self._lock:
            before = self._position
        changed, current = catch_up.since(conn, before)
        self._apply(before, changed, current)
        with self._lock:
            found = self._found(current.summary(), key)
        if found is not None:
            return found
        read, project_id, *rest = key
        project = usages.project_id(conn, project_id)
        answer = read(conn, project_id, *rest)
        if project is not None:
            with self._lock:
                if self._position.summary() == current.summary():
                    self._keep(key, project, answer)
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
        cannot say (any change by anything else) or a class or trait was
        named anew (answers show class names), else those of the projects
        whose usage moved."""
        if changed.unknown or changed.names:
            self._answers.clear()
            self._keys_of.clear()
            return
        for project in changed.projects:
            for key in self._keys_of.pop(project, ()):
                del self._answers[key]

    def _keep(self, key, project, answer):
        self._forget(key)
        self._answers[key] = (project, answer)
        self._keys_of[project].add(key)
        while len(self._answers) > KEEP:
            self._forget(next(iter(self._answers)))

    def _forget(self, key):
        kept = self._answers.pop(key, None)
        if kept is not None:
            keys = self._keys_of[kept[0]]
            keys.discard(key)
            if not keys:
                del self._keys_of[kept[0]]


_kept = per_process.PerDatabase(_Kept)


def for_project(db, project_id, user_id=None):
    """``usages.for_project`` as a fresh read would answer it now."""
    return _kept.of(db).answer(db, usages.for_project, project_id, user_id)


def for_project_by_type(db, project_id, user_id=None, consumer_type=None):
    """``usages.for_project_by_type`` as a fresh read would answer it
    now."""
    return _kept.of(db).answer(db, usages.for_project_by_type, project_id,
                               user_id, consumer_type)
