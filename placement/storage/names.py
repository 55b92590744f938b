"""Name-to-id lookups for the tables keyed by a unique ``name``.

Resource classes and traits are named by clients and joined on by id;
every filter first turns a batch of names into ids in one query.
"""

import sqlalchemy as sa


def ids_by_name(conn, table, names):
    """{name: id} for those of ``names`` that exist in ``table``."""
    names = list(set(names))
    if not names:
        return {}
    rows = conn.execute(sa.select(table.c.name, table.c.id)
                        .where(table.c.name.in_(names)))
    return {row.name: row.id for row in rows}
