"""Make the standard resource classes and traits exist in the database.

os-resource-classes and os-traits define names every deployment shares;
they are rows like custom ones so that queries join on ids alone.  A
standard resource class's id is its index in ``os_resource_classes.STANDARDS``
(as upstream assigns them, keeping databases interchangeable); custom
classes start at ``MIN_CUSTOM_RESOURCE_CLASS_ID``.  Runs at every start-up
and is idempotent; concurrent starts are safe because a lost race on the
unique name is ignored.
"""

import os_resource_classes as orc
import os_traits
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import tables

MIN_CUSTOM_RESOURCE_CLASS_ID = 10000


def _insert_missing(conn, table, rows):
    if not rows:
        return
    changes.names_changed(conn)
    try:
        with conn.begin_nested():
            conn.execute(table.insert(), rows)
    except sa_exc.IntegrityError:
        # Another process synced first; insert the remainder one by one.
        for row in rows:
            try:
                with conn.begin_nested():
                    conn.execute(table.insert(), [row])
            except sa_exc.IntegrityError:
                pass


def sync_resource_classes(conn):
    existing = set(conn.scalars(sa.select(tables.resource_classes.c.name)))
    rows = [{'id': index, 'name': name, 'created_at': tables.utcnow()}
            for index, name in enumerate(orc.STANDARDS)
            if name not in existing]
    _insert_missing(conn, tables.resource_classes, rows)


def sync_traits(conn):
    existing = set(conn.scalars(sa.select(tables.traits.c.name)))
    # Sorted, so that trait ids (and thus orderings by id) are the same on
    # every fresh database.
    rows = [{'name': name, 'created_at': tables.utcnow()}
            for name in sorted(os_traits.get_traits())
            if name not in existing]
    _insert_missing(conn, tables.traits, rows)


def sync_all(conn):
    changes.touch(conn)     # names_changed, if any name was missing
    sync_resource_classes(conn)
    sync_traits(conn)
