"""Combining request groups within one anchoring tree, without a product.

An answer picks one provider per *slot*: each resource class of the
unsuffixed group is a slot (its classes may come from different providers
of the tree or from sharing providers), and each granular group is one
slot (all its resources from one provider).  The search assigns slots in
order, depth first, and checks every constraint as soon as the slots it
depends on are assigned:

- capacity: what the answer takes from a provider's class, summed over
  slots, must fit its free capacity and its max_unit;
- ``group_policy=isolate``: granular slots use distinct providers;
- the unsuffixed group's required traits, held by its providers together;
- each ``same_subtree``: one of the providers of its groups is an
  ancestor (or itself) of all the others.

A partial answer that breaks one is abandoned with everything below it,
so the work grows with the answers produced (and the dead ends next to
them), never with the product of all groups' providers.  Before searching
a tree, two bounds rule out trees that cannot work however slots are
assigned (the granular groups need more distinct providers than exist, or
more of a class than the tree has free), which keeps hopeless wide trees
cheap too.  Answers are generated lazily, so the caller stops the search
the moment it has enough.
"""

import collections
import dataclasses


@dataclasses.dataclass
class Slot:
    """One choice the search makes: a provider from ``providers`` gives
    ``amounts`` (((class id, amount), ...)) for group ``suffix``."""
    suffix: str
    granular: bool
    amounts: tuple
    providers: list


@dataclasses.dataclass
class Constraints:
    """What every answer must satisfy, beyond each slot's own filters.

    ``inventory`` maps (provider, class id) to its free capacity and
    max_unit; ``required_traits`` (the unsuffixed group's, as sets of
    trait ids) are checked against ``traits`` ({provider: trait ids});
    ``same_subtrees`` are sets of suffixes; ``parents`` maps provider ids
    to parent ids.
    """
    inventory: dict
    isolate: bool = False
    required_traits: list = dataclasses.field(default_factory=list)
    traits: dict = dataclasses.field(default_factory=dict)
    # The providers of ``traits`` that hold every required set alone.
    complete: set = dataclasses.field(default_factory=set)
    same_subtrees: list = dataclasses.field(default_factory=list)
    parents: dict = dataclasses.field(default_factory=dict)
    # Each provider's ancestors and itself, worked out once per request.
    ancestry: dict = dataclasses.field(default_factory=dict)
    # The slots' layouts, worked out once per request.
    layouts: dict = dataclasses.field(default_factory=dict)

    def ancestors(self, provider):
        """``provider`` and its ancestors, as a frozenset."""
        chain = self.ancestry.get(provider)
        if chain is None:
            parent = self.parents.get(provider)
            chain = frozenset((provider,)) if parent is None else (
                self.ancestors(parent) | {provider})
            self.ancestry[provider] = chain
        return chain

    def _chain(self, provider):
        chain = self.ancestry.get(provider)
        return self.ancestors(provider) if chain is None else chain

    def in_one_subtree(self, providers):
        """True if one of ``providers`` is an ancestor-or-self of all."""
        if len(providers) == 2:
            return self.pair_in_one_subtree(*providers)
        providers = set(providers)
        if len(providers) <= 1:
            return True
        ancestry = self.ancestry
        chains = []
        for provider in providers:
            chain = ancestry.get(provider)
            chains.append(self.ancestors(provider) if chain is None
                          else chain)
        return not providers.isdisjoint(frozenset.intersection(*chains))

    def pair_in_one_subtree(self, one, other):
        """True if ``one`` and ``other`` are one provider or one is the
        other's ancestor."""
        return (one == other or one in self._chain(other)
                or other in self._chain(one))


def holds_all(held, required):
    """Whether trait ids ``held`` include one of each ``required`` set."""
    return all(not held.isdisjoint(any_of) for any_of in required)


def traits_settled(option_lists, required, traits, complete):
    """Whether picking one provider from each list gives providers that
    hold one trait of each ``required`` set together: True when every
    pick does (each provider of some list holds them all), False when
    none can (all the providers together lack one), None when only a
    search can tell.  ``traits`` maps a provider to its trait ids;
    ``complete`` is the set of providers that hold them all alone."""
    if any(complete.issuperset(options) for options in option_lists):
        return True
    empty = frozenset()
    held = set()
    for options in option_lists:
        for provider in options:
            held |= traits.get(provider, empty)
    return None if holds_all(held, required) else False


def _matching_size(slots):
    """How many granular slots can get distinct providers at once
    (a maximum bipartite matching; slots and providers are few)."""
    owner = {}

    def assign(index, seen):
        for provider in slots[index].providers:
            if provider in seen:
                continue
            seen.add(provider)
            if provider not in owner or assign(owner[provider], seen):
                owner[provider] = index
                return True
        return False

    return sum(1 for index in range(len(slots)) if assign(index, set()))


def hopeless(slots, constraints, layout):
    """True when no assignment of ``slots`` can satisfy the bounds.

    Each slot's providers have room for that slot alone; only slots
    that compete (for a provider under isolate, or for a class) can
    rule the tree out."""
    if layout.isolated and shared(
            slots[index].providers for index in layout.isolated):
        granular = [slots[index] for index in layout.isolated]
        if _matching_size(granular) < len(granular):
            return True
    inventory = constraints.inventory
    for class_id, indexes in layout.contested_classes.items():
        needed = 0
        offered = set()
        for index in indexes:
            slot = slots[index]
            needed += dict(slot.amounts)[class_id]
            offered.update(slot.providers)
        if needed > sum(inventory[provider, class_id].free
                        for provider in offered):
            return True
    return False


def shared(provider_lists):
    """Whether a provider is in more than one of the lists."""
    seen = set()
    for providers in provider_lists:
        if not seen.isdisjoint(providers):
            return True
        seen.update(providers)
    return False


class _Layout:
    """What the search knows of the slots before it sees a tree's
    providers; the same for every tree of a request."""

    def __init__(self, slots, constraints):
        self.last_unsuffixed = max(
            (index for index, slot in enumerate(slots) if not slot.granular),
            default=-1)
        # Each same_subtree is checked once its last slot is assigned.
        self.subtrees_done_at = collections.defaultdict(list)
        for suffixes in constraints.same_subtrees:
            indexes = [index for index, slot in enumerate(slots)
                       if slot.suffix in suffixes]
            if indexes:
                self.subtrees_done_at[max(indexes)].append(indexes)
        self.checked = set(self.subtrees_done_at)
        if constraints.required_traits:
            self.checked.add(self.last_unsuffixed)
        self.contested_classes = contested_classes(
            [slot.amounts for slot in slots])
        self.contested = {index for indexes in self.contested_classes.values()
                          for index in indexes}
        self.isolated = isolated([slot.granular for slot in slots],
                                 constraints.isolate)


def contested_classes(amounts_by_slot):
    """{class id: indexes of the slots asking for it} for the classes
    more than one slot asks for (``amounts_by_slot``: each slot's
    (class id, amount) pairs): only there can what one slot takes leave
    too little for another."""
    askers = collections.defaultdict(list)
    for index, amounts in enumerate(amounts_by_slot):
        for class_id, _ in amounts:
            askers[class_id].append(index)
    return {class_id: indexes for class_id, indexes in askers.items()
            if len(indexes) > 1}


def isolated(granular_by_slot, isolate):
    """The indexes of the slots that must each have a provider of their
    own: the granular ones, under group_policy=isolate, when several."""
    granular = [index for index, is_granular in enumerate(granular_by_slot)
                if is_granular]
    return granular if isolate and len(granular) > 1 else []


def _layout(slots, constraints):
    key = tuple((slot.suffix, slot.granular, slot.amounts) for slot in slots)
    layout = constraints.layouts.get(key)
    if layout is None:
        layout = constraints.layouts[key] = _Layout(slots, constraints)
    return layout


class _TreeSearch:
    """The depth-first search over one tree's slots."""

    def __init__(self, slots, constraints, layout):
        self.slots = slots
        self.constraints = constraints
        self.layout = layout
        self.taken = collections.Counter()
        self.chosen = []
        self.granular_in_use = set()

    def _fits(self, provider, amounts):
        inventory = self.constraints.inventory
        for class_id, amount in amounts:
            total = self.taken[provider, class_id] + amount
            room = inventory[provider, class_id]
            if total > room.free or total > room.max_unit:
                return False
        return True

    def _holds_after(self, index):
        """The constraints that become checkable once slot ``index`` is
        assigned."""
        constraints, layout = self.constraints, self.layout
        if index == layout.last_unsuffixed and constraints.required_traits:
            held = set()
            for slot_index in range(index + 1):
                if not self.slots[slot_index].granular:
                    held |= constraints.traits.get(
                        self.chosen[slot_index], set())
            if not all(any_of & held
                       for any_of in constraints.required_traits):
                return False
        for indexes in layout.subtrees_done_at.get(index, ()):
            if not constraints.in_one_subtree(
                    [self.chosen[i] for i in indexes]):
                return False
        return True

    def run(self, index=0):
        if index == len(self.slots):
            yield tuple(self.chosen)
            return
        slot = self.slots[index]
        isolate = slot.granular and self.constraints.isolate
        contested = index in self.layout.contested
        checked = index in self.layout.checked
        for provider in slot.providers:
            if isolate and provider in self.granular_in_use:
                continue
            if contested and not self._fits(provider, slot.amounts):
                continue
            for class_id, amount in slot.amounts:
                self.taken[provider, class_id] += amount
            self.chosen.append(provider)
            if isolate:
                self.granular_in_use.add(provider)
            if not checked or self._holds_after(index):
                yield from self.run(index + 1)
            if isolate:
                self.granular_in_use.discard(provider)
            self.chosen.pop()
            for class_id, amount in slot.amounts:
                self.taken[provider, class_id] -= amount


def answers(slots, constraints):
    """Every assignment (a provider per slot, in slot order) of one
    tree's ``slots`` that meets ``constraints``, lazily."""
    layout = _layout(slots, constraints)
    if hopeless(slots, constraints, layout):
        return iter(())
    return _TreeSearch(slots, constraints, layout).run()
