"""Each request group's constraints, one at a time, with what each removed.

The candidate search (``groups``) filters a group in one pass and keeps
only what passes; it cannot say why a provider or a tree fell out.  This
module filters the same way, constraint after constraint, and counts.

A group's candidates are kept as *pairs*: a provider and a tree it could
serve (its own, and for a sharing provider every tree it shares an
aggregate with).  A granular group has one *slot* (one provider gives
all its resources); the unsuffixed group has one slot per resource class
(each class may come from a different provider).  A tree is still
possible for a group while every slot has a pair for it.

Each step counts only what is still in play when it runs: once a tree is
no longer possible, every pair for it is out, and a provider with no
pair left is out of play.  So the counts add up from step to step: a
step's kept and removed providers sum to the kept of the step before it
when both apply to the same slots, and its kept and removed trees to the
trees kept before it, always.

Unknown names are not errors here (the handler has already answered
them as ``GET /allocation_candidates`` does): an unknown class, trait,
aggregate or tree is simply held by nobody.

Nothing here knows about HTTP.
"""

import dataclasses

from placement.candidates import combine
from placement.candidates import filters
from placement.state import queries

EXAMPLES = 5


@dataclasses.dataclass
class Step:
    """One constraint of one group, and what it did.

    ``detail`` says what was asked (JSON-ready), ``phrase`` how the
    summary names the trees it removed; ``examples`` are (provider id,
    reason) of providers it removed; ``removed_trees`` the root ids.
    """
    constraint: str
    detail: dict
    phrase: str
    providers_kept: int = 0
    providers_removed: int = 0
    trees_kept: int = 0
    removed_trees: set = dataclasses.field(default_factory=set)
    examples: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Check:
    """A constraint to apply: ``pair(provider, anchor)`` or
    ``tree(anchor)`` answers the reason it fails, None when it holds;
    ``slot`` limits it to one class's slot of the unsuffixed group."""
    constraint: str
    detail: dict
    phrase: str
    pair: object = None
    tree: object = None
    slot: object = 'all'


def capacity_reason(name, record, amount):
    """Why ``amount`` of class ``name`` does not fit ``record``, in the
    operator's terms: ``queries.misfit``'s check put in words; None when
    it fits."""
    failed = queries.misfit(record, amount)
    if failed is None:
        return None
    if failed == 'inventory':
        return '%s: no inventory' % name
    if failed == 'free':
        return '%s: needs %d, free %d = (%d - %d reserved) x %s - %d used' % (
            name, amount, record.free, record.total, record.reserved,
            record.allocation_ratio, record.used)
    if failed == 'step_size':
        return '%s: needs %d, not a multiple of step_size %d' % (
            name, amount, record.step_size)
    return '%s: needs %d, %s %d' % (name, amount, failed,
                                    getattr(record, failed))


def _names(names):
    return ', '.join(sorted(names))


class _Group:
    """One group's pairs, slot by slot, narrowed check after check."""

    def __init__(self, state, group, anchors_of):
        self.state = state
        self.group = group
        keys = ([None] if group.granular or not group.resources
                else list(group.resources))
        self.slots = {key: {pid: set(anchors_of(provider))
                            for pid, provider in state.providers.items()}
                      for key in keys}

    def _live(self, slots):
        providers = set()
        for key in slots:
            providers.update(pid for pid, anchors in self.slots[key].items()
                             if anchors)
        return providers

    def alive_trees(self):
        """The roots every slot still has a pair for."""
        alive = None
        for pairs in self.slots.values():
            anchors = set().union(*pairs.values()) if pairs else set()
            alive = anchors if alive is None else alive & anchors
        return alive or set()

    def _out_of_play(self, alive):
        """Drop every pair for a tree no longer possible."""
        for pairs in self.slots.values():
            for anchors in pairs.values():
                anchors.intersection_update(alive)

    def apply(self, check):
        slots = list(self.slots) if check.slot == 'all' else [check.slot]
        before = self._live(slots)
        trees_before = self.alive_trees()
        step = Step(check.constraint, check.detail, check.phrase)
        reasons = {}
        if check.tree is not None:
            failing = {anchor: check.tree(anchor) for anchor in trees_before}
            failing = {a: why for a, why in failing.items() if why}
        providers = self.state.providers
        for key in slots:
            for pid, anchors in self.slots[key].items():
                if not anchors:
                    continue
                for anchor in list(anchors):
                    if check.tree is not None:
                        why = failing.get(anchor)
                    else:
                        why = check.pair(providers[pid], anchor)
                    if why:
                        anchors.discard(anchor)
                        reasons.setdefault(pid, why)
        trees_after = self.alive_trees()
        self._out_of_play(trees_after)
        after = self._live(slots)
        for pid in before - after:
            reasons.setdefault(pid, 'no tree it could serve is left')
        step.providers_kept = len(after)
        step.providers_removed = len(before - after)
        step.trees_kept = len(trees_after)
        step.removed_trees = trees_before - trees_after
        step.examples = [(pid, reasons[pid])
                         for pid in sorted(before - after)[:EXAMPLES]]
        return step


class _Checks:
    """The checks of one group, in the order they are applied."""

    def __init__(self, state, group, funnel):
        self.state = state
        self.group = group
        self.funnel = funnel
        self.where = ' (group %s)' % group.suffix if group.granular else ''

    def _slot(self, name):
        return name if not self.group.granular else None

    def _trait_id(self, name):
        return self.state.trait_id(name)

    def resource_checks(self):
        state = self.state
        for name in self.group.resources:
            class_id = state.class_id(name)
            yield _Check(
                'resource_class', {'resource_class': name},
                'have no %s inventory%s' % (name, self.where),
                pair=lambda provider, _, class_id=class_id, name=name: (
                    None if class_id in provider.inventory
                    else 'no %s inventory' % name),
                slot=self._slot(name))
        for name, amount in self.group.resources.items():
            class_id = state.class_id(name)
            yield _Check(
                'capacity', {'resource_class': name, 'amount': amount},
                'cannot fit %s (need %d)%s' % (name, amount, self.where),
                pair=lambda provider, _, class_id=class_id, name=name,
                amount=amount: capacity_reason(
                    name, provider.inventory.get(class_id), amount),
                slot=self._slot(name))

    def trait_checks(self):
        group = self.group
        singles = sorted(next(iter(any_of)) for any_of in
                         group.required_traits if len(any_of) == 1)
        sets = [any_of for any_of in group.required_traits
                if len(any_of) > 1]
        cumulative = []
        if singles:
            cumulative.append([{name} for name in singles])
            yield self._required('required_traits', {'traits': singles},
                                 'lack trait%s %s%s' % (
                                     's' if len(singles) > 1 else '',
                                     _names(singles), self.where),
                                 cumulative[-1])
        for any_of in sets:
            cumulative.append((cumulative[-1] if cumulative else [])
                              + [set(any_of)])
            yield self._required('any_of_traits',
                                 {'traits': sorted(any_of)},
                                 'have none of traits %s%s' % (
                                     _names(any_of), self.where),
                                 cumulative[-1])
        if group.forbidden_traits:
            forbidden = {self._trait_id(name)
                         for name in group.forbidden_traits} - {None}
            yield _Check(
                'forbidden_traits',
                {'traits': sorted(group.forbidden_traits)},
                'have forbidden trait %s%s' % (
                    _names(group.forbidden_traits), self.where),
                pair=lambda provider, _: (
                    None if queries.traits_pass(provider, (), forbidden) else
                    'has trait %s' % _names(self.state.trait_name(t) for t
                                            in provider.traits & forbidden)))

    def _required(self, constraint, detail, phrase, sets):
        ids = [frozenset(self._trait_id(name) for name in any_of) - {None}
               for any_of in sets]
        if self.group.granular:
            return _Check(constraint, detail, phrase, pair=lambda p, _: (
                None if queries.traits_pass(p, ids, ()) else
                _missing(p.traits, sets, ids)))
        return _Check(constraint, detail, phrase, tree=lambda anchor: (
            self._together(anchor, sets, ids)))

    def _together(self, anchor, sets, ids):
        """The unsuffixed group's traits are held by its providers
        together: whether some choice of a provider per class for
        ``anchor`` holds one of each set."""
        if any(not any_of for any_of in ids):
            return 'no provider has %s' % _names(
                next(s for s, i in zip(sets, ids) if not i))
        wanted = frozenset().union(*ids)
        providers = self.state.providers
        slots = [combine.Slot('', False, (), [
            pid for pid, anchors in pairs.items() if anchor in anchors])
            for pairs in self.funnel.slots.values()]
        traits = {pid: providers[pid].traits & wanted
                  for slot in slots for pid in slot.providers}
        found = next(combine.answers(slots, combine.Constraints(
            inventory={}, required_traits=ids, traits=traits)), None)
        if found is None:
            return 'the providers its tree can use hold no %s together' % (
                ' and '.join(_names(any_of) for any_of in sets))
        return None

    def aggregate_checks(self):
        group, state = self.group, self.state
        if group.member_of:
            members = queries.in_every(state, group.member_of)
            detail = {'aggregates': [sorted(s) for s in group.member_of]}
            phrase = 'are not in %s%s' % (' and '.join(
                _aggregates(s) for s in group.member_of), self.where)
            if group.granular:
                pair = lambda p, _: None if queries.aggregates_pass(
                    p, group.member_of, ()) else _not_member(
                        p, group.member_of)
            else:
                pair = lambda p, anchor: None if (
                    p.id in members or (anchor == p.root
                                        and anchor in members)
                ) else _not_member(p, group.member_of) or (
                    'its root is not in every aggregate')
            yield _Check('member_of', detail, phrase, pair=pair)
        if group.forbidden_aggregates:
            bad = group.forbidden_aggregates
            bad_ids = queries.in_any(state, bad)
            phrase = 'are in forbidden aggregate %s%s' % (_names(bad),
                                                          self.where)

            def pair(provider, anchor):
                if not provider.aggregates.isdisjoint(bad):
                    return 'in aggregate %s' % _names(provider.aggregates
                                                      & bad)
                if not group.granular and anchor in bad_ids:
                    return 'its tree root is in a forbidden aggregate'
                return None
            yield _Check('forbidden_aggregates',
                         {'aggregates': sorted(bad)}, phrase, pair=pair)

    def tree_checks(self):
        group = self.group
        if not group.in_tree:
            return
        tree_root = filters.root_of(self.state, group.in_tree)

        def pair(provider, anchor):
            if provider.root != tree_root:
                return 'not in tree %s' % group.in_tree
            if not group.granular and anchor != tree_root:
                return 'in_tree keeps it to its own tree'
            return None
        yield _Check('in_tree', {'tree': group.in_tree},
                     'are not in tree %s%s' % (group.in_tree, self.where),
                     pair=pair)

    def all(self):
        yield from self.resource_checks()
        yield from self.trait_checks()
        yield from self.aggregate_checks()
        yield from self.tree_checks()


def _missing(traits, sets, ids):
    """Which of ``sets`` (trait names; ``ids`` theirs) ``traits`` lacks,
    once ``queries.traits_pass`` has said it lacks one."""
    for names, any_of in zip(sets, ids):
        if traits.isdisjoint(any_of):
            return 'lacks %s%s' % ('any of ' if len(names) > 1 else '',
                                   _names(names))


def _aggregates(any_of):
    if len(any_of) == 1:
        return 'aggregate %s' % _names(any_of)
    return 'any of aggregates %s' % _names(any_of)


def _not_member(provider, member_of):
    for any_of in member_of:
        if provider.aggregates.isdisjoint(any_of):
            return 'not in %s' % _aggregates(any_of)
    return None


def run(state, group, anchors_of):
    """The group's steps, in the order they are applied."""
    funnel = _Group(state, group, anchors_of)
    checks = _Checks(state, group, funnel)
    return [funnel.apply(check) for check in checks.all()]
