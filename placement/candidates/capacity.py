"""How many copies of a request fit right now, tree by tree.

For each root, the answer is the largest number of copies of the request
its tree can hold at once: copies are allocation requests the candidate
search could answer for that tree (same filters, units, traits,
aggregates, group policy, same_subtree), each within ``max_unit`` on its
own, and together within every provider's free capacity.  The tree's own
providers count, and so do the sharing providers that join it, as if the
tree were their only user.  Each sharing provider also gets the number
of copies its own inventory could serve (the rest of each copy taken as
given), and ``limited_by_sharing`` says when the copies counted per tree
together need more of some sharing provider than it has free.

How: the distinct per-copy usages of a tree (*patterns*: amount per
provider and class) come from the candidate search's own combination
(``combine``); patterns that use at least as much of everything as
another are dropped; then a depth-first search over how many copies of
each pattern to take finds the largest total, pruned by a bound (the
free amount of each class over what every remaining pattern needs of
it).  Exact within two documented bounds: at most ``PATTERN_BOUND``
patterns per tree (a tree with many interchangeable children has one
per combination of children) and ``NODE_BOUND`` search steps; past
either, the count found is a lower bound and the root is listed in
``bounded``.

Nothing here knows about HTTP.
"""

import collections
import itertools

from placement.candidates import combine
from placement.candidates import search
from placement.candidates import plan
from placement.candidates import request as candidate_request
from placement.state import questions

PATTERN_BOUND = 200
ANSWER_BOUND = 20000
NODE_BOUND = 20000


class _OutOfSteps(Exception):
    """The search used its NODE_BOUND steps."""


def _usage(slots, assignment):
    usage = collections.Counter()
    for slot, provider in zip(slots, assignment):
        for class_id, amount in slot.amounts:
            usage[provider, class_id] += amount
    return usage


def patterns(state, slots, constraints, nested_aware=True):
    """(distinct usages of one copy in a tree, as ((provider, class id),
    amount) tuples; whether they are all of them)."""
    providers = state.providers
    found = set()
    answers = combine.answers(slots, constraints)
    for assignment in itertools.islice(answers, ANSWER_BOUND):
        usage = _usage(slots, assignment)
        used = {provider for provider, _ in usage}
        if not nested_aware and len(
                {providers[p].root for p in used}) != len(used):
            continue
        found.add(tuple(sorted(usage.items())))
        if len(found) > PATTERN_BOUND:
            return _undominated(found)[:PATTERN_BOUND], False
    complete = next(answers, None) is None
    return _undominated(found), complete


def _undominated(found):
    """The patterns no other pattern undercuts everywhere (taking the
    smaller never fits fewer copies), fewest resources first."""
    ordered = sorted(found, key=lambda p: (sum(a for _, a in p), p))
    kept = []
    for pattern in ordered:
        amounts = dict(pattern)
        if not any(all(amounts.get(key, 0) >= amount
                       for key, amount in other)
                   for other in kept):
            kept.append(pattern)
    return kept


class _CopiesSearch:
    """The largest number of copies of some patterns that fit ``free``
    ({(provider, class id): free amount})."""

    def __init__(self, patterns, free):
        self.patterns = patterns
        self.free = dict(free)
        self.best = 0
        self.best_counts = [0] * len(patterns)
        self.counts = [0] * len(patterns)
        self.steps = 0
        self.by_class = collections.defaultdict(set)
        for pattern in patterns:
            for key, _ in pattern:
                self.by_class[key[1]].add(key)
        self.suffix_need = self._suffix_needs()

    def _suffix_needs(self):
        """For each i, {class id: least any pattern from i on needs},
        for the classes every one of them needs."""
        needs = [None] * (len(self.patterns) + 1)
        needs[-1] = {}
        running = None
        for index in range(len(self.patterns) - 1, -1, -1):
            need = collections.Counter()
            for (_, class_id), amount in self.patterns[index]:
                need[class_id] += amount
            if running is None:
                running = dict(need)
            else:
                running = {c: min(a, need[c]) for c, a in running.items()
                           if c in need}
            needs[index] = running
        return needs

    def _most(self, index):
        return min(self.free[key] // amount
                   for key, amount in self.patterns[index])

    def _upper(self, index):
        """At most this many more copies fit, from pattern ``index`` on."""
        bound = sum(self._most(i) for i in range(index, len(self.patterns)))
        for class_id, need in self.suffix_need[index].items():
            have = sum(self.free[key] for key in self.by_class[class_id])
            bound = min(bound, have // need)
        return bound

    def _take(self, index, copies):
        for key, amount in self.patterns[index]:
            self.free[key] -= amount * copies
        self.counts[index] = copies

    def run(self, index=0, total=0):
        if total > self.best:
            self.best = total
            self.best_counts = list(self.counts)
        if index == len(self.patterns):
            return
        self.steps += 1
        if self.steps > NODE_BOUND:
            raise _OutOfSteps()
        if total + self._upper(index) <= self.best:
            return
        for copies in range(self._most(index), -1, -1):
            self._take(index, copies)
            self.run(index + 1, total + copies)
            self._take(index, -copies)
            self.counts[index] = 0


def most_copies(found, free):
    """(copies, how many of each pattern, exact): the most copies of the
    patterns ``found`` that fit ``free``."""
    search = _CopiesSearch(found, free)
    try:
        search.run()
    except _OutOfSteps:
        return search.best, search.best_counts, False
    return search.best, search.best_counts, True


def _free(state, found):
    return {(provider, class_id):
            state.provider(provider).inventory[class_id].free
            for pattern in found for (provider, class_id), _ in pattern}


class _Result:
    def __init__(self, state):
        self.state = state
        self.roots = {state.provider(root).uuid: 0
                      for root in state.roots()}
        self.sharing = {state.provider(pid).uuid: 0
                        for pid in sorted(state.sharing)}
        self.bounded = []
        self.sharing_used = collections.Counter()
        self.sharing_patterns = collections.defaultdict(set)

    def count_tree(self, root, found, complete):
        state = self.state
        copies, counts, exact = most_copies(found, _free(state, found))
        uuid = state.provider(root).uuid
        self.roots[uuid] = copies
        if not (exact and complete):
            self.bounded.append(uuid)
        for pattern, times in zip(found, counts):
            own = tuple((key, amount) for key, amount in pattern
                        if key[0] in state.sharing)
            for key, amount in own:
                self.sharing_used[key] += amount * times
            for provider in {key[0] for key, _ in own}:
                self.sharing_patterns[provider].add(tuple(
                    item for item in own if item[0][0] == provider))

    def count_sharing(self):
        state = self.state
        for provider, found in self.sharing_patterns.items():
            found = _undominated(found)
            copies, _, exact = most_copies(found, _free(state, found))
            uuid = state.provider(provider).uuid
            self.sharing[uuid] = copies
            if not exact:
                self.bounded.append(uuid)

    def body(self):
        state = self.state
        limited = any(used > state.provider(p).inventory[c].free
                      for (p, c), used in self.sharing_used.items())
        return {'roots': self.roots, 'sharing': self.sharing,
                'total': sum(self.roots.values()),
                'limited_by_sharing': limited,
                'bounded': sorted(set(self.bounded))}


@questions.question
def capacity(state, request):
    """{'roots': {uuid: copies}, 'sharing': {uuid: copies}, 'total',
    'limited_by_sharing', 'bounded': [uuids counted within a bound]}.
    ``limit`` is not used: it bounds an answer, not what fits.  Unknown
    names fail as the candidate search fails on them (it is run up to its
    first answer, which is where it would fail)."""
    search.find(state, request, candidate_request.Settings(max_candidates=1),
                show_traits=False, show_all_resources=False)
    result = _Result(state)
    loaded = plan.load_groups(state, request)
    if loaded is None:
        return result.body()
    found_groups = loaded[1]
    *_, (_, _, constraints) = plan.constraint_levels(state, request, loaded)
    for root in plan.permitted_roots(state, request):
        slots = plan.tree_slots(found_groups, root)
        if slots is None:
            continue
        found, complete = patterns(state, slots, constraints,
                                   request.nested_aware)
        if found:
            result.count_tree(root, found, complete)
    result.count_sharing()
    return result.body()

