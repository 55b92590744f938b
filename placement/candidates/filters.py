"""The SQL of the candidate search: set-based, each query bound by an index.

Every function takes a connection and plain values and returns plain
values (sets and dicts of internal ids).  The heavy lifting is one query
per request group: the inventories of the requested classes with room for
the requested amounts (capacity, min_unit, max_unit, step_size, current
usage), joined to their providers and narrowed by whatever the group lets
SQL decide alone.
"""

import collections

import os_traits
import sqlalchemy as sa

from placement.storage import exceptions
from placement.storage import providers_core
from placement.storage import resource_classes
from placement.storage import tables
from placement.storage import traits as trait_storage

_RP = tables.resource_providers
_PARENT = _RP.alias('parent')
_ROOT = _RP.alias('root')
_INV = tables.inventories
_RC = tables.resource_classes
_TRAIT = tables.traits
_RP_TRAIT = tables.resource_provider_traits
_RP_AGG = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates

# No inventory holds more than an Integer column; larger amounts never fit
# and must not reach SQLite's 64-bit binds.
_MAX_AMOUNT = 2147483647


class UnknownTrait(exceptions.NotFound):
    """A trait named in the request does not exist."""


class UnknownResourceClass(exceptions.NotFound):
    """A resource class named in the request does not exist."""


Inventory = collections.namedtuple('Inventory', 'free max_unit')
Candidate = collections.namedtuple('Candidate',
                                   'provider root class_id uuid')


def class_ids(conn, names):
    """{name: id}; UnknownResourceClass for the first unknown name."""
    ids = resource_classes.ids_by_name(conn, names)
    for name in names:
        if name not in ids:
            raise UnknownResourceClass('No such resource class %s.' % name)
    return ids


def trait_ids(conn, names):
    """{name: id}; UnknownTrait for the first unknown name (sorted)."""
    ids = trait_storage.trait_ids_by_name(conn, names)
    for name in sorted(names):
        if name not in ids:
            raise UnknownTrait('No such trait(s): %s.' % name)
    return ids


def roots_with_traits(conn, required, forbidden):
    """Ids of root providers having every trait id of ``required`` and
    none of ``forbidden``."""
    query = sa.select(_RP.c.id).where(_RP.c.parent_provider_id.is_(None))
    for trait_id in required:
        query = query.where(providers_core.having_any_trait([trait_id]))
    if forbidden:
        query = query.where(
            sa.not_(providers_core.having_any_trait(sorted(forbidden))))
    return set(conn.scalars(query))


def sharing_providers(conn):
    """Ids of the providers that share their inventory via aggregates."""
    return set(conn.scalars(
        sa.select(_RP_TRAIT.c.resource_provider_id)
        .select_from(_RP_TRAIT.join(_TRAIT,
                                    _TRAIT.c.id == _RP_TRAIT.c.trait_id))
        .where(_TRAIT.c.name == os_traits.MISC_SHARES_VIA_AGGREGATE)))


def providers_in_aggregates(conn, aggregate_uuids):
    """Ids of the providers in any of the aggregates."""
    return set(conn.scalars(
        sa.select(_RP.c.id).where(
            providers_core.in_any_aggregate(aggregate_uuids))))


def providers_in_every(conn, member_of):
    """Ids of the providers in (any aggregate of) every set of
    ``member_of``."""
    result = None
    for uuids in member_of:
        found = providers_in_aggregates(conn, uuids)
        result = found if result is None else result & found
        if not result:
            return set()
    return result


def root_of(conn, uuid):
    """The root id of the provider ``uuid``'s tree, or None."""
    return conn.scalar(sa.select(_RP.c.root_provider_id)
                       .where(_RP.c.uuid == uuid))


def provider_conditions(required_traits=(), forbidden_traits=(),
                        member_of=(), forbidden_aggregates=()):
    """Conditions on each provider alone (a granular group's filters)."""
    conditions = [providers_core.having_any_trait(sorted(any_of))
                  for any_of in required_traits]
    if forbidden_traits:
        conditions.append(sa.not_(
            providers_core.having_any_trait(sorted(forbidden_traits))))
    conditions += [providers_core.in_any_aggregate(uuids)
                   for uuids in member_of]
    if forbidden_aggregates:
        conditions.append(sa.not_(
            providers_core.in_any_aggregate(forbidden_aggregates)))
    return conditions


def with_room(conn, amounts, inventory, tree_root=None, conditions=()):
    """Candidates (provider, root, class id) whose inventory of a class in
    ``amounts`` ({class id: amount}) has room for that amount.

    Records each match's free capacity and max_unit in ``inventory``
    ({(provider, class id): Inventory}) for the combination step.
    """
    if not amounts or any(amount > _MAX_AMOUNT for amount in amounts.values()):
        return []
    amount = sa.case({class_id: sa.literal(amount)
                      for class_id, amount in amounts.items()},
                     value=_INV.c.resource_class_id)
    used = providers_core.inventory_usage()
    capacity = (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio
    query = (
        sa.select(_INV.c.resource_provider_id, _RP.c.root_provider_id,
                  _INV.c.resource_class_id, _RP.c.uuid, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio,
                  _INV.c.max_unit, used)
        .select_from(_INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id))
        .where(_INV.c.resource_class_id.in_(sorted(amounts)),
               _INV.c.min_unit <= amount, _INV.c.max_unit >= amount,
               amount % _INV.c.step_size == 0,
               used + amount <= capacity, *conditions)
        .order_by(_INV.c.resource_provider_id, _INV.c.resource_class_id))
    if tree_root is not None:
        query = query.where(_RP.c.root_provider_id == tree_root)
    result = []
    for (provider, root, class_id, uuid, total, reserved, ratio, max_unit,
         used_now) in conn.execute(query):
        inventory[provider, class_id] = Inventory(
            int((total - reserved) * ratio) - int(used_now), max_unit)
        result.append(Candidate(provider, root, class_id, uuid))
    return result


def providers_matching(conn, tree_root=None, conditions=()):
    """(provider, root, uuid) of every provider meeting ``conditions``:
    the candidates of a group that asks for no resources."""
    query = sa.select(_RP.c.id, _RP.c.root_provider_id,
                      _RP.c.uuid).where(*conditions)
    if tree_root is not None:
        query = query.where(_RP.c.root_provider_id == tree_root)
    return [tuple(row) for row in conn.execute(query.order_by(_RP.c.id))]


def sharing_anchors(conn, provider_ids):
    """{sharing provider id: roots of the trees it shares with}: the roots
    of every provider in an aggregate with it (its own tree's root too,
    when it is in any aggregate)."""
    if not provider_ids:
        return {}
    mine = _RP_AGG.alias('mine')
    theirs = _RP_AGG.alias('theirs')
    rows = conn.execute(
        sa.select(mine.c.resource_provider_id, _RP.c.root_provider_id)
        .distinct()
        .select_from(
            mine.join(theirs, theirs.c.aggregate_id == mine.c.aggregate_id)
            .join(_RP, _RP.c.id == theirs.c.resource_provider_id))
        .where(mine.c.resource_provider_id.in_(sorted(provider_ids))))
    anchors = collections.defaultdict(set)
    for provider_id, root_id in rows:
        anchors[provider_id].add(root_id)
    return anchors


def traits_among(conn, provider_ids, wanted):
    """{provider id: the trait ids of ``wanted`` it has}."""
    result = collections.defaultdict(set)
    if not provider_ids or not wanted:
        return result
    rows = conn.execute(
        sa.select(_RP_TRAIT.c.resource_provider_id, _RP_TRAIT.c.trait_id)
        .where(_RP_TRAIT.c.resource_provider_id.in_(sorted(provider_ids)),
               _RP_TRAIT.c.trait_id.in_(sorted(wanted))))
    for provider_id, trait_id in rows:
        result[provider_id].add(trait_id)
    return result


# -- what the answer shows about each provider -------------------------------

def parents(conn, root_ids):
    """{provider id: parent id (None for a root)} in the trees."""
    return dict(conn.execute(
        sa.select(_RP.c.id, _RP.c.parent_provider_id)
        .where(_RP.c.root_provider_id.in_(sorted(root_ids)))).all())


def tree_members(conn, root_ids):
    """Every provider of the trees rooted at ``root_ids``: dicts with
    ``id``, ``uuid``, ``parent_provider_uuid``, ``root_provider_uuid``."""
    rows = conn.execute(
        sa.select(_RP.c.id, _RP.c.uuid, _PARENT.c.uuid, _ROOT.c.uuid)
        .select_from(
            _RP.outerjoin(_PARENT, _RP.c.parent_provider_id == _PARENT.c.id)
            .join(_ROOT, _RP.c.root_provider_id == _ROOT.c.id))
        .where(_RP.c.root_provider_id.in_(sorted(root_ids)))
        .order_by(_RP.c.id))
    return [{'id': id_, 'uuid': uuid, 'parent_provider_uuid': parent,
             'root_provider_uuid': root} for id_, uuid, parent, root in rows]


def inventory_summaries(conn, provider_ids):
    """{provider id: {class name: {'capacity', 'used'}}}."""
    result = collections.defaultdict(dict)
    if not provider_ids:
        return result
    rows = conn.execute(
        sa.select(_INV.c.resource_provider_id, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio,
                  providers_core.inventory_usage())
        .select_from(_INV.join(_RC, _RC.c.id == _INV.c.resource_class_id))
        .where(_INV.c.resource_provider_id.in_(sorted(provider_ids)))
        .order_by(_INV.c.resource_provider_id, _INV.c.resource_class_id))
    for provider, name, total, reserved, ratio, used in rows:
        result[provider][name] = {
            'capacity': int((total - reserved) * ratio), 'used': int(used)}
    return result


def trait_names(conn, provider_ids):
    """{provider id: its trait names, oldest trait first (the order
    upstream happens to answer in, which its tests expect)}."""
    result = collections.defaultdict(list)
    if not provider_ids:
        return result
    rows = conn.execute(
        sa.select(_RP_TRAIT.c.resource_provider_id, _TRAIT.c.name)
        .select_from(_RP_TRAIT.join(_TRAIT,
                                    _TRAIT.c.id == _RP_TRAIT.c.trait_id))
        .where(_RP_TRAIT.c.resource_provider_id.in_(sorted(provider_ids)))
        .order_by(_RP_TRAIT.c.resource_provider_id, _TRAIT.c.id))
    for provider_id, name in rows:
        result[provider_id].append(name)
    return result
