"""What resource classes and traits share: tables keyed by a unique
``name``.

Both are named by clients and joined on by id; every filter first turns
a batch of names into ids in one query.  Both are created on a PUT that
finds them there already, or made meanwhile by a concurrent request.
"""

import functools

import sqlalchemy as sa

from placement.storage import changes
from placement.storage import exceptions


@functools.lru_cache(maxsize=None)
def _by_names(table):
    """The lookup for ``table``, built once (every write names some)."""
    return sa.select(table.c.name, table.c.id).where(
        table.c.name.in_(sa.bindparam('names', expanding=True)))


def ids_by_name(conn, table, names):
    """{name: id} for those of ``names`` that exist in ``table``."""
    names = sorted(set(names))
    if not names:
        return {}
    rows = conn.execute(_by_names(table), {'names': names})
    return {row.name: row.id for row in rows}


def ensure(conn, name, find, get, create):
    """(row, created): the row ``name`` (``find``: it or None), else
    ``create``'s.  ``create`` raises Duplicate when a concurrent request
    made it first; that one is read (``get``: it, or NotFound).  Finding
    it there changes nothing the change log need hold."""
    existing = find(conn, name)
    if existing is None:
        try:
            return create(conn, name), True
        except exceptions.Duplicate:
            existing = get(conn, name)
    changes.touch(conn)
    return existing, False
