"""Resource provider rows: create, read, update, delete, list.

Trees are stored as upstream stores them: every provider has
``root_provider_id`` (itself for a root) and ``parent_provider_id``.
"""

import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import exceptions
from placement.storage import providers_core
from placement.storage import tables

_RP = tables.resource_providers


def _duplicates(conn, uuid, name, exclude_id=None):
    """Which of uuid/name another provider already has, as messages."""
    found = []
    for column, value in (('uuid', uuid), ('name', name)):
        if value is None:
            continue
        query = sa.select(_RP.c.id).where(_RP.c[column] == value)
        if exclude_id is not None:
            query = query.where(_RP.c.id != exclude_id)
        if conn.execute(query).first():
            found.append('%s: %s' % (column, value))
    return found


def _raise_if_duplicate(conn, uuid, name, exclude_id=None):
    duplicates = _duplicates(conn, uuid, name, exclude_id)
    if duplicates:
        raise exceptions.Duplicate(
            'Conflicting resource provider %s already exists.'
            % ', '.join(duplicates))


def create(conn, name, uuid=None, parent_provider_uuid=None):
    """Create a provider and return it (as ``providers_core`` reads it)."""
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    _raise_if_duplicate(conn, uuid, name)
    parent = None
    if parent_provider_uuid is not None:
        if parent_provider_uuid == uuid:
            raise exceptions.InvalidInput(
                'Unable to create resource provider "%s", %s: parent '
                'provider UUID cannot be same as UUID. Please set parent '
                'provider UUID to None if there is no parent.' % (name, uuid))
        parent = providers_core.find_by_uuid(conn, parent_provider_uuid)
        if parent is None:
            raise exceptions.InvalidInput(
                'Unable to create resource provider "%s", %s: parent '
                'provider UUID does not exist.' % (name, uuid))
    try:
        with conn.begin_nested():
            provider_id = conn.execute(_RP.insert().values(
                uuid=uuid, name=name, generation=0,
                parent_provider_id=parent['id'] if parent else None,
                root_provider_id=parent['root_provider_id'] if parent
                else None,
                created_at=tables.utcnow())).inserted_primary_key[0]
    except sa_exc.IntegrityError:
        # Lost a race with a concurrent create of the same uuid or name.
        _raise_if_duplicate(conn, uuid, name)
        raise
    if parent is None:
        conn.execute(_RP.update().where(_RP.c.id == provider_id)
                     .values(root_provider_id=provider_id))
    return providers_core.get_by_uuid(conn, uuid)
