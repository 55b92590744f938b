"""What the state answers about many providers at once: who is in
every aggregate of a set, who holds every class, whether a provider's
traits, aggregates and inventory let it serve a request.

Every function takes a ``providers.State`` (or one of its providers)
and plain values and returns plain values (ids, sets, lists): the
vocabulary the candidate search (``candidates.filters`` builds on it),
the listings and the overview read the state with.
"""


def in_every(state, member_of):
    """Ids of the providers in (an aggregate of) every set of
    ``member_of``."""
    found = None
    for uuids in member_of:
        members = in_any(state, uuids)
        found = members if found is None else found & members
    return found if found is not None else set()


def in_any(state, aggregate_uuids):
    """Ids of the providers in any of the aggregates."""
    return _members_of_any(state.in_aggregate, aggregate_uuids)


def _members_of_any(members_of, keys):
    """The union of ``members_of(key)`` (a set of provider ids the state
    keeps, not to be changed) over ``keys``, as a new set."""
    found = set()
    for key in keys:
        found |= members_of(key)
    return found


def holding_every(state, class_ids):
    """Ids of the providers with inventory of every class."""
    found = None
    for class_id in sorted(class_ids,
                           key=lambda c: len(state.holding_class(c))):
        members = state.holding_class(class_id)
        found = set(members) if found is None else found & members
        if not found:
            break
    return found if found is not None else set()


def holding_any(state, class_ids):
    """Ids of the providers with inventory of any of the classes."""
    return _members_of_any(state.holding_class, class_ids)


def holding_any_trait(state, trait_ids):
    """Ids of the providers with any of the traits."""
    return _members_of_any(state.holding_trait, trait_ids)


def traits_pass(provider, required, forbidden):
    """One trait id of each set of ``required``, none of ``forbidden``."""
    traits = provider.traits
    return (traits.isdisjoint(forbidden)
            and all(not traits.isdisjoint(any_of) for any_of in required))


def aggregates_pass(provider, member_of, forbidden_aggregates):
    """An aggregate of each set of ``member_of``, none of the
    forbidden."""
    aggregates = provider.aggregates
    return (aggregates.isdisjoint(forbidden_aggregates)
            and all(not aggregates.isdisjoint(uuids)
                    for uuids in member_of))


def misfit(record, amount):
    """Why ``amount`` of a class does not fit the provider's inventory
    ``record`` of it (None: it has none), as the first check it fails:
    ``'inventory'``, ``'min_unit'``, ``'max_unit'``, ``'step_size'`` or
    ``'free'`` (capacity less current usage); None when it fits.

    The one statement of the checks: ``with_room`` decides by it, and the
    explain funnel words the failed check (in this order) by it."""
    if record is None:
        return 'inventory'
    if amount < record.min_unit:
        return 'min_unit'
    if amount > record.max_unit:
        return 'max_unit'
    if amount % record.step_size:
        return 'step_size'
    if amount > record.free:
        return 'free'
    return None


def with_room(provider, amounts):
    """The class ids of ``amounts`` ({class id: amount}) the provider has
    room for (``misfit`` finds nothing)."""
    found = []
    records = provider.inventory
    for class_id, amount in amounts.items():
        if misfit(records.get(class_id), amount) is None:
            found.append(class_id)
    return found
