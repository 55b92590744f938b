"""Resource provider rows: create, read, update, delete, list.

Trees are stored as upstream stores them: every provider has
``root_provider_id`` (itself for a root) and ``parent_provider_id``.
"""

import dataclasses
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import inventory_rules
from placement.storage import changes
from placement.storage import exceptions
from placement.storage import providers_core
from placement.storage import resource_classes
from placement.storage import tables
from placement.storage.tables import ALLOC, INV, RP, RP_AGG, RP_TRAIT
from placement.storage import traits


def _create_conflict(error, uuid, name):
    """The storage error for an IntegrityError from the provider INSERT.

    The unique constraints, not a prior SELECT, detect duplicates: that
    keeps a create to two statements and is race-free.  The database names
    the constraint it hit (one of them when both uuid and name clash, as
    with upstream); a foreign key failure means the parent went away
    between our lookup and the insert.
    """
    orig = error.orig
    diag = getattr(orig, 'diag', None)
    which = (getattr(diag, 'constraint_name', None) or str(orig)).lower()
    if 'uuid' in which:
        return exceptions.Duplicate(
            'Conflicting resource provider uuid: %s already exists.' % uuid)
    if 'name' in which:
        return exceptions.Duplicate(
            'Conflicting resource provider name: %s already exists.' % name)
    if 'foreign key' in which or which.startswith('fk_'):
        return _parent_missing(name, uuid)
    return None


def _parent_missing(name, uuid):
    return exceptions.InvalidInput(
        'Unable to create resource provider "%s", %s: Object action create '
        'failed because: parent provider UUID does not exist.' % (name, uuid))


# Built once: creation is the hot write of a deployment's start-up.
_INSERT = RP.insert().returning(RP.c.id)
_MAKE_ROOT = (RP.update()
              .where(RP.c.id == sa.bindparam('provider_id'))
              .values(root_provider_id=sa.bindparam('provider_id'),
                      updated_at=sa.bindparam('updated_at')))


def create(conn, name, uuid=None, parent_provider_uuid=None):
    """Create a provider and return it (as ``providers_core`` reads it)."""
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    if not name:
        # The schema allows an empty name; upstream refuses it on create
        # only (a rename to "" is accepted), in these words.
        raise exceptions.InvalidInput(
            'Unable to create resource provider "%s", %s: Object action '
            'create failed because: name is required' % (name, uuid))
    parent = None
    if parent_provider_uuid is not None:
        if parent_provider_uuid == uuid:
            raise exceptions.InvalidInput(
                'Unable to create resource provider "%s", %s: parent '
                'provider UUID cannot be same as UUID. Please set parent '
                'provider UUID to None if there is no parent.' % (name, uuid))
        parent = providers_core.find_by_uuid(conn, parent_provider_uuid)
        if parent is None:
            raise _parent_missing(name, uuid)
    now = tables.utcnow()
    try:
        provider_id = conn.execute(_INSERT, {
            'uuid': uuid, 'name': name, 'generation': 0,
            'parent_provider_id': parent['id'] if parent else None,
            'root_provider_id': parent['root_provider_id'] if parent
            else None,
            'created_at': now}).scalar_one()
    except sa_exc.IntegrityError as error:
        conflict = _create_conflict(error, uuid, name)
        if conflict is None:
            raise
        raise conflict from None
    # The tree's root too: a process keeps a tree's listing until the
    # log names one of the providers listed (``state.listing``).
    changes.touch(conn, provider_id,
                  *([parent['root_provider_id']] if parent else []))
    if parent is None:
        # A root is its own root, which needs the id the INSERT made.
        conn.execute(_MAKE_ROOT, {'provider_id': provider_id,
                                  'updated_at': now})
    return {
        'id': provider_id, 'uuid': uuid, 'name': name, 'generation': 0,
        'parent_provider_id': parent['id'] if parent else None,
        'root_provider_id': (parent['root_provider_id'] if parent
                             else provider_id),
        'created_at': now, 'updated_at': None if parent else now,
        'parent_provider_uuid': parent['uuid'] if parent else None,
        'root_provider_uuid': (parent['root_provider_uuid'] if parent
                               else uuid),
    }


# -- update ----------------------------------------------------------------

UNCHANGED = object()


def _subtree_ids(conn, provider_id):
    """Ids of the provider and every provider below it."""
    below = RP.alias('below')
    subtree = (sa.select(RP.c.id).where(RP.c.id == provider_id)
               .cte('subtree', recursive=True))
    subtree = subtree.union_all(
        sa.select(below.c.id)
        .join(subtree, below.c.parent_provider_id == subtree.c.id))
    return {row.id for row in conn.execute(sa.select(subtree.c.id))}


def _save_error(uuid, action, reason):
    return exceptions.InvalidInput(
        'Unable to save resource provider %s: Object action %s failed '
        'because: %s' % (uuid, action, reason))


def _new_place(conn, provider, parent_uuid, allow_reparenting):
    """(parent id, root id) the provider moves to, checked as upstream.

    Before 1.37 a provider may only gain a parent, never change or lose
    it; a provider can never go below itself.  Upstream reports a missing
    parent as a failed "create" even here, and so do we.
    """
    if parent_uuid is None:
        if provider['parent_provider_id'] is not None and (
                not allow_reparenting):
            raise _save_error(provider['uuid'], 'update',
                              'un-parenting a provider is not currently '
                              'allowed.')
        return None, provider['id']
    parent = providers_core.find_by_uuid(conn, parent_uuid)
    if parent is None:
        raise _save_error(provider['uuid'], 'create',
                          'parent provider UUID does not exist.')
    if provider['parent_provider_id'] not in (None, parent['id']) and (
            not allow_reparenting):
        raise _save_error(provider['uuid'], 'update',
                          're-parenting a provider is not currently '
                          'allowed.')
    if parent['id'] in _subtree_ids(conn, provider['id']):
        raise _save_error(provider['uuid'], 'update',
                          'creating loop in the provider tree is not '
                          'allowed.')
    return parent['id'], parent['root_provider_id']


def _raise_if_name_taken(conn, name, provider_id):
    taken = conn.execute(sa.select(RP.c.id).where(
        RP.c.name == name, RP.c.id != provider_id)).first()
    if taken:
        raise exceptions.Duplicate(
            'Conflicting resource provider %s already exists.' % name)


def update(conn, uuid, name, parent_provider_uuid=UNCHANGED,
           allow_reparenting=False):
    """Rename and (unless UNCHANGED) re-parent a provider.

    A move re-roots the provider's whole subtree.  The generation is not
    touched: it guards inventories, traits, aggregates and allocations,
    none of which change here.  Returns (provider before, provider after).
    """
    provider = providers_core.get_by_uuid(conn, uuid)
    changes.touch(conn)     # what changes, _apply_update names
    values = {}
    if parent_provider_uuid is not UNCHANGED:
        parent_id, root_id = _new_place(
            conn, provider, parent_provider_uuid, allow_reparenting)
        if parent_id != provider['parent_provider_id']:
            values['parent_provider_id'] = parent_id
        if root_id != provider['root_provider_id']:
            values['root_provider_id'] = root_id
    if name != provider['name']:
        _raise_if_name_taken(conn, name, provider['id'])
        values['name'] = name
    if values:
        try:
            with conn.begin_nested():
                _apply_update(conn, provider['id'], values)
        except sa_exc.IntegrityError:
            # Lost a race: the name was taken or the parent deleted.
            _raise_if_name_taken(conn, name, provider['id'])
            raise _save_error(uuid, 'update',
                              'parent provider UUID does not exist.')
    return provider, providers_core.get_by_uuid(conn, uuid)


def _apply_update(conn, provider_id, values):
    changes.touch(conn, provider_id)
    if 'root_provider_id' in values:
        # The subtree, and the root of the tree it joins (see create).
        subtree = _subtree_ids(conn, provider_id)
        changes.touch(conn, *subtree, values['root_provider_id'])
        conn.execute(
            RP.update()
            .where(RP.c.id.in_(subtree),
                   RP.c.id != provider_id,
                   RP.c.root_provider_id != values['root_provider_id'])
            .values(root_provider_id=values['root_provider_id']))
    conn.execute(RP.update().where(RP.c.id == provider_id)
                 .values(**values))


# -- delete ----------------------------------------------------------------

def delete(conn, uuid):
    """Delete a provider with its inventories, traits and aggregate links.

    Refused (Conflict) while it has children or allocations.
    """
    provider = providers_core.find_by_uuid(conn, uuid)
    if provider is None:
        raise exceptions.NotFound(
            'No resource provider with uuid %s found for delete' % uuid)
    provider_id = provider['id']
    changes.touch(conn, provider_id)
    child = conn.execute(sa.select(RP.c.id).where(
        RP.c.parent_provider_id == provider_id).limit(1)).first()
    if child is not None:
        raise _cannot_delete_parent(uuid)
    allocation = conn.execute(sa.select(ALLOC.c.id).where(
        ALLOC.c.resource_provider_id == provider_id).limit(1)).first()
    if allocation is not None:
        raise exceptions.Conflict(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % uuid, code=exceptions.codes.PROVIDER_IN_USE)
    # The foreign keys cascade, but a database upstream created does not
    # have that, so the dependent rows go explicitly.
    for table in (INV, RP_AGG, RP_TRAIT):
        conn.execute(table.delete().where(
            table.c.resource_provider_id == provider_id))
    try:
        with conn.begin_nested():
            # A root refers to itself, and InnoDB checks that reference
            # before the row is gone: it would refuse to delete any root.
            conn.execute(RP.update().where(RP.c.id == provider_id)
                         .values(root_provider_id=None))
            conn.execute(RP.delete().where(RP.c.id == provider_id))
    except sa_exc.IntegrityError:
        # A child appeared since we looked.
        raise _cannot_delete_parent(uuid)


def _cannot_delete_parent(uuid):
    return exceptions.Conflict(
        'Unable to delete parent resource provider %s: It has child '
        'resource providers.' % uuid,
        code=exceptions.codes.PROVIDER_CANNOT_DELETE_PARENT)


# -- listing ---------------------------------------------------------------

# No inventory can hold more than its max_unit, an Integer column; larger
# amounts are never satisfiable and must not reach SQLite's 64-bit binds.
_MAX_AMOUNT = 2147483647


class UnknownTrait(exceptions.NotFound):
    """A trait named in a filter does not exist."""


class UnknownResourceClass(exceptions.NotFound):
    """A resource class named in a filter does not exist."""


@dataclasses.dataclass
class Filters:
    """What providers can be listed by; an empty value filters nothing.

    ``member_of`` and ``required_traits`` are lists of sets: a provider
    must match every set, and matches a set through any one of its members.
    ``resources`` maps resource class names to amounts the provider must
    still have room for.
    """
    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    resources: dict = dataclasses.field(default_factory=dict)


def _with_capacity(amounts):
    """Providers with room for every {class id: amount} in ``amounts``.

    As upstream: what is left of (total - reserved) * allocation_ratio
    after current usage must cover the amount, which must also fit the
    inventory's min_unit, max_unit and step_size.  All classes are checked
    in one pass over the inventories (a provider qualifies when each of
    its rows for the requested classes passes), so the database plans a
    single semi-join however many classes are asked for.
    """
    if any(amount > _MAX_AMOUNT for amount in amounts.values()):
        return sa.false()
    amount = sa.case(
        {class_id: sa.literal(amount)
         for class_id, amount in amounts.items()},
        value=INV.c.resource_class_id)
    return RP.c.id.in_(
        sa.select(INV.c.resource_provider_id)
        .where(INV.c.resource_class_id.in_(list(amounts)),
               INV.c.min_unit <= amount,
               INV.c.max_unit >= amount,
               amount % INV.c.step_size == 0,
               providers_core.inventory_usage() + amount
               <= inventory_rules.scaled(INV.c.total, INV.c.reserved,
                                         INV.c.allocation_ratio))
        .group_by(INV.c.resource_provider_id)
        .having(sa.func.count() == len(amounts)))


class _NothingMatches(Exception):
    """Upstream would stop here and answer an empty list."""


def _first_unknown(names, known):
    for name in names:
        if name not in known:
            return name
    return None


def _raise_unless_a_filter_matches_nothing(conn, error, *filters):
    """Raise ``error``, unless one of ``filters`` (each a list of
    conditions that must all hold) matches no provider at all: upstream
    stops at such a filter and never gets to the name it cannot find."""
    for conditions in filters:
        if conditions and conn.execute(
                sa.select(RP.c.id).where(*conditions).limit(1)
        ).first() is None:
            raise _NothingMatches()
    raise error


def _plain_conditions(conn, filters):
    conditions = []
    if filters.name:
        conditions.append(RP.c.name == filters.name)
    if filters.uuid:
        conditions.append(RP.c.uuid == filters.uuid)
    if filters.in_tree:
        root_id = conn.scalar(sa.select(tables.root_of(RP))
                              .where(RP.c.uuid == filters.in_tree))
        if root_id is None:
            raise _NothingMatches()
        # The root itself by its id: see tables.root_of.
        conditions.append(sa.or_(RP.c.root_provider_id == root_id,
                                 RP.c.id == root_id))
    return conditions


def _trait_conditions(conn, filters):
    """(required, forbidden) trait conditions."""
    required_names = [name for names in filters.required_traits
                      for name in sorted(names)]
    forbidden_names = sorted(filters.forbidden_traits)
    trait_ids = traits.trait_ids_by_name(conn,
                                         required_names + forbidden_names)
    unknown = _first_unknown(required_names, trait_ids)
    if unknown is not None:
        raise UnknownTrait('No such trait(s): %s.' % unknown)
    required = [providers_core.having_any_trait(
        [trait_ids[name] for name in names])
        for names in filters.required_traits]
    unknown = _first_unknown(forbidden_names, trait_ids)
    if unknown is not None:
        _raise_unless_a_filter_matches_nothing(
            conn, UnknownTrait('No such trait(s): %s.' % unknown), required)
    if not forbidden_names:
        return required, []
    return required, [sa.not_(providers_core.having_any_trait(
        [trait_ids[name] for name in forbidden_names]))]


def _aggregate_conditions(filters):
    """(member, forbidden) aggregate conditions."""
    members = [providers_core.in_any_aggregate(uuids)
               for uuids in filters.member_of]
    if not filters.forbidden_aggregates:
        return members, []
    return members, [sa.not_(providers_core.in_any_aggregate(
        filters.forbidden_aggregates))]


def _capacity_conditions(conn, filters, *earlier_filters):
    if not filters.resources:
        return []
    class_ids = resource_classes.ids_by_name(conn, filters.resources)
    unknown = _first_unknown(filters.resources, class_ids)
    if unknown is not None:
        _raise_unless_a_filter_matches_nothing(
            conn, UnknownResourceClass('No such resource class %s.' % unknown),
            *earlier_filters)
    return [_with_capacity({class_ids[name]: amount
                            for name, amount in filters.resources.items()})]


def list_providers(conn, filters):
    """Providers matching every filter, in id order (read-only mappings).

    Everything is filtered in one SQL query.  Unknown names are errors,
    raised in upstream's order and only where upstream would get that far:
    upstream answers "nothing" as soon as the tree, the required traits or
    the aggregates match no provider, before it resolves later names.
    """
    try:
        plain = _plain_conditions(conn, filters)
        required_traits, forbidden_traits = _trait_conditions(conn, filters)
        members, forbidden_aggregates = _aggregate_conditions(filters)
        capacity = _capacity_conditions(conn, filters, required_traits,
                                        members)
    except _NothingMatches:
        return []
    query = providers_core.provider_select().where(
        *plain, *required_traits, *forbidden_traits, *members,
        *forbidden_aggregates, *capacity).order_by(RP.c.id)
    return conn.execute(query).mappings().all()
