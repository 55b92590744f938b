"""Each request group's candidate providers, per anchoring tree.

Names are resolved once per request (``resolve``), in upstream's order of
failure.  Providers are then loaded per *scope*: every tree at once, or a
page of trees (the page's roots, plus every sharing provider, which may
serve them), so that a request with a limit reads only as many trees as
its answer needs.  A group's candidates are keyed by the anchor: the root
of a tree the answer would be about.  A sharing provider anchors in its
own tree and in every tree it shares with.
"""

import collections
import dataclasses

from placement.candidates import combine
from placement.candidates import filters


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
class GroupCandidates:
    """One group's providers per anchor: a list of providers (granular)
    or {class id: providers} (unsuffixed)."""
    group: object
    amounts: dict
    by_anchor: dict


@dataclasses.dataclass
class Scope:
    """Where to look.  ``roots`` are the trees of a page (None: every
    tree whose root meets ``root_conditions``); ``allowed`` the anchors
    an answer may have (None: any)."""
    roots: list | None = None
    allowed: set | None = None
    root_conditions: list = dataclasses.field(default_factory=list)


def resolve(conn, group, class_names):
    """The group's names as ids, failing in upstream's order: an unknown
    class, aggregates nobody is in, an unknown trait, an unknown tree.
    Records each class's name in ``class_names``."""
    ids = filters.class_ids(conn, list(group.resources))
    for name, class_id in ids.items():
        class_names[class_id] = name
    if group.member_of and not filters.any_provider_in_every(
            conn, group.member_of):
        raise Empty()
    names = {name for any_of in group.required_traits
             for name in any_of} | group.forbidden_traits
    trait_ids = filters.trait_ids(conn, names) if names else {}
    tree_root = None
    if group.in_tree:
        tree_root = filters.root_of(conn, group.in_tree)
        if tree_root is None:
            raise Empty()
    return Resolved(
        group,
        {ids[name]: amount for name, amount in group.resources.items()},
        [{trait_ids[name] for name in any_of}
         for any_of in group.required_traits],
        {trait_ids[name] for name in group.forbidden_traits},
        tree_root)


class Loader:
    """Loads groups' candidates scope by scope, and keeps what the search
    needs to know about every provider it has seen."""

    def __init__(self, conn):
        self.conn = conn
        self.sharing = filters.sharing_providers(conn)
        self.inventory = {}         # (provider, class id) -> Inventory
        self.root_of = {}
        self.uuid_of = {}
        self.unsuffixed_traits = []
        self.provider_traits = {}
        self._scope = Scope()
        self._within = None
        self._sharing_anchors = {}

    def enter(self, scope):
        """Look at ``scope`` from now on."""
        self._scope = scope
        self._within = filters.page_condition(
            self.conn, scope.roots, self.sharing, scope.root_conditions)
        self._sharing_anchors = {}

    def load(self, resolved):
        """The group's GroupCandidates in the current scope (an empty
        ``by_anchor`` when none)."""
        if resolved.group.granular:
            return self._granular(resolved)
        return self._unsuffixed(resolved)

    # -- shared -----------------------------------------------------------

    def _within_tree(self, tree_root):
        conditions = [] if self._within is None else [self._within]
        if tree_root is not None:
            conditions.append(filters.in_tree(tree_root))
        return conditions

    def _allowed(self, anchor):
        allowed = self._scope.allowed
        return allowed is None or anchor in allowed

    def _remember(self, provider, root, uuid):
        self.root_of[provider] = root
        self.uuid_of[provider] = uuid

    def _anchors_of(self, provider_ids):
        """Load the anchors of the sharing providers among
        ``provider_ids`` (their own tree's root aside)."""
        missing = (set(provider_ids) & self.sharing) - set(
            self._sharing_anchors)
        if missing:
            found = filters.sharing_anchors(self.conn, missing,
                                            self._scope.roots)
            for provider_id in missing:
                self._sharing_anchors[provider_id] = found.get(provider_id,
                                                               set())

    def _anchors(self, provider_id, root_id):
        anchors = [root_id]
        if provider_id in self.sharing:
            anchors += sorted(self._sharing_anchors.get(provider_id, set())
                              - {root_id})
        return [anchor for anchor in anchors if self._allowed(anchor)]

    # -- granular groups --------------------------------------------------

    def _granular(self, resolved):
        group = resolved.group
        within = self._within_tree(resolved.tree_root)
        conditions = filters.provider_conditions(
            resolved.required, resolved.forbidden, group.member_of,
            group.forbidden_aggregates)
        if resolved.amounts:
            rows = filters.with_room(self.conn, resolved.amounts,
                                     self.inventory, within, conditions)
            classes_found = collections.Counter()
            for row in rows:
                classes_found[row.provider] += 1
                self._remember(row.provider, row.root, row.uuid)
            providers = [(provider, self.root_of[provider])
                         for provider, count in classes_found.items()
                         if count == len(resolved.amounts)]
        else:
            providers = []
            for provider, root, uuid in filters.providers_matching(
                    self.conn, within + conditions):
                self._remember(provider, root, uuid)
                providers.append((provider, root))
        self._anchors_of(provider for provider, _ in providers)
        by_anchor = collections.defaultdict(list)
        for provider, root in providers:
            for anchor in self._anchors(provider, root):
                by_anchor[anchor].append(provider)
        return GroupCandidates(group, resolved.amounts, by_anchor)

    # -- the unsuffixed group ---------------------------------------------

    def _unsuffixed_entries(self, resolved):
        """{class id: [(provider, anchor)]} before the tree intersection."""
        group = resolved.group
        within = self._within_tree(resolved.tree_root)
        conditions = filters.provider_conditions(
            forbidden_traits=resolved.forbidden)
        conditions += filters.unsuffixed_narrowing(
            self.conn, self.sharing, resolved.required, group.member_of)
        rows = filters.with_room(self.conn, resolved.amounts, self.inventory,
                                 within, conditions)
        for row in rows:
            self._remember(row.provider, row.root, row.uuid)
        members = None
        if group.member_of:
            members = filters.providers_in_every(self.conn, group.member_of,
                                                 within)
        sharing = set()
        if resolved.tree_root is None:
            sharing = {row.provider for row in rows} & self.sharing
            if members is not None:
                sharing &= members
            self._anchors_of(sharing)
        bad = (filters.providers_in_aggregates(
            self.conn, group.forbidden_aggregates, within)
            if group.forbidden_aggregates else set())
        entries = collections.defaultdict(list)
        for row in rows:
            anchors = [row.root]
            if row.provider in sharing:
                anchors += sorted(self._sharing_anchors[row.provider]
                                  - {row.root})
            for anchor in anchors:
                if not self._allowed(anchor):
                    continue
                if members is not None and not (
                        row.provider in members or anchor in members):
                    continue
                if row.provider in bad or anchor in bad:
                    continue
                entries[row.class_id].append((row.provider, anchor))
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
        if resolved.required:
            self.unsuffixed_traits = resolved.required
            providers = {provider for per_class in by_anchor.values()
                         for members in per_class.values()
                         for provider in members}
            self.provider_traits.update(filters.traits_among(
                self.conn, providers, set().union(*resolved.required)))
            by_anchor = {anchor: per_class
                         for anchor, per_class in by_anchor.items()
                         if self._traits_possible(per_class, amounts)}
        return GroupCandidates(resolved.group, amounts, by_anchor)

    def _traits_possible(self, per_class, amounts):
        """Whether some choice of one provider per class holds the
        unsuffixed group's required traits together."""
        slots = [combine.Slot('', False, (), per_class[class_id])
                 for class_id in sorted(amounts)]
        constraints = combine.Constraints(
            inventory=self.inventory,
            required_traits=self.unsuffixed_traits,
            traits=self.provider_traits)
        return next(combine.answers(slots, constraints), None) is not None
