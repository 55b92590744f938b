"""Usage: allocations summed per provider, or per project (and user).

Every sum is one grouped query over an index (the allocations' covering
(provider, class, used) index for a provider; the consumers' project and
user indexes for a project), so its cost grows with the rows summed, not
with the size of the cloud.
"""

import functools

import sqlalchemy as sa

from placement.storage import consumers as consumer_storage
from placement.storage import prepared
from placement.storage import providers_core
from placement.storage.tables import (
    ALLOC, CONSUMER, CONSUMER_OF_ALLOC, CONSUMER_TYPE, INV, INV_WITH_CLASS,
    PROJECT, RC, USER)

# consumer_type filters with a meaning of their own.
ALL_TYPES = 'all'


_PROJECT_ID = prepared.Statement(
    sa.select(PROJECT.c.id)
    .where(PROJECT.c.external_id == sa.bindparam('project_id')))


def project_id(conn, external_id):
    """The internal id of the project ``external_id``, or None."""
    rows = _PROJECT_ID.execute(conn, {'project_id': external_id}).all()
    return rows[0][0] if rows else None


def for_provider(conn, provider_id):
    """{resource class: amount used} for every class the provider has
    inventory of (0 where nothing is allocated)."""
    rows = conn.execute(
        sa.select(RC.c.name, providers_core.inventory_usage())
        .select_from(INV_WITH_CLASS)
        .where(INV.c.resource_provider_id == provider_id)
        .order_by(INV.c.resource_class_id))
    return {name: int(amount) for name, amount in rows}


def _owned(per_consumer):
    """(the consumers with their allocations, the allocations' columns).

    ``per_consumer`` (PostgreSQL): each consumer's allocations read
    through their consumer index, one consumer at a time.  Left to
    itself PostgreSQL's planner hashes the consumers and scans every
    allocation of the cloud for them: 65 ms a request at 600,000
    allocations (``benchmarks/traffic.py``), against under 1 ms this
    way.  The ``OFFSET 0`` keeps it from flattening the lateral read back
    into that join.  MariaDB has no LATERAL, and its planner reads
    through the index anyway.
    """
    if not per_consumer:
        return ALLOC.join(CONSUMER, CONSUMER_OF_ALLOC), ALLOC.c
    allocations = (sa.select(ALLOC.c.resource_class_id, ALLOC.c.used)
                   .where(CONSUMER_OF_ALLOC)
                   .offset(0).lateral('owned'))
    return CONSUMER.join(allocations, sa.true()), allocations.c


def _type_name():
    """A consumer's type name, ``unknown`` for one without a type (its
    row joined as ``CONSUMER_TYPE``)."""
    return sa.func.coalesce(CONSUMER_TYPE.c.name,
                            consumer_storage.UNKNOWN_TYPE)


def _sums(conditions, by_type, per_consumer):
    """(type id or None, class id, sum of used), grouped by integer ids
    (cheaper than grouping by names), the names joined on afterwards."""
    owned, columns = _owned(per_consumer)
    keys = [columns.resource_class_id]
    if by_type:
        keys.append(CONSUMER.c.consumer_type_id)
    sums = (sa.select(*keys, sa.func.sum(columns.used).label('used'))
            .select_from(owned).where(*conditions).group_by(*keys)
            .subquery())
    type_name = _type_name() if by_type else sa.literal(ALL_TYPES)
    source = sums.join(RC, RC.c.id == sums.c.resource_class_id)
    if by_type:
        source = source.outerjoin(
            CONSUMER_TYPE, CONSUMER_TYPE.c.id == sums.c.consumer_type_id)
    return sa.select(type_name, RC.c.name, sums.c.used).select_from(source)


def _consumer_counts(conditions, by_type, per_consumer):
    """(type name, how many of the consumers hold allocations); with
    ``per_consumer``, each consumer looked up through the index, as
    ``_owned`` says why (an OFFSET keeps PostgreSQL from turning the
    EXISTS into a join)."""
    held = sa.select(ALLOC.c.id).where(CONSUMER_OF_ALLOC)
    holding = sa.exists(held.offset(0) if per_consumer else held)
    if not by_type:
        return sa.select(sa.literal(ALL_TYPES), sa.func.count()).where(
            *conditions, holding)
    counts = (sa.select(CONSUMER.c.consumer_type_id,
                        sa.func.count().label('consumers'))
              .where(*conditions, holding)
              .group_by(CONSUMER.c.consumer_type_id).subquery())
    return sa.select(_type_name(), counts.c.consumers).select_from(
        counts.outerjoin(
            CONSUMER_TYPE, CONSUMER_TYPE.c.id == counts.c.consumer_type_id))


def _owner_by_external_ids(with_user):
    """Conditions on consumers for the external project (and user) ids
    bound later as ``project_id`` (and ``user_id``)."""
    conditions = [CONSUMER.c.project_id == consumer_storage.id_named(
        PROJECT, 'external_id', 'project_id')]
    if with_user:
        conditions.append(CONSUMER.c.user_id == consumer_storage.id_named(
            USER, 'external_id', 'user_id'))
    return conditions


# Each shape of request is one statement built once (conductors ask all
# day, and building the statement cost more than the database's work).
@functools.lru_cache(maxsize=None)
def _project_sums(with_user, per_consumer):
    return prepared.Statement(_sums(_owner_by_external_ids(with_user),
                                    False, per_consumer))


def _owner_params(project_id, user_id):
    """The parameters ``_owner_by_external_ids`` binds."""
    params = {'project_id': project_id}
    if user_id:
        params['user_id'] = user_id
    return params


def _per_consumer(conn):
    """Whether sums read each consumer's allocations apart (``_owned``)."""
    return conn.dialect.name == 'postgresql'


def for_project(conn, project_id, user_id=None):
    """{resource class: amount} the project's (and user's) consumers use;
    an unknown project or user uses nothing."""
    statement = _project_sums(bool(user_id), _per_consumer(conn))
    return {name: int(amount) for _, name, amount in statement.execute(
        conn, _owner_params(project_id, user_id))}


def _type_condition(kind):
    """The condition on consumers for a kind of ``consumer_type`` filter
    (``_type_kind``), a named type bound later as ``consumer_type``."""
    if kind is None:
        return sa.true()
    if kind == consumer_storage.UNKNOWN_TYPE:
        return CONSUMER.c.consumer_type_id.is_(None)
    return CONSUMER.c.consumer_type_id == consumer_storage.id_named(
        CONSUMER_TYPE, 'name', 'consumer_type')


def _type_kind(consumer_type):
    """None (no filter), ``all``, ``unknown`` or ``named``."""
    if consumer_type in (None, ALL_TYPES, consumer_storage.UNKNOWN_TYPE):
        return consumer_type
    return 'named'


@functools.lru_cache(maxsize=None)
def _by_type_statements(with_user, kind, per_consumer):
    """(sums, consumer counts) for one shape of request, built once."""
    conditions = _owner_by_external_ids(with_user)
    conditions.append(_type_condition(None if kind == ALL_TYPES else kind))
    by_type = kind != ALL_TYPES
    return (prepared.Statement(_sums(conditions, by_type, per_consumer)),
            prepared.Statement(
                _consumer_counts(conditions, by_type, per_consumer)))


def for_project_by_type(conn, project_id, user_id=None, consumer_type=None):
    """{consumer type: {resource class: amount, 'consumer_count': n}}.

    Consumers without a type count as ``unknown``.  ``consumer_type``
    narrows to one type (``unknown`` for the untyped), or with ``all``
    puts every consumer under the single key ``all``.  An unknown
    project, user or type uses nothing.
    """
    kind = _type_kind(consumer_type)
    sums, counts = _by_type_statements(bool(user_id), kind,
                                       _per_consumer(conn))
    params = _owner_params(project_id, user_id)
    if kind == 'named':
        params['consumer_type'] = consumer_type
    result = {}
    for type_name, class_name, amount in sums.execute(conn, params):
        result.setdefault(type_name, {})[class_name] = int(amount)
    # Counted apart: a consumer of several classes is still one consumer.
    if result:
        for type_name, count in counts.execute(conn, params):
            if type_name in result:
                result[type_name]['consumer_count'] = count
    return result
