"""The rows the in-memory state is read from (``placement.state``).

Each function returns the rows of one table (or join), for every
provider or for the providers ``ids`` only, as tuples in the order its
docstring gives; the state consumes them as they come, so a whole read
at 100,000 providers never holds a table's rows twice.
"""

import sqlalchemy as sa

from placement import inventory_rules
from placement.storage import prepared
from placement.storage import tables
from placement.storage.tables import (
    AGG, AGGREGATE_MEMBERSHIPS, ALLOC, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT)

_FIELD_COLUMNS = tuple(INV.c[field] for field in inventory_rules.FIELDS)


class _Rows:
    """One table's rows for every provider, or for some.

    The state reads some providers again after every write it learns of
    (in every worker, under placement-api): built once, and on PostgreSQL
    prepared with the ids as one array parameter, where building,
    compiling and planning the five statements cost more than reading
    their few rows.  Elsewhere the ids go in an expanding IN."""

    def __init__(self, select, column, group_by=()):
        self.whole = select.group_by(*group_by)
        self.some_prepared = prepared.Statement(select.where(
            column == sa.any_(sa.bindparam(
                'ids', type_=sa.ARRAY(sa.Integer))))
            .group_by(*group_by))
        self.some = select.where(column.in_(sa.bindparam(
            'ids', expanding=True))).group_by(*group_by)

    def of(self, conn, ids):
        """The rows of the providers ``ids`` (None: all), as they come."""
        if ids is None:
            return conn.execute(self.whole)
        params = {'ids': sorted(ids)}
        if conn.dialect.name == 'postgresql':
            return self.some_prepared.execute(conn, params)
        return conn.execute(self.some, params)


def classes(conn):
    """(id, name) of every resource class."""
    return conn.execute(sa.select(RC.c.id, RC.c.name)).all()


def traits(conn):
    """(id, name, created_at, updated_at) of every trait."""
    return conn.execute(sa.select(TRAIT.c.id, TRAIT.c.name,
                                  TRAIT.c.created_at,
                                  TRAIT.c.updated_at)).all()


_PROVIDERS = _Rows(
    sa.select(RP.c.id, RP.c.uuid, RP.c.parent_provider_id,
              tables.root_of(RP), RP.c.name, RP.c.generation,
              RP.c.created_at, RP.c.updated_at), RP.c.id)


def providers(conn, ids=None):
    """(id, uuid, parent id, root id, name, generation, created_at,
    updated_at) of the providers."""
    return _PROVIDERS.of(conn, ids)


_USAGE = _Rows(
    sa.select(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
              sa.func.sum(ALLOC.c.used)), ALLOC.c.resource_provider_id,
    group_by=(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id))


def usage(conn, ids=None):
    """(provider id, class id, amount allocated) of the providers."""
    return _USAGE.of(conn, ids)


_INVENTORIES = _Rows(
    sa.select(INV.c.resource_provider_id, INV.c.resource_class_id,
              *_FIELD_COLUMNS), INV.c.resource_provider_id)


def inventories(conn, ids=None):
    """(provider id, class id, then the record's fields in
    ``inventory_rules.FIELDS`` order) of the providers."""
    return _INVENTORIES.of(conn, ids)


_PROVIDER_TRAITS = _Rows(
    sa.select(RP_TRAIT.c.resource_provider_id, RP_TRAIT.c.trait_id),
    RP_TRAIT.c.resource_provider_id)


def provider_traits(conn, ids=None):
    """(provider id, trait id) of the providers."""
    return _PROVIDER_TRAITS.of(conn, ids)


_MEMBERSHIPS = _Rows(
    sa.select(RP_AGG.c.resource_provider_id, AGG.c.uuid, AGG.c.id)
    .select_from(AGGREGATE_MEMBERSHIPS), RP_AGG.c.resource_provider_id)


def memberships(conn, ids=None):
    """(provider id, aggregate uuid, aggregate id) of the providers."""
    return _MEMBERSHIPS.of(conn, ids)
