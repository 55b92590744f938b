"""The rows the in-memory state is read from (``placement.state``).

Each function returns the rows of one table (or join), for every
provider or for the providers ``ids`` only, as tuples in the order its
docstring gives; the state consumes them as they come, so a whole read
at 100,000 providers never holds a table's rows twice.
"""

import sqlalchemy as sa

from placement import inventory_rules
from placement.storage import providers_core
from placement.storage import tables
from placement.storage.tables import (
    AGG, AGGREGATE_MEMBERSHIPS, ALLOC, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT)

_FIELD_COLUMNS = tuple(INV.c[field] for field in inventory_rules.FIELDS)


def _only(conn, column, ids):
    """The condition for the rows of providers ``ids`` (None: all)."""
    return () if ids is None else (providers_core.ids_in(conn, column, ids),)


def classes(conn):
    """(id, name) of every resource class."""
    return conn.execute(sa.select(RC.c.id, RC.c.name)).all()


def traits(conn):
    """(id, name, created_at, updated_at) of every trait."""
    return conn.execute(sa.select(TRAIT.c.id, TRAIT.c.name,
                                  TRAIT.c.created_at,
                                  TRAIT.c.updated_at)).all()


def providers(conn, ids=None):
    """(id, uuid, parent id, root id, name, generation, created_at,
    updated_at) of the providers."""
    return conn.execute(
        sa.select(RP.c.id, RP.c.uuid, RP.c.parent_provider_id,
                  tables.root_of(RP), RP.c.name, RP.c.generation,
                  RP.c.created_at, RP.c.updated_at)
        .where(*_only(conn, RP.c.id, ids)))


def usage(conn, ids=None):
    """(provider id, class id, amount allocated) of the providers."""
    return conn.execute(
        sa.select(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
                  sa.func.sum(ALLOC.c.used))
        .where(*_only(conn, ALLOC.c.resource_provider_id, ids))
        .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id))


def inventories(conn, ids=None):
    """(provider id, class id, then the record's fields in
    ``inventory_rules.FIELDS`` order) of the providers."""
    return conn.execute(
        sa.select(INV.c.resource_provider_id, INV.c.resource_class_id,
                  *_FIELD_COLUMNS)
        .where(*_only(conn, INV.c.resource_provider_id, ids)))


def provider_traits(conn, ids=None):
    """(provider id, trait id) of the providers."""
    return conn.execute(
        sa.select(RP_TRAIT.c.resource_provider_id, RP_TRAIT.c.trait_id)
        .where(*_only(conn, RP_TRAIT.c.resource_provider_id, ids)))


def memberships(conn, ids=None):
    """(provider id, aggregate uuid, aggregate id) of the providers."""
    return conn.execute(
        sa.select(RP_AGG.c.resource_provider_id, AGG.c.uuid, AGG.c.id)
        .select_from(AGGREGATE_MEMBERSHIPS)
        .where(*_only(conn, RP_AGG.c.resource_provider_id, ids)))
