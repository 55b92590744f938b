"""Resource class rows: the standard ones (read-only) and custom ones.

Standard classes keep the ids ``standard_sync`` gave them; a custom class
gets the next id at or above ``MIN_CUSTOM_RESOURCE_CLASS_ID`` so that the
two ranges never mix and "is it standard?" is a comparison on the id.
"""

import os_resource_classes as orc
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import exceptions
from placement.storage import names as names_lookup
from placement.storage import standard_sync
from placement.storage import tables
from placement.storage.tables import ALLOC, INV, RC

_COLUMNS = (RC.c.id, RC.c.name, RC.c.created_at, RC.c.updated_at)

# Concurrent creators can pick the same next id; each loser retries with a
# fresh maximum.  The bound only guards against a loop that cannot end.
_CREATE_ATTEMPTS = 100


def is_standard(resource_class):
    return resource_class['id'] < standard_sync.MIN_CUSTOM_RESOURCE_CLASS_ID


def _not_found(name):
    return exceptions.NotFound('No such resource class %s.' % name)


def list_all(conn):
    """Every resource class as a dict, standard ones first (by id)."""
    rows = conn.execute(sa.select(*_COLUMNS).order_by(RC.c.id))
    return [dict(row._mapping) for row in rows]


def find_by_name(conn, name):
    """The resource class as a dict, or None."""
    row = conn.execute(sa.select(*_COLUMNS).where(RC.c.name == name)).first()
    return dict(row._mapping) if row else None


def get_by_name(conn, name):
    """The resource class as a dict; NotFound names it."""
    resource_class = find_by_name(conn, name)
    if resource_class is None:
        raise _not_found(name)
    return resource_class


def id_for_name(conn, name):
    """The id of the class called ``name``; NotFound when there is none."""
    return get_by_name(conn, name)['id']


def ids_by_name(conn, names):
    """{name: id} for those of ``names`` that exist (others are absent)."""
    return names_lookup.ids_by_name(conn, RC, names)


def _next_custom_id(conn):
    highest = conn.scalar(sa.select(sa.func.max(RC.c.id)))
    if highest is None or highest < standard_sync.MIN_CUSTOM_RESOURCE_CLASS_ID:
        return standard_sync.MIN_CUSTOM_RESOURCE_CLASS_ID
    return highest + 1


def create(conn, name):
    """Create the custom class ``name`` and return it.

    Duplicate when the name is taken, a standard name included.
    """
    if name in orc.STANDARDS or find_by_name(conn, name) is not None:
        raise exceptions.Duplicate(
            'Resource class %s already exists.' % name)
    for _attempt in range(_CREATE_ATTEMPTS):
        try:
            with conn.begin_nested():
                conn.execute(RC.insert().values(
                    id=_next_custom_id(conn), name=name,
                    created_at=tables.utcnow()))
        except sa_exc.IntegrityError:
            if find_by_name(conn, name) is not None:
                raise exceptions.Duplicate(
                    'Resource class %s already exists.' % name)
            continue  # another creator took the id; pick the next one
        changes.names_changed(conn)
        return get_by_name(conn, name)
    raise exceptions.Conflict(
        'Max retries of DB transaction exceeded attempting to create '
        'resource class: %s, please try again.' % name)


def ensure(conn, name):
    """(resource class, created): create ``name`` unless it exists."""
    return names_lookup.ensure(conn, name, find_by_name, get_by_name,
                               create)


def rename(conn, name, new_name):
    """Give the custom class ``name`` the name ``new_name``; return it."""
    resource_class = get_by_name(conn, name)
    if is_standard(resource_class):
        raise exceptions.ReadOnly(
            'Cannot update standard resource class %s.' % name)
    taken = conn.execute(sa.select(RC.c.id).where(
        RC.c.name == new_name, RC.c.id != resource_class['id'])).first()
    if taken:
        raise exceptions.Duplicate(
            'Resource class %s already exists.' % new_name)
    try:
        with conn.begin_nested():
            conn.execute(RC.update()
                         .where(RC.c.id == resource_class['id'])
                         .values(name=new_name, updated_at=tables.utcnow()))
    except sa_exc.IntegrityError:
        raise exceptions.Duplicate(
            'Resource class %s already exists.' % new_name)
    changes.names_changed(conn)
    return get_by_name(conn, new_name)


def _in_use(conn, class_id):
    """True if any inventory or allocation refers to the class."""
    for table in (INV, ALLOC):
        used = conn.execute(sa.select(table.c.id).where(
            table.c.resource_class_id == class_id).limit(1)).first()
        if used:
            return True
    return False


def delete(conn, name):
    """Remove the custom class ``name``, unless something refers to it."""
    resource_class = get_by_name(conn, name)
    if is_standard(resource_class):
        raise exceptions.ReadOnly(
            'Cannot delete standard resource class %s.' % name)
    if _in_use(conn, resource_class['id']):
        raise exceptions.Conflict(
            'Cannot delete resource class %s. Class is in use in inventory.'
            % name)
    conn.execute(RC.delete().where(RC.c.id == resource_class['id']))
    changes.names_changed(conn)
