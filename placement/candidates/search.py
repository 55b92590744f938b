"""Allocation candidates: the steps, in the order upstream takes them.

1. ``root_required`` narrows the trees that may anchor an answer, and
   each request group's names are resolved (``groups.resolve``).
2. Trees are looked at a page at a time when the answer is bounded
   (``limit`` or ``[placement] max_allocation_candidates``), all at once
   otherwise: per page, each group is filtered to its candidate providers
   per anchoring tree (``groups.Loader``).
3. The trees every group can use are searched one by one
   (``combine``), lazily, until the answer is complete or bounded; a
   bounded answer reads no page after the one that completes it.
4. Provider summaries describe the trees the answer uses
   (``summaries``).

Everything is read from the process's exact in-memory state
(``state.providers.State``).  The result is plain data, produced lazily
(``Found``): allocation requests, each ``(allocations, mappings)`` with
``allocations`` as {provider uuid: {'resources': {class: amount}}} (the
shape allocations have everywhere in the API) and ``mappings`` as
{suffix: [provider uuid]}, then the provider summaries as (provider
uuid, summary) pairs.
"""

import collections
import itertools
import math
import random

from placement.candidates import combine
from placement.candidates import filters
from placement.candidates import groups as group_loading
from placement.candidates import plan
from placement.candidates import summaries

# Trees looked at by the first page of a bounded answer, at least; each
# next page takes four times as many, so that a selective request needs
# few pages and an easy one filters little more than it answers.
_FIRST_PAGE = 16
_PAGE_GROWTH = 4
_LARGEST_PAGE = 4096
# A tree whose only constraint is same_subtree is answered by filtering
# the product of its slots when that has at most this many combinations
# (the search's bookkeeping costs more than checking so few), by the
# search otherwise (which prunes wide trees early).
_SMALL_PRODUCT = 64
# How a tree is answered (see _RequestSearch._way).
_PRODUCT, _FILTERED, _SEARCH = 'product', 'filtered', 'search'


class _RequestSearch:
    """The state of one request's search."""

    def __init__(self, state, request, settings):
        self.state = state
        self.request = request
        self.settings = settings
        self.loader = group_loading.Loader(state)
        self.class_names = {}
        self.root_traits = None
        self.resolved = []
        self.count = 0
        self.used = set()
        # Upstream's sample (randomize with max_allocation_candidates):
        # the first max_allocation_candidates in the order found,
        # shuffled, then the limit; without the maximum, a random order.
        self._sample = settings.randomize and settings.max_candidates >= 0
        self._shuffle = settings.randomize and not self._sample

    # -- step 1 -------------------------------------------------------------

    def resolve(self):
        """Resolve every name; group_loading.Empty when the answer is
        empty whatever the trees say."""
        request = self.request
        if request.root_required or request.root_forbidden:
            ids = filters.trait_ids(
                self.state, request.root_required | request.root_forbidden)
            self.root_traits = (
                {ids[name] for name in request.root_required},
                {ids[name] for name in request.root_forbidden})
            if not self._roots():
                raise group_loading.Empty()
        for group in request.groups:
            try:
                self.resolved.append(group_loading.resolve(
                    self.state, group, self.class_names))
            except (filters.UnknownResourceClass, filters.UnknownTrait):
                # Upstream filters group by group and stops at the first
                # that nobody can satisfy, before it looks at the names
                # of the next: such a request is answered, empty.
                self._fail_if_any_empty()
                raise

    def _fail_if_any_empty(self):
        self.loader.enter(self._everywhere())
        for resolved in self.resolved:
            if not self.loader.load(resolved).by_anchor:
                raise group_loading.Empty()

    # -- step 2 -------------------------------------------------------------

    def _roots(self):
        """The roots that may anchor an answer (root_required), in id
        order."""
        return filters.roots(self.state, *(self.root_traits or ()))

    def _everywhere(self):
        if self.root_traits is None:
            return group_loading.Scope()
        return group_loading.Scope(None, set(self._roots()))

    def _scopes(self):
        """The scopes to search, in order: every tree at once, or pages
        of trees when the answer is bounded and may come from anywhere."""
        bound = (self.settings.max_candidates if self._sample
                 else plan.answer_bound(self.request, self.settings))
        if bound is None or any(r.tree_root is not None
                                for r in self.resolved):
            yield self._everywhere()
            return
        size = min(max(bound, _FIRST_PAGE), _LARGEST_PAGE)
        roots = self._roots()
        if self._shuffle:
            roots = random.sample(roots, len(roots))
        start = 0
        while start < len(roots):
            page = roots[start:start + size]
            yield group_loading.Scope(page, set(page))
            start += size
            size = min(size * _PAGE_GROWTH, _LARGEST_PAGE)

    def _candidates(self, scope):
        """Each group's GroupCandidates in ``scope``; None when a group has
        none there."""
        self.loader.enter(scope)
        found = []
        for resolved in self.resolved:
            candidates = self.loader.load(resolved)
            if not candidates.by_anchor:
                return None
            found.append(candidates)
        return found

    # -- step 3 -------------------------------------------------------------

    @staticmethod
    def _providers(groups, templates, anchor, shuffle):
        """Each slot's providers in the tree of ``anchor``."""
        lists = []
        for template in templates:
            # plan.slot_providers, inline: this runs for every tree.
            options = groups[template.group].by_anchor[anchor]
            if template.class_id is not None:
                options = options[template.class_id]
            if shuffle:
                options = random.sample(options, len(options))
            lists.append(options)
        return lists

    def _constraints(self, groups):
        """The constraints between slots; None when there are none, so
        that every combination of the slots' providers is an answer."""
        request = self.request
        classes = collections.Counter(
            class_id for found in groups for class_id in found.amounts)
        granular = sum(1 for found in groups if found.group.granular)
        index = plan.trait_index(groups)
        if not (index or request.same_subtrees
                or (request.isolate and granular > 1)
                or any(count > 1 for count in classes.values())):
            return None
        return combine.Constraints(
            inventory=self.loader.inventory, isolate=request.isolate,
            same_subtrees=request.same_subtrees,
            parents=filters.Parents(self.state), **plan.trait_constraints(
                index))

    def _competing(self, templates):
        """Sets of slots that may compete for a provider: those asking for
        the same class, and the granular ones under isolate."""
        competing = list(combine.contested_classes(
            [template.amounts for template in templates]).values())
        isolated = combine.isolated(
            [template.granular for template in templates],
            self.request.isolate)
        if isolated:
            competing.append(isolated)
        return competing

    def _way(self, constraints, competing, unsuffixed, providers):
        """How to answer the tree whose slots have ``providers`` (a list
        of providers each): _PRODUCT when every combination is an answer
        (no provider that competing slots share, the unsuffixed group's
        required traits held by every pick, no same_subtree), _FILTERED
        when only same_subtree rules some out of a small product, else
        _SEARCH."""
        if constraints is None:
            return _PRODUCT
        if any(combine.shared(providers[index] for index in indexes)
               for indexes in competing):
            return _SEARCH
        if constraints.required_traits and not combine.traits_settled(
                [providers[index] for index in unsuffixed],
                constraints.required_traits, constraints.traits,
                constraints.complete):
            return _SEARCH
        if not constraints.same_subtrees:
            return _PRODUCT
        if math.prod(len(options) for options in providers) <= (
                _SMALL_PRODUCT):
            return _FILTERED
        return _SEARCH

    def _streams(self, templates):
        """Per anchoring tree, scope after scope, the assignments (a
        provider per slot) that answer the request, lazily."""
        shuffle = self._shuffle
        competing = self._competing(templates)
        unsuffixed = [index for index, template in enumerate(templates)
                      if not template.granular]
        subtrees = [indexes for indexes in (
            [index for index, template in enumerate(templates)
             if template.suffix in suffixes]
            for suffixes in self.request.same_subtrees) if indexes]
        for scope in self._scopes():
            groups = self._candidates(scope)
            if groups is None:
                continue
            anchors = set.intersection(*(set(found.by_anchor)
                                         for found in groups))
            if scope.roots is None:
                anchors = sorted(anchors)
                if shuffle:
                    random.shuffle(anchors)
            else:
                anchors = [root for root in scope.roots if root in anchors]
            constraints = self._constraints(groups)
            for anchor in anchors:
                providers = self._providers(groups, templates, anchor,
                                            shuffle)
                way = self._way(constraints, competing, unsuffixed,
                                providers)
                if way is _PRODUCT:
                    yield itertools.product(*providers)
                elif way is _FILTERED:
                    yield _in_subtrees(itertools.product(*providers),
                                       subtrees, constraints)
                else:
                    yield combine.answers(
                        [combine.Slot(template.suffix, template.granular,
                                      template.amounts, options)
                         for template, options in zip(templates, providers)],
                        constraints)

    def _assignments(self, templates):
        streams = self._streams(templates)
        if not self.settings.breadth_first:
            return itertools.chain.from_iterable(streams)
        return _round_robin(streams)

    def answers(self):
        """The allocation requests, deduplicated, bounded and filtered,
        one at a time: (allocations as {uuid: {'resources': {class:
        amount}}}, mappings as {suffix: [uuid, ...]} (sorted)); ``count``
        and ``used`` (the ids of the providers giving resources) follow
        them."""
        produced = self._produced()
        if self._sample:
            produced = list(produced)   # max_allocation_candidates at most
            random.shuffle(produced)
            if self.request.limit:
                del produced[self.request.limit:]
        for allocations, mappings, used in produced:
            self.used.update(used)
            self.count += 1
            yield allocations, mappings

    def _produced(self):
        """(allocations, mappings, the providers giving resources) of
        each answer, bounded by the limit (but for upstream's sample) and
        by max_allocation_candidates."""
        request, settings = self.request, self.settings
        limit = None if self._sample else request.limit
        providers, sharing = self.state.providers, self.state.sharing
        templates = plan.slot_templates(self.resolved, self.class_names)
        slots = [(template.suffix, template.named) for template in templates]
        # Providers that give resources; those only placing a resourceless
        # group count for neither summaries nor trees.
        every_slot_gives = all(named for _, named in slots)
        # An answer whose slots all name one provider (a compute node
        # giving everything) is built in one step.
        together = {}
        for _, named in slots:
            for name, amount in named:
                together[name] = together.get(name, 0) + amount
        suffixes = sorted({suffix for suffix, _ in slots})
        # What each slot gives, as the dict an answer starts from, and
        # whether some suffix has more than one slot (whose providers
        # are then sorted).
        given_by_slot = [(suffix, dict(named)) for suffix, named in slots]
        shared_suffix = len(suffixes) < len(slots)
        uuids = {}
        seen = set()
        produced = yielded = 0
        for assignment in self._assignments(templates):
            first = assignment[0]
            if every_slot_gives and assignment.count(first) == len(
                    assignment):
                uuid = uuids.get(first)
                if uuid is None:
                    uuid = uuids[first] = providers[first].uuid
                allocations = {uuid: {'resources': dict(together)}}
                mappings = {suffix: [uuid] for suffix in suffixes}
            else:
                allocations, mappings = self._one_answer(
                    given_by_slot, assignment, uuids, shared_suffix)
            if sharing and sharing.issuperset(assignment):
                # An answer made of sharing providers alone comes again
                # from every other tree they all serve.
                key = (frozenset((uuid, name, amount)
                                 for uuid, given in allocations.items()
                                 for name, amount
                                 in given['resources'].items()),
                       frozenset((suffix, frozenset(placed))
                                 for suffix, placed in mappings.items()))
                if key in seen:
                    continue
                seen.add(key)
            produced += 1
            used = assignment if every_slot_gives else [
                provider for (_, named), provider in zip(slots, assignment)
                if named]
            if request.nested_aware or _one_per_tree(providers, used):
                yielded += 1
                yield allocations, mappings, used
                if limit and yielded >= limit:
                    return
            if 0 <= settings.max_candidates <= produced:
                return

    def _one_answer(self, given_by_slot, assignment, uuids, shared_suffix):
        """(allocations, mappings) of one assignment of providers to
        slots (each slot as its suffix and the {class: amount} it
        gives); ``uuids`` caches each provider's uuid."""
        providers = self.state.providers
        allocations = {}
        mappings = {}
        for (suffix, gives), provider in zip(given_by_slot, assignment):
            uuid = uuids.get(provider)
            if uuid is None:
                uuid = uuids[provider] = providers[provider].uuid
            if gives:
                given = allocations.get(uuid)
                if given is None:
                    allocations[uuid] = {'resources': gives.copy()}
                else:
                    amounts = given['resources']
                    for name, amount in gives.items():
                        amounts[name] = amounts.get(name, 0) + amount
            placed = mappings.get(suffix)
            if placed is None:
                mappings[suffix] = [uuid]
            elif uuid not in placed:
                placed.append(uuid)
        if shared_suffix:
            for placed in mappings.values():
                if len(placed) > 1:
                    placed.sort()
        return allocations, mappings


def _one_per_tree(providers, used):
    """Whether the provider ids ``used`` are each in a tree of their own
    (what an answer must be before 1.29)."""
    distinct = set(used)
    return len({providers[id_].root for id_ in distinct}) == len(distinct)


def _in_subtrees(assignments, subtrees, constraints):
    """The ``assignments`` whose slots of each of ``subtrees`` (lists of
    slot indexes) are in one subtree, in the order given."""
    if len(subtrees) == 1 and len(subtrees[0]) == 2:
        # The usual request (a NUMA cell and its NIC), without the
        # general loop's overhead: half of same_subtree's filtering.
        yield from _pair_in_subtree(assignments, *subtrees[0], constraints)
        return
    for assignment in assignments:
        if all(constraints.in_one_subtree([assignment[index]
                                           for index in indexes])
               for indexes in subtrees):
            yield assignment


def _pair_in_subtree(assignments, first, second, constraints):
    """The ``assignments`` whose slots ``first`` and ``second`` are one
    provider or one the other's ancestor."""
    in_one_subtree = constraints.pair_in_one_subtree
    for assignment in assignments:
        if in_one_subtree(assignment[first], assignment[second]):
            yield assignment


def _round_robin(streams):
    """One answer from each stream in turn; ``streams`` is consumed
    lazily, so the first round reads no more scopes than it needs."""
    live = []
    for stream in streams:
        for item in stream:
            yield item
            live.append(stream)
            break
    while live:
        still = []
        for stream in live:
            for item in stream:
                yield item
                still.append(stream)
                break
        live = still


class Found:
    """One request's answer, produced lazily: the allocation requests
    one at a time, then the summaries of the providers they used.  A
    caller encodes each as it comes (an unbounded answer at 100,000
    providers is 110,000 allocation requests: held whole as Python
    objects, several hundred MB)."""

    def __init__(self, state, request, settings):
        self.state = state
        self.request = request
        self._search = _RequestSearch(state, request, settings)
        try:
            self._search.resolve()
        except group_loading.Empty:
            self._search = None

    @property
    def count(self):
        """How many allocation requests were produced so far."""
        return 0 if self._search is None else self._search.count

    def allocation_requests(self):
        """(allocations, mappings) as the module says, one at a time."""
        if self._search is None:
            return iter(())
        return self._search.answers()

    def provider_summaries(self, show_traits=True, show_all_resources=True):
        """(uuid, summary) of what the allocation requests produced so
        far use, one at a time (see ``summaries.shown``)."""
        used = set() if self._search is None else self._search.used
        return summaries.shown(self.state, self.request, used,
                               show_traits, show_all_resources)


def find(state, request, settings, show_traits=True, show_all_resources=True):
    """(allocation requests, provider summaries as {uuid: summary}) for
    ``request``, whole: for answers small enough to hold."""
    found = Found(state, request, settings)
    allocation_requests = list(found.allocation_requests())
    return allocation_requests, dict(
        found.provider_summaries(show_traits, show_all_resources))
