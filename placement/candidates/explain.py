"""Why a request has (no) allocation candidates: the funnel, and one line.

``explain`` answers, for a parsed request:

- how many allocation requests the engine answers for it now (the engine
  itself is run, so the number is the one ``GET /allocation_candidates``
  gives);
- for each request group, each constraint in the order applied, with the
  providers and trees it kept and removed (``funnel``);
- then the steps that combine groups within a tree, each with the trees
  it kept and removed: sharing providers joining trees, ``root_required``,
  the groups' amounts fitting together, ``group_policy=isolate``,
  ``same_subtree``, one provider per tree before 1.29, and the limit;
- a summary line in the Kubernetes scheduler's style, each tree that
  cannot satisfy the request counted once, under the first step that
  removed it.

The combining steps search each tree with the candidate search's own
groups (``groups.Loader``) and combination (``combine``), adding one
constraint at a time, so a tree is removed by the first constraint it
cannot meet.  Explaining costs more than answering; nothing here runs for
``GET /allocation_candidates`` itself unless its answer is empty and
debug logging is on (``summary_line``).
"""

import collections
import functools
import itertools
import logging

from placement.candidates import combine
from placement.candidates import search
from placement.candidates import funnel
from placement.candidates import groups as group_loading
from placement.candidates import plan
from placement.state import questions

LOG = logging.getLogger(__name__)

# Answers looked at per tree when checking, before 1.29, that one has a
# single provider per tree; beyond it the tree counts as failing.
_NESTED_SEARCH_BOUND = 10000


def _tree_tests(state, request, loaded):
    """[(step name, phrase, slots -> whether the tree passes)], in order;
    each adds a constraint to the ones before."""
    levels = plan.constraint_levels(state, request, loaded)
    tests = [(name, phrase, functools.partial(_has_answer, constraints))
             for name, phrase, constraints in levels]
    if not request.nested_aware:
        tests.append((
            'single_provider_per_tree', 'need several providers of one tree '
            '(microversion before 1.29)', functools.partial(
                _single_provider_per_tree, state, levels[-1][2])))
    return tests


def _has_answer(constraints, slots):
    return next(combine.answers(slots, constraints), None) is not None


def _single_provider_per_tree(state, constraints, slots):
    """Before 1.29 an answer may use one provider per tree only."""
    providers = state.providers
    answers = itertools.islice(combine.answers(slots, constraints),
                               _NESTED_SEARCH_BOUND)
    for assignment in answers:
        used = {provider for slot, provider in zip(slots, assignment)
                if slot.amounts}
        if len({providers[p].root for p in used}) == len(used):
            return True
    return False


class _Trees:
    """The trees still in the running, and the step that removed each of
    the others."""

    def __init__(self, roots):
        self.alive = set(roots)
        self.removed_by = {}
        self.phrases = {}       # step key -> phrase, in step order

    def remove(self, step_key, phrase, roots):
        roots = set(roots) & self.alive
        self.alive -= roots
        self.phrases[step_key] = phrase
        for root in roots:
            self.removed_by[root] = step_key
        return roots


def _tree_step(state, name, kept, removed, reason):
    """A combining step as the answer shows it; the examples are the
    roots of the first trees it removed."""
    return {'step': name, 'trees': {'kept': kept, 'removed': len(removed)},
            'examples': [{'uuid': state.provider(root).uuid,
                          'reason': reason}
                         for root in sorted(removed)[:funnel.EXAMPLES]]}


def _sharing_step(state, trees, found):
    """How many of the trees still possible sharing providers join."""
    joined = collections.Counter()
    trees_joined = set()
    providers = state.providers
    for candidates in found:
        for anchor, options in candidates.by_anchor.items():
            if anchor not in trees.alive:
                continue
            members = (options if isinstance(options, list) else
                       [p for ids in options.values() for p in ids])
            for pid in set(members):
                if providers[pid].root != anchor:
                    joined[pid, anchor] += 1
                    trees_joined.add(anchor)
    per_provider = collections.Counter(pid for pid, _ in joined)
    return {'step': 'sharing', 'sharing_providers': len(state.sharing),
            'trees_joined': len(trees_joined),
            'trees': {'kept': len(trees.alive), 'removed': 0},
            'examples': [{'uuid': providers[pid].uuid,
                          'reason': 'joins %d tree(s) through an aggregate'
                          % count}
                         for pid, count in sorted(per_provider.items())
                         [:funnel.EXAMPLES]]}


def _root_required_step(state, request, trees):
    """Unknown traits here are held by no root (the engine has already
    refused them where the candidates do)."""
    passing = set(plan.permitted_roots(state, request))
    removed = trees.remove('root_required', 'have a root failing '
                           'root_required', trees.alive - passing)
    return _tree_step(state, 'root_required', len(trees.alive), removed,
                      'root traits do not match root_required')


def _combination_steps(state, request, trees, loaded):
    """The steps that combine groups within each tree still possible."""
    steps = []
    if state.sharing and loaded:
        steps.append(_sharing_step(state, trees, loaded[1]))
    if request.root_required or request.root_forbidden:
        steps.append(_root_required_step(state, request, trees))
    if loaded is None:
        removed = trees.remove('together', 'cannot fit all groups at once',
                               trees.alive)
        steps.append(_tree_step(state, 'together', 0, removed,
                                'some group matches nothing'))
        return steps
    found = loaded[1]
    levels = _tree_tests(state, request, loaded)
    failed = collections.defaultdict(set)
    for anchor in sorted(trees.alive):
        slots = plan.tree_slots(found, anchor)
        if slots is None:
            failed['together'].add(anchor)
            continue
        for name, _, passes in levels:
            if not passes(slots):
                failed[name].add(anchor)
                break
    for name, phrase, _ in levels:
        removed = trees.remove(name, phrase, failed[name])
        steps.append(_tree_step(state, name, len(trees.alive), removed,
                                phrase))
    return steps


def _limit_step(state, settings, request, trees, answer_roots):
    bound = plan.answer_bound(request, settings)
    if bound is None:
        return None
    kept = trees.alive & answer_roots
    step = _tree_step(state, 'limit', len(kept), trees.alive - kept,
                      'not needed within the limit of %d' % bound)
    step['limit'] = bound
    return step


def reasons(trees):
    """[(number of trees, phrase)] for the trees that cannot satisfy the
    request, each under the step that removed it: most trees first, ties
    in the order the steps are applied."""
    counts = collections.Counter(trees.removed_by.values())
    order = [key for key in trees.phrases if counts[key]]
    order.sort(key=lambda key: -counts[key])
    return [(counts[key], trees.phrases[key]) for key in order]


def summary_line(total, satisfying, trees):
    """'N/M trees can satisfy the request: 3 have ..., 2 ...'."""
    line = '%d/%d trees can satisfy the request' % (satisfying, total)
    found = reasons(trees)
    if found:
        line += ': ' + ', '.join('%d %s' % item for item in found)
    return line


def _group_steps(state, request, trees):
    """Every group's funnel; each tree a group cannot use is removed, in
    the order of the groups and of their constraints."""
    # The roots a provider could serve: the search's own answer.
    anchors_of = group_loading.Loader(state).anchors
    result = []
    for index, group in enumerate(request.groups):
        steps = funnel.run(state, group, anchors_of)
        result.append({'suffix': group.suffix,
                       'constraints': [_group_step(state, step)
                                       for step in steps]})
        for number, step in enumerate(steps):
            trees.remove((index, number), step.phrase, step.removed_trees)
    return result


def _group_step(state, step):
    body = {'constraint': step.constraint}
    body.update(step.detail)
    body['providers'] = {'kept': step.providers_kept,
                         'removed': step.providers_removed}
    body['trees'] = {'kept': step.trees_kept,
                     'removed': len(step.removed_trees)}
    body['examples'] = [{'uuid': state.provider(pid).uuid,
                         'reason': reason} for pid, reason in step.examples]
    return body


@questions.question
def explain(state, request, settings):
    """The explanation as plain data (see the module); the engine's
    errors (unknown class or trait) propagate as they do for it."""
    answers, _ = search.find(state, request, settings, show_traits=False,
                             show_all_resources=False)
    roots = state.roots()
    trees = _Trees(roots)
    groups = _group_steps(state, request, trees)
    steps = _combination_steps(state, request, trees,
                               plan.load_groups(state, request))
    answer_roots = {state.provider_by_uuid(uuid).root
                    for resources, _ in answers for uuid in resources}
    limit = _limit_step(state, settings, request, trees, answer_roots)
    if limit is not None:
        steps.append(limit)
    return {
        'allocation_requests': len(answers),
        'trees': len(roots),
        'trees_satisfying': len(trees.alive),
        'summary': summary_line(len(roots), len(trees.alive), trees),
        'reasons': [{'trees': count, 'reason': phrase}
                    for count, phrase in reasons(trees)],
        'groups': groups,
        'combination': steps,
    }


def summary(state, request):
    """Only the summary line (for the log of an empty answer)."""
    trees = _Trees(state.roots())
    _group_steps(state, request, trees)
    _combination_steps(state, request, trees,
                       plan.load_groups(state, request))
    return summary_line(len(state.roots()), len(trees.alive), trees)


def log_empty_answer(state, request):
    """Log the summary of an empty answer, computing it only when debug
    logging is on (``[DEFAULT] debug``): the search itself never pays."""
    if LOG.isEnabledFor(logging.DEBUG):
        LOG.debug('No allocation candidates: %s', summary(state, request))
