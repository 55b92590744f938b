"""The data a database adopted from upstream may still lack, filled in
batches while the service serves it.

Upstream's releases before Stein left two things to online data
migrations: ``resource_providers.root_provider_id`` on providers made
before nested providers existed, and the ``consumers`` rows of
allocations made before microversion 1.8.  A database that never ran
them is adopted all the same by ``placement-manage db sync`` (only the
schema matters to adoption) and served meanwhile (a missing root reads
as the provider itself: ``tables.root_of``; an allocation without a
consumer counts in usage and capacity but belongs to no consumer, as
upstream had it).  ``placement-manage db online_data_migrations`` then
runs each migration below until none finds anything.

Each is ``migration(conn, batch_size, conf) -> (found, done)``: at most
``batch_size`` rows examined, how many of them needed the migration and
how many it did.  Each batch is one write transaction whose change-log
entries name what it changed, so that every API process's state sees it
at its next answer.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from placement.storage import changes
from placement.storage.tables import ALLOC, CONSUMER, PROJECT, RP, USER

_PARENT = RP.alias('parent')


def set_root_provider_ids(conn, batch_size, conf):
    """Give providers without a root id one: a provider without a parent
    is its own root; one with a parent whose root is known gets that.
    (found, done): the providers without one examined, those given one.
    """
    rows = conn.execute(
        sa.select(RP.c.id, RP.c.parent_provider_id,
                  sa.func.coalesce(
                      _PARENT.c.root_provider_id,
                      sa.case((_PARENT.c.parent_provider_id.is_(None),
                               _PARENT.c.id))))
        .select_from(RP.outerjoin(_PARENT,
                                  RP.c.parent_provider_id == _PARENT.c.id))
        .where(RP.c.root_provider_id.is_(None))
        .order_by(RP.c.id).limit(batch_size)).all()
    roots = {provider: provider if parent is None else parent_root
             for provider, parent, parent_root in rows}
    done = 0
    for provider, root in roots.items():
        if root is None:    # its parent has no root yet either
            continue
        done += conn.execute(
            RP.update().where(RP.c.id == provider,
                              RP.c.root_provider_id.is_(None))
            .values(root_provider_id=root)).rowcount
        changes.touch(conn, provider, root)   # root: see resource_providers
    if not done:
        changes.touch(conn)
    return len(rows), done


def create_incomplete_consumers(conn, batch_size, conf):
    """Give allocations without a consumer record one, in the project and
    user ``[placement] incomplete_consumer_project_id`` and ``..._user_id``
    name (made if missing), at generation 0 and of no consumer type, as
    upstream's migration does.  (found, done): the consumers without a
    record examined, the records made (fewer when a client made one
    meanwhile)."""
    consumers = conn.scalars(
        sa.select(ALLOC.c.consumer_id).distinct()
        .select_from(ALLOC.outerjoin(
            CONSUMER, ALLOC.c.consumer_id == CONSUMER.c.uuid))
        .where(CONSUMER.c.id.is_(None))
        .order_by(ALLOC.c.consumer_id).limit(batch_size)).all()
    if not consumers:
        changes.touch(conn)
        return 0, 0
    project = _external_id(conn, PROJECT,
                           conf.placement.incomplete_consumer_project_id)
    user = _external_id(conn, USER,
                        conf.placement.incomplete_consumer_user_id)
    done = conn.execute(_insert_missing(conn, CONSUMER), [
        {'uuid': uuid, 'project_id': project, 'user_id': user,
         'generation': 0} for uuid in consumers]).rowcount
    # Their project's usage moved, and where they hold may now make them
    # consumers that span trees (placement.state.consumer_spans).
    changes.projects_changed(conn, project)
    changes.touch(conn, *conn.scalars(
        sa.select(ALLOC.c.resource_provider_id).distinct()
        .where(ALLOC.c.consumer_id.in_(consumers))))
    return len(consumers), done


def _external_id(conn, table, external_id):
    """The id of the project or user ``external_id``, made if missing."""
    conn.execute(_insert_missing(conn, table), {'external_id': external_id})
    return conn.scalar(sa.select(table.c.id).where(
        table.c.external_id == external_id))


def _insert_missing(conn, table):
    """An INSERT of ``table`` that skips the rows whose unique key is
    taken already: a client may make the same record meanwhile."""
    dialect = conn.dialect.name
    if dialect == 'postgresql':
        return postgresql.insert(table).on_conflict_do_nothing()
    if dialect == 'mysql':
        insert = mysql.insert(table)
        key = 'uuid' if 'uuid' in table.c else 'external_id'
        return insert.on_duplicate_key_update({key: insert.inserted[key]})
    return sqlite.insert(table).on_conflict_do_nothing()


# In the order they run, by the names upstream gives them.
MIGRATIONS = (set_root_provider_ids, create_incomplete_consumers)


def providers_without_root(conn):
    """How many providers have no root id yet."""
    return conn.scalar(sa.select(sa.func.count()).select_from(RP)
                       .where(RP.c.root_provider_id.is_(None)))


def consumers_without_record(conn):
    """How many consumers hold allocations but have no record."""
    return conn.scalar(
        sa.select(sa.func.count(sa.distinct(ALLOC.c.consumer_id)))
        .select_from(ALLOC.outerjoin(
            CONSUMER, ALLOC.c.consumer_id == CONSUMER.c.uuid))
        .where(CONSUMER.c.id.is_(None)))


def left_to_do(conn):
    """What the migrations have left, as sentences (none when nothing)."""
    found = []
    roots = providers_without_root(conn)
    if roots:
        found.append('%d resource provider(s) without a root provider id'
                     % roots)
    consumers = consumers_without_record(conn)
    if consumers:
        found.append('%d consumer(s) holding allocations without a '
                     'consumer record' % consumers)
    return found
