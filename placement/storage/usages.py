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


def _sums(conditions, by_type):
    """(type id or None, class id, sum of used), grouped by integer ids
    (cheaper than grouping by names), the names joined on afterwards."""
    keys = [_ALLOC.c.resource_class_id]
    if by_type:
        keys.append(_CONSUMER.c.consumer_type_id)
    sums = (sa.select(*keys, sa.func.sum(_ALLOC.c.used).label('used'))
            .select_from(_OWNED).where(*conditions).group_by(*keys)
            .subquery())
    type_name = (sa.func.coalesce(_TYPE.c.name, consumer_storage.UNKNOWN_TYPE)
                 if by_type else sa.literal(ALL_TYPES))
    source = sums.join(_RC, _RC.c.id == sums.c.resource_class_id)
    if by_type:
        source = source.outerjoin(
            _TYPE, _TYPE.c.id == sums.c.consumer_type_id)
    return sa.select(type_name, _RC.c.name, sums.c.used).select_from(source)


def _consumer_counts(conditions, by_type):
    """(type name, how many of the consumers hold allocations)."""
    holding = sa.exists().where(_ALLOC.c.consumer_id == _CONSUMER.c.uuid)
    if not by_type:
        return sa.select(sa.literal(ALL_TYPES), sa.func.count()).where(
            *conditions, holding)
    counts = (sa.select(_CONSUMER.c.consumer_type_id,
                        sa.func.count().label('consumers'))
              .where(*conditions, holding)
              .group_by(_CONSUMER.c.consumer_type_id).subquery())
    return sa.select(
        sa.func.coalesce(_TYPE.c.name, consumer_storage.UNKNOWN_TYPE),
        counts.c.consumers).select_from(counts.outerjoin(
            _TYPE, _TYPE.c.id == counts.c.consumer_type_id))


def for_project(conn, project_id, user_id=None):
    """{resource class: amount} the project's (and user's) consumers use."""
    conditions = _owner_conditions(conn, project_id, user_id)
    if conditions is None:
        return {}
    return {name: int(amount)
            for _, name, amount in conn.execute(_sums(conditions, False))}


def _type_condition(conn, consumer_type):
    """The condition on consumers for a ``consumer_type`` filter: True for
    none, None when the type does not exist (nothing matches)."""
    if consumer_type in (None, ALL_TYPES):
        return sa.true()
    if consumer_type == consumer_storage.UNKNOWN_TYPE:
        return _CONSUMER.c.consumer_type_id.is_(None)
    type_id = conn.scalar(sa.select(_TYPE.c.id)
                          .where(_TYPE.c.name == consumer_type))
    if type_id is None:
        return None
    return _CONSUMER.c.consumer_type_id == type_id


def for_project_by_type(conn, project_id, user_id=None, consumer_type=None):
    """{consumer type: {resource class: amount, 'consumer_count': n}}.

    Consumers without a type count as ``unknown``.  ``consumer_type``
    narrows to one type (``unknown`` for the untyped), or with ``all``
    puts every consumer under the single key ``all``.
    """
    conditions = _owner_conditions(conn, project_id, user_id)
    type_condition = _type_condition(conn, consumer_type)
    if conditions is None or type_condition is None:
        return {}
    conditions.append(type_condition)
    by_type = consumer_type != ALL_TYPES
    result = {}
    for type_name, class_name, amount in conn.execute(
            _sums(conditions, by_type)):
        result.setdefault(type_name, {})[class_name] = int(amount)
    # Counted apart: a consumer of several classes is still one consumer.
    for type_name, count in conn.execute(
            _consumer_counts(conditions, by_type)):
        if type_name in result:
            result[type_name]['consumer_count'] = count
    return result
