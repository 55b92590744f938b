"""Each request group's candidate providers, per anchoring tree.

Names are resolved once per request (``resolve``), in upstream's order of
failure.  Providers are then filtered per *scope*: every tree at once, or
a page of trees (the page's roots, plus every sharing provider, which may
serve them), so that a request with a limit looks at only as many trees
as its answer needs.  A group's candidates are keyed by the anchor: the root
of a tree the answer would be about.  A sharing provider anchors in its
own tree and in every tree it shares with.
"""

import collections
import dataclasses

from placement.candidates import combine
from placement.candidates import filters
from placement.state import queries


class Empty(Exception):
    """Some part of the request matches nothing: the answer is empty."""


@dataclasses.dataclass
class Resolved:
    """A request group with its names resolved to internal ids."""
    group: object
    amounts: dict           # class id -> amount
    required: list          # sets of trait ids, one of each set needed
    forbidden: set          # trait ids
    tree_root: int | None   # in_tree, as the tree's root id


@dataclasses.dataclass
class TraitIndex:
    """What the search must know of the unsuffixed group's required
    traits, which its providers hold together rather than each:
    ``required`` (sets of trait ids, one of each set needed), ``held``
    ({provider id: the wanted trait ids it holds}) for every provider
    loaded so far, and ``complete``, those of them holding one of every
    set alone."""
    required: list
    held: dict = dataclasses.field(default_factory=dict)
    complete: set = dataclasses.field(default_factory=set)

    def __post_init__(self):
        self._wanted = frozenset().union(*self.required)

    def constraint_fields(self):
        """The combine.Constraints fields the index gives."""
        return dict(required_traits=self.required, traits=self.held,
                    complete=self.complete)

    def learn(self, by_anchor, state_providers):
        """Index the providers of ``by_anchor`` ({anchor: {class id:
        provider ids}}) not indexed yet."""
        wanted, required = self._wanted, self.required
        held, complete = self.held, self.complete
        for per_class in by_anchor.values():
            for members in per_class.values():
                for provider in members:
                    if provider not in held:
                        traits = held[provider] = (
                            state_providers[provider].traits & wanted)
                        if combine.holds_all(traits, required):
                            complete.add(provider)


@dataclasses.dataclass
class GroupCandidates:
    """One group's providers per anchor: a list of providers (granular)
    or {class id: providers} (unsuffixed); for the unsuffixed group with
    required traits, their TraitIndex (else None)."""
    group: object
    amounts: dict
    by_anchor: dict
    traits: TraitIndex | None = None


@dataclasses.dataclass
class Scope:
    """Where to look.  ``roots`` are the trees of a page (None: every
    tree); ``allowed`` the anchors an answer may have (None: any)."""
    roots: list | None = None
    allowed: set | None = None


def resolve(state, group, class_names):
    """The group's names as ids, failing in upstream's order: an unknown
    class, aggregates nobody is in, an unknown trait, an unknown tree.
    Records each class's name in ``class_names``."""
    ids = filters.class_ids(state, list(group.resources))
    for name, class_id in ids.items():
        class_names[class_id] = name
    if group.member_of and not queries.in_every(state, group.member_of):
        raise Empty()
    names = {name for any_of in group.required_traits
             for name in any_of} | group.forbidden_traits
    trait_ids = filters.trait_ids(state, names) if names else {}
    tree_root = None
    if group.in_tree:
        tree_root = filters.root_of(state, group.in_tree)
        if tree_root is None:
            raise Empty()
    return Resolved(
        group,
        {ids[name]: amount for name, amount in group.resources.items()},
        [frozenset(trait_ids[name] for name in any_of)
         for any_of in group.required_traits],
        frozenset(trait_ids[name] for name in group.forbidden_traits),
        tree_root)


class Loader:
    """Finds groups' candidates scope by scope, and keeps what the search
    needs to know about every provider it has seen."""

    def __init__(self, state):
        self.state = state
        self.sharing = state.sharing
        self.inventory = filters.Inventories(state)
        # The unsuffixed group's, grown scope after scope.
        self._trait_index = None
        self._scope = Scope()

    def enter(self, scope):
        """Look at ``scope`` from now on."""
        self._scope = scope

    def load(self, resolved):
        """The group's GroupCandidates in the current scope (an empty
        ``by_anchor`` when none)."""
        if resolved.group.granular:
            return self._granular(resolved)
        return self._unsuffixed(resolved)

    # -- shared -----------------------------------------------------------

    def _within(self, tree_root, candidates=None):
        """The providers the scope (and ``in_tree``) lets a group use, in
        id order: the scope's trees and every sharing provider; only
        those among ``candidates`` (ids, from the indexes: see
        ``_indexed``) unless it is None."""
        state, scope = self.state, self._scope
        providers = state.providers
        if tree_root is not None:
            ids = state.members(tree_root)
            if scope.allowed is not None and tree_root not in scope.allowed:
                ids = [id_ for id_ in ids if id_ in self.sharing]
        elif candidates is not None:
            if scope.allowed is None:
                ids = sorted(candidates)
            else:
                allowed, sharing = scope.allowed, self.sharing
                ids = sorted(id_ for id_ in candidates
                             if providers[id_].root in allowed
                             or id_ in sharing)
        elif scope.roots is None and scope.allowed is None:
            ids = state.ordered()
        else:
            roots = scope.roots if scope.roots is not None else scope.allowed
            ids = set(self.sharing)
            for root in roots:
                ids.update(state.members(root))
            ids = sorted(ids)
        return [providers[id_] for id_ in ids]

    def _indexed(self, resolved):
        """Whether to start from the state's indexes: when the group may
        use any tree; a page of trees or one tree is smaller than what
        the indexes would name."""
        return resolved.tree_root is None and self._scope.roots is None

    def anchors(self, provider, extra=True):
        """The anchors the provider may serve in this scope: its own root
        and, for a sharing provider, the roots it shares with."""
        allowed = self._scope.allowed
        anchors = [provider.root] if (
            allowed is None or provider.root in allowed) else []
        if extra and provider.id in self.sharing:
            shared, ordered = self.state.shared_roots(provider)
            if allowed is None:
                anchors += ordered
            elif len(allowed) < len(shared):
                anchors += sorted(root for root in allowed
                                  if root in shared)
            else:
                anchors += [root for root in ordered if root in allowed]
        return anchors

    # -- granular groups --------------------------------------------------

    def _granular(self, resolved):
        group = resolved.group
        amounts = resolved.amounts
        by_anchor = collections.defaultdict(list)
        candidates = (self._granular_candidates(resolved)
                      if self._indexed(resolved) else None)
        for provider in self._within(resolved.tree_root, candidates):
            if candidates is None and not (
                    queries.traits_pass(provider, resolved.required,
                                        resolved.forbidden)
                    and queries.aggregates_pass(
                        provider, group.member_of,
                        group.forbidden_aggregates)):
                continue
            if amounts and len(queries.with_room(
                    provider, amounts)) < len(amounts):
                continue
            for anchor in self.anchors(provider):
                by_anchor[anchor].append(provider.id)
        return GroupCandidates(group, amounts, by_anchor)

    def _granular_candidates(self, resolved):
        """The ids of the providers with every class of the group and the
        traits and aggregates it asks for, from the state's indexes."""
        group, state = resolved.group, self.state
        if resolved.amounts:
            found = queries.holding_every(state, resolved.amounts)
        else:
            found = set(state.providers)
        filters.drop_by_traits(state, found, resolved.required,
                               resolved.forbidden)
        if group.member_of:
            found &= queries.in_every(state, group.member_of)
        if group.forbidden_aggregates:
            found -= queries.in_any(state, group.forbidden_aggregates)
        return found

    # -- the unsuffixed group ---------------------------------------------

    def _unsuffixed_entries(self, resolved):
        """{class id: [(provider, anchor)]} before the tree intersection."""
        group = resolved.group
        members = (queries.in_every(self.state, group.member_of)
                   if group.member_of else None)
        bad = (queries.in_any(self.state, group.forbidden_aggregates)
               if group.forbidden_aggregates else set())
        candidates = None
        if self._indexed(resolved):
            candidates = filters.drop_by_traits(
                self.state, queries.holding_any(self.state, resolved.amounts),
                forbidden=resolved.forbidden)
            if members is not None:
                candidates &= filters.reaching(self.state, members)
        entries = collections.defaultdict(list)
        for provider in self._within(resolved.tree_root, candidates):
            if not provider.traits.isdisjoint(resolved.forbidden):
                continue
            classes = queries.with_room(provider, resolved.amounts)
            if not classes:
                continue
            shares = resolved.tree_root is None and (
                members is None or provider.id in members)
            for anchor in self.anchors(provider, extra=shares):
                if members is not None and not (
                        provider.id in members or anchor in members):
                    continue
                if provider.id in bad or anchor in bad:
                    continue
                for class_id in classes:
                    entries[class_id].append((provider.id, anchor))
        return entries

    def _unsuffixed(self, resolved):
        amounts = resolved.amounts
        empty = GroupCandidates(resolved.group, amounts, {})
        entries = self._unsuffixed_entries(resolved)
        if len(entries) < len(amounts):
            return empty
        common = set.intersection(*(
            {anchor for _, anchor in pairs} for pairs in entries.values()))
        by_anchor = {}
        for class_id in sorted(entries):
            for provider, anchor in entries[class_id]:
                if anchor in common:
                    by_anchor.setdefault(anchor, {}).setdefault(
                        class_id, []).append(provider)
        if not resolved.required:
            return GroupCandidates(resolved.group, amounts, by_anchor)
        index = self._trait_index
        if index is None:
            index = self._trait_index = TraitIndex(resolved.required)
        index.learn(by_anchor, self.state.providers)
        by_anchor = {anchor: per_class
                     for anchor, per_class in by_anchor.items()
                     if self._traits_possible(per_class, amounts, index)}
        return GroupCandidates(resolved.group, amounts, by_anchor, index)

    def _traits_possible(self, per_class, amounts, index):
        """Whether some choice of one provider per class holds the
        unsuffixed group's required traits together."""
        lists = [per_class[class_id] for class_id in sorted(amounts)]
        settled = combine.traits_settled(lists, index.required, index.held,
                                         index.complete)
        if settled is not None:
            return settled
        slots = [combine.Slot('', False, (), options) for options in lists]
        constraints = combine.Constraints(inventory=self.inventory,
                                          **index.constraint_fields())
        return next(combine.answers(slots, constraints), None) is not None
