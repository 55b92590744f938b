"""Name-to-id lookups for the tables keyed by a unique ``name``.

Resource classes and traits are named by clients and joined on by id;
every filter first turns a batch of names into ids in one query.
"""

import functools

import sqlalchemy as sa


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
