"""Allocation candidates: the steps, in the order upstream takes them.

1. ``root_required`` narrows the trees that may anchor an answer.
2. Each request group, in request order, is resolved (classes, traits,
   aggregates, tree) and filtered in SQL to its candidate providers, per
   anchoring tree; a group nobody can satisfy ends the search with an
   empty answer before later groups are even looked at (as upstream,
   which therefore reports no unknown name in a later group then).
3. The trees every group can use are searched one by one
   (``combine``), lazily, until the answer is complete or has ``limit``
   (or ``[placement] max_allocation_candidates``) entries.
4. Provider summaries describe the trees the answer uses.

The result is plain data: a list of allocation requests, each
``(resources, mappings)`` with ``resources`` as {provider uuid: {class:
amount}} and ``mappings`` as {suffix: [provider uuid]}, and the provider
summaries as {provider uuid: summary}.
"""

import collections
import dataclasses
import itertools
import random

from placement.candidates import combine
from placement.candidates import filters


class _Empty(Exception):
    """Some part of the request matches nothing: the answer is empty."""


@dataclasses.dataclass
class _GroupCandidates:
    """One group's providers per anchoring tree.

    ``by_anchor`` maps an anchor root id to a list of providers (granular)
    or to {class id: providers} (unsuffixed).
    """
    group: object
    amounts: dict
    by_anchor: dict


class _Search:
    """The state of one request's search."""

    def __init__(self, conn, request, settings):
        self.conn = conn
        self.request = request
        self.settings = settings
        self.inventory = {}
        self.root_of = {}
        self.uuid_of = {}
        self.anchors_allowed = None
        self.sharing = set()
        self.sharing_anchors = {}
        self.unsuffixed_traits = []
        self.provider_traits = {}
        self.class_names = {}

    # -- step 1 -------------------------------------------------------------

    def restrict_anchors(self):
        request = self.request
        if not (request.root_required or request.root_forbidden):
            return
        ids = filters.trait_ids(
            self.conn, request.root_required | request.root_forbidden)
        self.anchors_allowed = filters.roots_with_traits(
            self.conn, {ids[name] for name in request.root_required},
            {ids[name] for name in request.root_forbidden})
        if not self.anchors_allowed:
            raise _Empty()

    def _remember(self, provider, root, uuid):
        self.root_of[provider] = root
        self.uuid_of[provider] = uuid

    def _allowed(self, anchor):
        return self.anchors_allowed is None or anchor in self.anchors_allowed

    # -- step 2 -------------------------------------------------------------

    def _anchors_for(self, provider_id, root_id):
        """Trees ``provider_id`` can serve: its own, and for a sharing
        provider those it shares with."""
        anchors = [root_id]
        if provider_id in self.sharing:
            anchors += sorted(self.sharing_anchors.get(provider_id, set())
                              - {root_id})
        return [anchor for anchor in anchors if self._allowed(anchor)]

    def _load_sharing_anchors(self, provider_ids):
        wanted = set(provider_ids) & self.sharing
        missing = wanted - set(self.sharing_anchors)
        if missing:
            found = filters.sharing_anchors(self.conn, missing)
            for provider_id in missing:
                self.sharing_anchors[provider_id] = found.get(provider_id,
                                                              set())

    def _resolve(self, group):
        """(amounts by class id, trait ids, member providers, tree root)
        in upstream's order of resolution and failure."""
        conn = self.conn
        ids = filters.class_ids(conn, list(group.resources))
        for name, class_id in ids.items():
            self.class_names[class_id] = name
        amounts = {ids[name]: amount
                   for name, amount in group.resources.items()}
        members = None
        if group.member_of:
            members = filters.providers_in_every(conn, group.member_of)
            if not members:
                raise _Empty()
        names = {name for any_of in group.required_traits
                 for name in any_of} | group.forbidden_traits
        trait_ids = filters.trait_ids(conn, names) if names else {}
        tree_root = None
        if group.in_tree:
            tree_root = filters.root_of(conn, group.in_tree)
            if tree_root is None:
                raise _Empty()
        return amounts, trait_ids, members, tree_root

    def granular(self, group):
        amounts, trait_ids, _, tree_root = self._resolve(group)
        conditions = filters.provider_conditions(
            [{trait_ids[name] for name in any_of}
             for any_of in group.required_traits],
            {trait_ids[name] for name in group.forbidden_traits},
            group.member_of, group.forbidden_aggregates)
        if amounts:
            rows = filters.with_room(self.conn, amounts, self.inventory,
                                     tree_root, conditions)
            classes_found = collections.defaultdict(int)
            for row in rows:
                classes_found[row.provider] += 1
                self._remember(row.provider, row.root, row.uuid)
            providers = [(provider, self.root_of[provider])
                         for provider, count in classes_found.items()
                         if count == len(amounts)]
        else:
            providers = []
            for provider, root, uuid in filters.providers_matching(
                    self.conn, tree_root, conditions):
                self._remember(provider, root, uuid)
                providers.append((provider, root))
        self._load_sharing_anchors(provider for provider, _ in providers)
        by_anchor = collections.defaultdict(list)
        for provider, root in providers:
            for anchor in self._anchors_for(provider, root):
                by_anchor[anchor].append(provider)
        return _GroupCandidates(group, amounts, by_anchor)

    def _unsuffixed_entries(self, group, amounts, members, tree_root,
                            forbidden):
        """{class id: [(provider, anchor)]} before the tree intersection."""
        conditions = filters.provider_conditions(forbidden_traits=forbidden)
        rows = filters.with_room(self.conn, amounts, self.inventory,
                                 tree_root, conditions)
        for row in rows:
            self._remember(row.provider, row.root, row.uuid)
        if tree_root is None:
            sharing = {row.provider for row in rows} & self.sharing
            if members is not None:
                sharing &= members
            self._load_sharing_anchors(sharing)
        else:
            sharing = set()
        bad = (filters.providers_in_aggregates(
            self.conn, group.forbidden_aggregates)
            if group.forbidden_aggregates else set())
        entries = collections.defaultdict(list)
        for row in rows:
            anchors = [row.root]
            if row.provider in sharing:
                anchors += sorted(self.sharing_anchors[row.provider]
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

    def unsuffixed(self, group):
        amounts, trait_ids, members, tree_root = self._resolve(group)
        entries = self._unsuffixed_entries(
            group, amounts, members, tree_root,
            {trait_ids[name] for name in group.forbidden_traits})
        if len(entries) < len(amounts):
            raise _Empty()
        common = set.intersection(*(
            {anchor for _, anchor in pairs} for pairs in entries.values()))
        by_anchor = {}
        for class_id in sorted(entries):
            for provider, anchor in entries[class_id]:
                if anchor in common:
                    by_anchor.setdefault(anchor, {}).setdefault(
                        class_id, []).append(provider)
        if group.required_traits:
            self.unsuffixed_traits = [
                {trait_ids[name] for name in any_of}
                for any_of in group.required_traits]
            providers = {provider for per_class in by_anchor.values()
                         for members_ in per_class.values()
                         for provider in members_}
            self.provider_traits = filters.traits_among(
                self.conn, providers,
                set().union(*self.unsuffixed_traits))
            by_anchor = {anchor: per_class
                         for anchor, per_class in by_anchor.items()
                         if self._traits_possible(per_class, amounts)}
        return _GroupCandidates(group, amounts, by_anchor)

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

    def candidates(self):
        """Each group's _GroupCandidates, in request order."""
        self.sharing = filters.sharing_providers(self.conn)
        result = []
        for group in self.request.groups:
            found = (self.granular(group) if group.granular
                     else self.unsuffixed(group))
            if not found.by_anchor:
                raise _Empty()
            result.append(found)
        return result

    # -- step 3 -------------------------------------------------------------

    def _templates(self, groups):
        """What each slot is, whatever the tree: (suffix, granular,
        amounts as ((class id, amount), ...), named amounts, where its
        providers come from: (group index, class id or None))."""
        templates = []
        for index, found in enumerate(groups):
            if found.group.granular:
                amounts = tuple(sorted(found.amounts.items()))
                templates.append((found.group.suffix, True, amounts,
                                  self._named(amounts), (index, None)))
                continue
            for class_id in sorted(found.amounts):
                amounts = ((class_id, found.amounts[class_id]),)
                templates.append(('', False, amounts, self._named(amounts),
                                  (index, class_id)))
        return templates

    def _named(self, amounts):
        return tuple((self.class_names[class_id], amount)
                     for class_id, amount in amounts)

    @staticmethod
    def _providers(groups, templates, anchor, shuffle):
        """Each slot's providers in the tree of ``anchor``."""
        lists = []
        for *_, (index, class_id) in templates:
            options = groups[index].by_anchor[anchor]
            options = options if class_id is None else options[class_id]
            if shuffle:
                options = random.sample(options, len(options))
            lists.append(options)
        return lists

    def _constraints(self, groups, anchors):
        """The constraints between slots; None when there are none, so
        that every combination of the slots' providers is an answer."""
        request = self.request
        parents = {}
        if request.same_subtrees:
            roots = set(anchors) | set(self.root_of.values())
            parents = filters.parents(self.conn, roots)
        classes = collections.Counter(
            class_id for found in groups for class_id in found.amounts)
        granular = sum(1 for found in groups if found.group.granular)
        if not (self.unsuffixed_traits or request.same_subtrees
                or (request.isolate and granular > 1)
                or any(count > 1 for count in classes.values())):
            return None
        return combine.Constraints(
            inventory=self.inventory, isolate=request.isolate,
            required_traits=self.unsuffixed_traits,
            traits=self.provider_traits,
            same_subtrees=request.same_subtrees, parents=parents)

    def _streams(self, groups, templates):
        """Per anchoring tree, the assignments (a provider per slot) that
        answer the request, lazily."""
        anchors = sorted(set.intersection(*(set(found.by_anchor)
                                            for found in groups)))
        shuffle = self.settings.randomize
        if shuffle:
            random.shuffle(anchors)
        constraints = self._constraints(groups, anchors)
        for anchor in anchors:
            providers = self._providers(groups, templates, anchor, shuffle)
            if constraints is None:
                yield itertools.product(*providers)
                continue
            yield combine.answers(
                [combine.Slot(suffix, granular, amounts, options)
                 for (suffix, granular, amounts, _, _), options
                 in zip(templates, providers)], constraints)

    def _interleaved(self, streams):
        if not self.settings.breadth_first:
            return itertools.chain.from_iterable(streams)
        return _round_robin(list(streams))

    def answers(self, groups):
        """The allocation requests, deduplicated, bounded and filtered:
        (resources as {uuid: {class: amount}}, mappings as {suffix:
        {uuid}}, the internal ids of the providers used)."""
        request, settings = self.request, self.settings
        uuid_of, root_of, sharing = self.uuid_of, self.root_of, self.sharing
        seen = set()
        kept = []
        produced = 0
        templates = self._templates(groups)
        for assignment in self._interleaved(
                self._streams(groups, templates)):
            resources = {}
            mappings = {}
            # Providers that give resources; those only placing a
            # resourceless group count for neither summaries nor trees.
            used = set()
            for (suffix, _, _, named, _), provider in zip(templates,
                                                         assignment):
                uuid = uuid_of[provider]
                if named:
                    used.add(provider)
                    amounts = resources.setdefault(uuid, {})
                    for name, amount in named:
                        amounts[name] = amounts.get(name, 0) + amount
                mappings.setdefault(suffix, set()).add(uuid)
            if sharing and sharing.issuperset(assignment):
                # An answer made of sharing providers alone comes again
                # from every other tree they all serve.
                key = (frozenset((uuid, name, amount)
                                 for uuid, amounts in resources.items()
                                 for name, amount in amounts.items()),
                       frozenset((suffix, frozenset(uuids))
                                 for suffix, uuids in mappings.items()))
                if key in seen:
                    continue
                seen.add(key)
            produced += 1
            if request.nested_aware or len(
                    {root_of[provider] for provider in used}) == len(used):
                kept.append((resources, mappings, used))
                if request.limit and len(kept) >= request.limit:
                    break
            if 0 <= settings.max_candidates <= produced:
                break
        return kept


def _round_robin(iterators):
    while iterators:
        still = []
        for iterator in iterators:
            for item in iterator:
                yield item
                still.append(iterator)
                break
        iterators = still


def _summaries(conn, request, answers, root_of, shows):
    """Provider summaries: every provider of every tree the answers use
    (before 1.29, only the providers they use)."""
    used = set().union(*(providers for _, _, providers in answers))
    members = filters.tree_members(conn, {root_of[p] for p in used})
    if not request.nested_aware:
        members = [member for member in members if member['id'] in used]
    ids = [member['id'] for member in members]
    resources = filters.inventory_summaries(conn, ids)
    traits = filters.trait_names(conn, ids) if shows['traits'] else {}
    requested = None
    if not shows['all_resources']:
        requested = {name for group in request.groups
                     for name in group.resources}
    summaries = {}
    for member in members:
        inventory = resources.get(member['id'], {})
        if requested is not None:
            inventory = {name: value for name, value in inventory.items()
                         if name in requested}
        summary = {'resources': inventory}
        if shows['traits']:
            summary['traits'] = traits.get(member['id'], [])
        if request.nested_aware:
            summary['parent_provider_uuid'] = member['parent_provider_uuid']
            summary['root_provider_uuid'] = member['root_provider_uuid']
        summaries[member['uuid']] = summary
    return summaries


def find(conn, request, settings, show_traits=True, show_all_resources=True):
    """(allocation requests, provider summaries) for ``request``; each
    allocation request is (resources, mappings) as the module says."""
    search = _Search(conn, request, settings)
    try:
        search.restrict_anchors()
        groups = search.candidates()
    except _Empty:
        return [], {}
    answers = search.answers(groups)
    if not answers:
        return [], {}
    summaries = _summaries(
        conn, request, answers, search.root_of,
        {'traits': show_traits, 'all_resources': show_all_resources})
    return [(resources, {suffix: sorted(uuids)
                         for suffix, uuids in mappings.items()})
            for resources, mappings, _ in answers], summaries
