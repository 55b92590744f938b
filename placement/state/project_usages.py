"""A project's usages kept in memory, exact.

Conductors and the API ask ``GET /usages?project_id=`` all day.  The
answer sums every allocation of the project's consumers: thousands of
index probes for a large project, and most of the database's work in
``benchmarks/traffic.py`` at 10,000 compute nodes.  It changes only when
one of those consumers' allocations, project, user or type does.

So the answers given are kept (``kept_answers``), and a project's is not
given again once the change log (``catch_up``) shows a write that moved
its usage.  This service's writes log the projects they change
(``changes.projects_changed``).  Anything else's write to allocations,
consumers, projects, users or consumer types is logged as EVERYTHING
(migrations 0004 and 0008), and so is a renamed resource class (NAMES);
either moves every answer.

A kept answer is given only when the log, read at the request, shows no
write that moved it: exactly what a fresh read would answer at that
moment, whoever wrote last.  A project nobody
has allocated for yet is not kept (its answer costs one index probe).
"""

from placement.state import kept_answers
from placement.storage import usages

SHELF = kept_answers.Shelf('project usages')


def _answer(db, read, project_id, *rest):
    """``read(conn, project_id, *rest)``, given from memory while the
    project's usage has not moved.  A project nobody has allocated for
    yet is not kept (its answer costs one index probe)."""
    def fresh(conn):
        owner = usages.project_id(conn, project_id)
        return (None if owner is None else [(kept_answers.PROJECT, owner)],
                read(conn, project_id, *rest))
    return kept_answers.answer(db, SHELF, (read, project_id, *rest),
                               lambda: db.read(fresh))


def for_project(db, project_id, user_id=None):
    """``usages.for_project`` as a fresh read would answer it now."""
    return _answer(db, usages.for_project, project_id, user_id)


def for_project_by_type(db, project_id, user_id=None, consumer_type=None):
    """``usages.for_project_by_type`` as a fresh read would answer it
    now."""
    return _answer(db, usages.for_project_by_type, project_id, user_id,
                   consumer_type)
