"""The filters of the candidate search, over the in-memory state, on
top of what the state answers itself (``state.queries``).

Every function takes the ``state.providers.State`` and plain values and
returns plain values (ids, sets, dicts).  A provider passes a request group when
it has room for each requested amount (capacity, min_unit, max_unit,
step_size, current usage), holds one trait of every required set and
none of the forbidden ones, and is in an aggregate of every ``member_of``
set and in none of the forbidden ones.
"""

from placement.storage import exceptions


class UnknownTrait(exceptions.NotFound):
    """A trait named in the request does not exist."""


class UnknownResourceClass(exceptions.NotFound):
    """A resource class named in the request does not exist."""


def class_ids(state, names):
    """{name: id}; UnknownResourceClass for the first unknown name."""
    ids = {}
    for name in names:
        ids[name] = state.class_id(name)
        if ids[name] is None:
            raise UnknownResourceClass('No such resource class %s.' % name)
    return ids


def trait_ids(state, names):
    """{name: id}; UnknownTrait for the first unknown name (sorted)."""
    ids = {name: state.trait_id(name) for name in names}
    for name in sorted(ids):
        if ids[name] is None:
            raise UnknownTrait('No such trait(s): %s.' % name)
    return ids


def roots(state, required=(), forbidden=()):
    """Ids of the roots holding every trait id of ``required`` and none
    of ``forbidden`` (root_required), ascending."""
    if not required and not forbidden:
        return state.roots()
    required = frozenset(required)
    providers = state.providers
    return [root for root in state.roots()
            if required <= providers[root].traits
            and providers[root].traits.isdisjoint(forbidden)]


def root_of(state, uuid):
    """The root id of the provider ``uuid``'s tree, or None."""
    provider = state.provider_by_uuid(uuid)
    return None if provider is None else provider.root


def drop_by_traits(state, found, required=(), forbidden=()):
    """``found`` (a set, changed in place) less the providers that lack
    one of each set of ``required`` trait ids or hold a ``forbidden``
    one."""
    for any_of in required:
        holders = set()
        for trait_id in any_of:
            holders |= state.holding_trait(trait_id)
        found &= holders
    for trait_id in forbidden:
        found -= state.holding_trait(trait_id)
    return found


def reaching(state, members):
    """Ids of the providers that are in ``members`` or in the tree of a
    root that is, and every sharing provider: those an unsuffixed group
    with ``member_of`` may use."""
    found = set(members) | state.sharing
    for member in members:
        found.update(state.members(member))
    return found


class Inventories:
    """{(provider id, class id): providers.Inventory}, read from the state
    as the search asks (it asks only where slots compete)."""

    def __init__(self, state):
        self.providers = state.providers

    def __getitem__(self, key):
        provider, class_id = key
        return self.providers[provider].inventory[class_id]


class Parents:
    """{provider id: parent id (None for a root)}, read from the state
    as the search asks (it asks about few of the providers)."""

    def __init__(self, state):
        self.providers = state.providers

    def get(self, provider):
        return self.providers[provider].parent
