"""Usage: allocations summed per provider, or per project (and user).

Every sum is one grouped query over an index (the allocations' covering
(provider, class, used) index for a provider; the consumers' project and
user indexes for a project), so its cost grows with the rows summed, not
with the size of the cloud.
"""

import sqlalchemy as sa

from placement.storage import consumers as consumer_storage
from placement.storage import tables

_ALLOC = tables.allocations
_INV = tables.inventories
_RC = tables.resource_classes
_CONSUMER = tables.consumers
_PROJECT = tables.projects
_USER = tables.users
_TYPE = tables.consumer_types

# consumer_type filters with a meaning of their own.
ALL_TYPES = 'all'


def for_provider(conn, provider_id):
    """{resource class: amount used} for every class the provider has
    inventory of (0 where nothing is allocated)."""
    used = (sa.select(sa.func.sum(_ALLOC.c.used))
            .where(_ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
                   _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
            .correlate(_INV).scalar_subquery())
    rows = conn.execute(
        sa.select(_RC.c.name, sa.func.coalesce(used, 0))
        .select_from(_INV.join(_RC, _INV.c.resource_class_id == _RC.c.id))
        .where(_INV.c.resource_provider_id == provider_id)
        .order_by(_INV.c.resource_class_id))
    return {name: int(amount) for name, amount in rows}


def _owner_conditions(conn, project_id, user_id):
    """Conditions on consumers for the external project (and user), or
    None when no consumer can match (the project or user is unknown)."""
    project = conn.scalar(sa.select(_PROJECT.c.id)
                          .where(_PROJECT.c.external_id == project_id))
    if project is None:
        return None
    conditions = [_CONSUMER.c.project_id == project]
    if user_id:
        user = conn.scalar(sa.select(_USER.c.id)
                           .where(_USER.c.external_id == user_id))
        if user is None:
            return None
        conditions.append(_CONSUMER.c.user_id == user)
    return conditions


_OWNED = _ALLOC.join(_CONSUMER, _ALLOC.c.consumer_id == _CONSUMER.c.uuid)


def for_project(conn, project_id, user_id=None):
    """{resource class: amount} the project's (and user's) consumers use."""
    conditions = _owner_conditions(conn, project_id, user_id)
    if conditions is None:
        return {}
    rows = conn.execute(
        sa.select(_RC.c.name, sa.func.sum(_ALLOC.c.used))
        .select_from(_OWNED.join(_RC, _ALLOC.c.resource_class_id == _RC.c.id))
        .where(*conditions)
        .group_by(_RC.c.name))
    return {name: int(amount) for name, amount in rows}


def for_project_by_type(conn, project_id, user_id=None, consumer_type=None):
    """{consumer type: {resource class: amount, 'consumer_count': n}}.

    Consumers without a type count as ``unknown``.  ``consumer_type``
    narrows to one type (``unknown`` for the untyped), or with ``all``
    puts every consumer under the single key ``all``.
    """
    conditions = _owner_conditions(conn, project_id, user_id)
    if conditions is None:
        return {}
    source = _OWNED.outerjoin(
        _TYPE, _CONSUMER.c.consumer_type_id == _TYPE.c.id)
    type_name = sa.func.coalesce(_TYPE.c.name, consumer_storage.UNKNOWN_TYPE)
    if consumer_type == ALL_TYPES:
        # One group for everything: its key is the filter itself.
        group = [sa.literal_column("'%s'" % ALL_TYPES)]
        group_by = []
    else:
        group = group_by = [type_name]
        if consumer_type is not None:
            conditions.append(type_name == consumer_type)
    amounts = conn.execute(
        sa.select(*group, _RC.c.name, sa.func.sum(_ALLOC.c.used))
        .select_from(source.join(_RC, _ALLOC.c.resource_class_id == _RC.c.id))
        .where(*conditions)
        .group_by(*group_by, _RC.c.name))
    # Counted apart: a consumer of several classes is still one consumer.
    counts = conn.execute(
        sa.select(*group, sa.func.count(sa.distinct(_CONSUMER.c.id)))
        .select_from(source).where(*conditions).group_by(*group_by))
    result = {}
    for name, class_name, amount in amounts:
        result.setdefault(name, {})[class_name] = int(amount)
    for name, count in counts:
        if name in result:
            result[name]['consumer_count'] = count
    return result
