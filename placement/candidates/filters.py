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
_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes
_TRAIT = tables.traits
_RP_TRAIT = tables.resource_provider_traits
_RP_AGG = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates

# No inventory holds more than an Integer column; larger amounts never fit
# and must not reach SQLite's 64-bit binds.
_MAX_AMOUNT = 2147483647

_ids_in = providers_core.ids_in


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


def root_conditions(required, forbidden):
    """Conditions on root providers: every trait id of ``required``, none
    of ``forbidden`` (root_required)."""
    conditions = [_RP.c.parent_provider_id.is_(None)]
    conditions += [providers_core.having_any_trait([trait_id])
                   for trait_id in sorted(required)]
    if forbidden:
        conditions.append(
            sa.not_(providers_core.having_any_trait(sorted(forbidden))))
    return conditions


def roots(conn, conditions, after=None, limit=None):
    """Ids of the roots meeting ``conditions``, in id order: all of them,
    or the ``limit`` first ones after id ``after`` (a page)."""
    query = sa.select(_RP.c.id).where(*conditions).order_by(_RP.c.id)
    if after is not None:
        query = query.where(_RP.c.id > after)
    if limit is not None:
        query = query.limit(limit)
    return list(conn.scalars(query))


def sharing_providers(conn):
    """Ids of the providers that share their inventory via aggregates."""
    return set(conn.scalars(
        sa.select(_RP_TRAIT.c.resource_provider_id)
        .select_from(_RP_TRAIT.join(_TRAIT,
                                    _TRAIT.c.id == _RP_TRAIT.c.trait_id))
        .where(_TRAIT.c.name == os_traits.MISC_SHARES_VIA_AGGREGATE)))


def providers_in_aggregates(conn, aggregate_uuids, within=()):
    """Ids of the providers (among ``within``) in any of the
    aggregates."""
    return set(conn.scalars(
        sa.select(_RP.c.id).where(
            providers_core.in_any_aggregate(aggregate_uuids), *within)))


def providers_in_every(conn, member_of, within=()):
    """Ids of the providers (among ``within``) in (any aggregate of)
    every set of ``member_of``."""
    return set(conn.scalars(sa.select(_RP.c.id).where(
        *[providers_core.in_any_aggregate(uuids) for uuids in member_of],
        *within)))


def any_provider_in_every(conn, member_of):
    """Whether some provider is in (any aggregate of) every set of
    ``member_of``."""
    return conn.scalar(sa.select(_RP.c.id).where(
        *[providers_core.in_any_aggregate(uuids)
          for uuids in member_of]).limit(1)) is not None


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


def unsuffixed_narrowing(conn, sharing, required_traits, member_of):
    """Conditions that leave out, before they are read, the providers of
    trees that cannot anchor an answer of the unsuffixed group: the
    provider or its root is in every set of ``member_of``, and each set
    of ``required_traits`` is held by a provider of the tree (unless a
    sharing provider holds one of its traits).  Sharing providers pass:
    the exact checks, in the engine, follow in any case."""
    conditions = []
    if member_of:
        conditions.append(sa.or_(
            sa.and_(*[providers_core.in_any_aggregate(uuids)
                      for uuids in member_of]),
            sa.and_(*[providers_core.in_any_aggregate(
                uuids, _RP.c.root_provider_id) for uuids in member_of])))
    held = set()
    if sharing and required_traits:
        held = set().union(*traits_among(
            conn, sharing, set().union(*required_traits)).values())
    tree = _RP.alias('tree')
    for any_of in required_traits:
        if any_of & held:
            continue
        conditions.append(_RP.c.root_provider_id.in_(
            sa.select(tree.c.root_provider_id).where(
                providers_core.having_any_trait(sorted(any_of), tree.c.id))))
    if sharing and conditions:
        return [sa.or_(_ids_in(conn, _RP.c.id, sharing),
                       sa.and_(*conditions))]
    return conditions


def in_tree(root):
    """Providers of the tree rooted at ``root``."""
    return _RP.c.root_provider_id == root


def page_condition(conn, roots, sharing, root_conditions=()):
    """Providers of the trees rooted at ``roots`` (None: every tree) or
    at roots meeting ``root_conditions``, and the ``sharing`` providers,
    which may serve them; None for every provider."""
    if roots is not None:
        condition = _ids_in(conn, _RP.c.root_provider_id, roots)
    elif root_conditions:
        condition = _RP.c.root_provider_id.in_(
            sa.select(_RP.c.id).where(*root_conditions))
    else:
        return None
    if sharing:
        condition = sa.or_(condition, _ids_in(conn, _RP.c.id, sharing))
    return condition


def _usage(class_ids, within):
    """What is allocated per (provider, class) of ``class_ids`` (None:
    every class) among the providers meeting ``within``: one grouped pass
    over the allocations index, joined by hash whatever the statistics
    say (a correlated sum per inventory row once led PostgreSQL into a
    loop over every provider per row)."""
    query = (sa.select(_ALLOC.c.resource_provider_id,
                       _ALLOC.c.resource_class_id,
                       sa.func.sum(_ALLOC.c.used).label('used'))
             .group_by(_ALLOC.c.resource_provider_id,
                       _ALLOC.c.resource_class_id))
    if class_ids is not None:
        query = query.where(_ALLOC.c.resource_class_id.in_(class_ids))
    if within:
        query = query.where(_ALLOC.c.resource_provider_id.in_(
            sa.select(_RP.c.id).where(*within)))
    return query.subquery('usage')


def _with_usage(usage):
    return _INV.outerjoin(usage, sa.and_(
        usage.c.resource_provider_id == _INV.c.resource_provider_id,
        usage.c.resource_class_id == _INV.c.resource_class_id))


def with_room(conn, amounts, inventory, within=(), conditions=()):
    """Candidates (provider, root, class id) whose inventory of a class in
    ``amounts`` ({class id: amount}) has room for that amount.

    ``within`` (conditions on providers) bounds the providers looked at
    and the usage summed; ``conditions`` narrow them further.  Records
    each match's free capacity and max_unit in ``inventory`` ({(provider,
    class id): Inventory}) for the combination step.

    The units and the capacity are checked here rather than in SQL: a
    condition per class is one the planner cannot estimate, and a
    planner that expects two rows where there are thousands picks a loop
    over every provider per row.
    """
    if not amounts or any(amount > _MAX_AMOUNT for amount in amounts.values()):
        return []
    class_ids = sorted(amounts)
    usage = _usage(class_ids, within)
    query = (
        sa.select(_INV.c.resource_provider_id, _RP.c.root_provider_id,
                  _INV.c.resource_class_id, _RP.c.uuid, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio, _INV.c.min_unit,
                  _INV.c.max_unit, _INV.c.step_size, usage.c.used)
        .select_from(_with_usage(usage).join(
            _RP, _RP.c.id == _INV.c.resource_provider_id))
        .where(_INV.c.resource_class_id.in_(class_ids), *within,
               *conditions)
        .order_by(_INV.c.resource_provider_id, _INV.c.resource_class_id))
    result = []
    for (provider, root, class_id, uuid, total, reserved, ratio, min_unit,
         max_unit, step_size, used) in conn.execute(query).all():
        amount = amounts[class_id]
        if amount < min_unit or amount > max_unit or amount % step_size:
            continue
        free = int((total - reserved) * ratio) - int(used or 0)
        if free < amount:
            continue
        inventory[provider, class_id] = Inventory(free, max_unit)
        result.append(Candidate(provider, root, class_id, uuid))
    return result


def providers_matching(conn, conditions=()):
    """(provider, root, uuid) of every provider meeting ``conditions``:
    the candidates of a group that asks for no resources."""
    query = sa.select(_RP.c.id, _RP.c.root_provider_id,
                      _RP.c.uuid).where(*conditions)
    return [tuple(row) for row in conn.execute(query.order_by(_RP.c.id))]


def sharing_anchors(conn, provider_ids, roots=None):
    """{sharing provider id: roots of the trees it shares with}: the roots
    of every provider in an aggregate with it (its own tree's root too,
    when it is in any aggregate), among ``roots`` (None: any)."""
    if not provider_ids:
        return {}
    mine = _RP_AGG.alias('mine')
    theirs = _RP_AGG.alias('theirs')
    query = (
        sa.select(mine.c.resource_provider_id, _RP.c.root_provider_id)
        .distinct()
        .select_from(
            mine.join(theirs, theirs.c.aggregate_id == mine.c.aggregate_id)
            .join(_RP, _RP.c.id == theirs.c.resource_provider_id))
        .where(_ids_in(conn, mine.c.resource_provider_id, provider_ids)))
    if roots is not None:
        query = query.where(_ids_in(conn, _RP.c.root_provider_id, roots))
    rows = conn.execute(query).all()
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
        .where(_ids_in(conn, _RP_TRAIT.c.resource_provider_id,
                       provider_ids),
               _RP_TRAIT.c.trait_id.in_(sorted(wanted))))
    for provider_id, trait_id in rows:
        result[provider_id].add(trait_id)
    return result


# -- what the answer shows about each provider -------------------------------

def parents(conn, root_ids):
    """{provider id: parent id (None for a root)} in the trees."""
    return dict(conn.execute(
        sa.select(_RP.c.id, _RP.c.parent_provider_id)
        .where(_ids_in(conn, _RP.c.root_provider_id, root_ids))).all())


def tree_members(conn, root_ids):
    """Every provider of the trees rooted at ``root_ids``, in id order:
    dicts with ``id``, ``uuid``, ``parent_provider_uuid``,
    ``root_provider_uuid``."""
    rows = conn.execute(
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
                  _RP.c.root_provider_id)
        .where(_ids_in(conn, _RP.c.root_provider_id, root_ids))
        .order_by(_RP.c.id)).all()
    # Parents and roots are members of the same trees.
    uuids = {row[0]: row[1] for row in rows}
    return [{'id': id_, 'uuid': uuid,
             'parent_provider_uuid': uuids.get(parent),
             'root_provider_uuid': uuids[root]}
            for id_, uuid, parent, root in rows]


def inventory_summaries(conn, root_ids):
    """{provider id: {class name: {'capacity', 'used'}}} in the trees
    rooted at ``root_ids``."""
    result = collections.defaultdict(dict)
    in_trees = _ids_in(conn, _RP.c.root_provider_id, root_ids)
    usage = _usage(None, [in_trees])
    rows = conn.execute(
        sa.select(_INV.c.resource_provider_id, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio, usage.c.used)
        .select_from(_with_usage(usage)
                     .join(_RC, _RC.c.id == _INV.c.resource_class_id)
                     .join(_RP, _RP.c.id == _INV.c.resource_provider_id))
        .where(in_trees)
        .order_by(_INV.c.resource_provider_id, _INV.c.resource_class_id)).all()
    for provider, name, total, reserved, ratio, used in rows:
        result[provider][name] = {
            'capacity': int((total - reserved) * ratio),
            'used': int(used or 0)}
    return result


def trait_names(conn, root_ids):
    """{provider id: its trait names, oldest trait first (the order
    upstream happens to answer in, which its tests expect)} in the trees
    rooted at ``root_ids``."""
    result = collections.defaultdict(list)
    rows = conn.execute(
        sa.select(_RP_TRAIT.c.resource_provider_id, _TRAIT.c.name)
        .select_from(
            _RP_TRAIT.join(_TRAIT, _TRAIT.c.id == _RP_TRAIT.c.trait_id)
            .join(_RP, _RP.c.id == _RP_TRAIT.c.resource_provider_id))
        .where(_ids_in(conn, _RP.c.root_provider_id, root_ids))
        .order_by(_RP_TRAIT.c.resource_provider_id, _TRAIT.c.id)).all()
    for provider_id, name in rows:
        result[provider_id].append(name)
    return result
