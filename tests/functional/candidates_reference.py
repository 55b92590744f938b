"""A brute-force reference for GET /allocation_candidates at 1.39.

Written from the API reference and upstream's gabbits, independently of
the service's own implementation: it enumerates every combination of
providers for every anchoring tree and keeps those that satisfy the
request, then deduplicates.  It is meant for small deployments only.

The model (``Deployment``, ``Group``, ``Request``) is plain data; the test
builds the same deployment through the REST API and sends
``Request.query()``, then compares ``normalize(response)`` with
``allocation_candidates(deployment, request)``.

Semantics, as upstream Placement answers:

* A provider has room for ``amount`` of a class when it has inventory of
  it with ``min_unit <= amount <= max_unit``, ``amount % step_size == 0``
  and ``used + amount <= (total - reserved) * allocation_ratio``.
* Every root provider anchors a candidate for its own tree.  A sharing
  provider (trait MISC_SHARES_VIA_AGGREGATE) also serves every tree with a
  provider that shares one of its aggregates.  ``root_required`` filters
  the anchors by the anchor root's own traits.
* The unsuffixed group spreads its classes over the anchor's tree and the
  sharing providers serving it (only the tree when it has ``in_tree``).
  No picked provider may have a forbidden trait; the picked providers'
  traits together must meet every required (any-of) set.  ``member_of``:
  a picked provider must itself be in the aggregates (every set) or, when
  it is in the anchor's tree, the anchor root must be; a sharing provider
  lent to another tree must itself be.  Forbidden aggregates: neither the
  picked provider nor the anchor root may be in any of them.
* A granular group is served by one provider with room for all its
  classes, its required traits, none of its forbidden ones, itself in the
  ``member_of`` aggregates and none of the forbidden ones, in ``in_tree``'s
  tree.  It serves its own tree and, when sharing, the trees it shares
  with.  A resourceless group (only allowed within same_subtree) is served
  by any provider meeting its traits and aggregates.
* A candidate takes one choice per group for the same anchor; amounts of
  one provider and class across groups are summed and must still fit
  (capacity and max_unit).  ``isolate`` makes the granular groups use
  distinct providers; each ``same_subtree`` needs one of the providers of
  its groups to be an ancestor-or-self of all the others.
* Candidates are equal when their summed resources and their mappings are.
* Provider summaries cover every provider of every tree holding a
  provider that gives resources to some candidate (a provider that only
  serves a resourceless group is in the mappings, not the summaries).

Where the API reference is silent these follow upstream's code (16.0.0):
objects/research_context.py for the aggregate rules (a sharing provider's
own membership, ``get_rps_with_shared_capacity``; the anchor root's,
``filter_by_rp_or_tree``) and objects/allocation_candidate.py
``_merge_candidates`` for the summaries.  One upstream quirk is modelled
but not exercised by the tests: a resourceless group ignores ``in_tree``.
"""

import collections
import dataclasses
import itertools
import urllib.parse

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


@dataclasses.dataclass(frozen=True)
class Inventory:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 0  # 0: the total
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def maximum(self):
        return self.max_unit or self.total

    @property
    def capacity(self):
        return int((self.total - self.reserved) * self.allocation_ratio)

    def record(self):
        return {'total': self.total, 'reserved': self.reserved,
                'min_unit': self.min_unit, 'max_unit': self.maximum,
                'step_size': self.step_size,
                'allocation_ratio': self.allocation_ratio}

    def fits_one(self, amount, used):
        """Whether one request for ``amount`` fits (units and capacity)."""
        return (self.min_unit <= amount <= self.maximum
                and amount % self.step_size == 0
                and used + amount <= self.capacity)

    def __repr__(self):
        extra = []
        defaults = Inventory(self.total)
        for field in ('reserved', 'min_unit', 'max_unit', 'step_size',
                      'allocation_ratio'):
            if getattr(self, field) != getattr(defaults, field):
                extra.append('%s=%r' % (field, getattr(self, field)))
        return 'Inv(%d%s)' % (self.total,
                              ''.join(', ' + e for e in extra))


@dataclasses.dataclass
class Provider:
    name: str
    uuid: str
    parent: str = None  # the parent's uuid
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: frozenset = frozenset()
    aggregates: frozenset = frozenset()

    @property
    def sharing(self):
        return SHARING_TRAIT in self.traits


class Deployment:
    """Providers (parents before children) and the consumers' allocations:
    a list of {provider uuid: {class: amount}}."""

    def __init__(self, providers, consumers=(), aggregate_names=None):
        self.providers = list(providers)
        self.consumers = list(consumers)
        self.by_uuid = {p.uuid: p for p in self.providers}
        self.aggregate_names = dict(aggregate_names or {})
        self.used = collections.Counter()
        for allocations in self.consumers:
            for uuid, resources in allocations.items():
                for rc, amount in resources.items():
                    self.used[uuid, rc] += amount

    def root(self, uuid):
        while self.by_uuid[uuid].parent is not None:
            uuid = self.by_uuid[uuid].parent
        return uuid

    def ancestors(self, uuid):
        """The provider and all its ancestors."""
        result = {uuid}
        while self.by_uuid[uuid].parent is not None:
            uuid = self.by_uuid[uuid].parent
            result.add(uuid)
        return result

    @property
    def roots(self):
        return [p.uuid for p in self.providers if p.parent is None]

    def tree(self, root):
        return [p.uuid for p in self.providers if self.root(p.uuid) == root]

    def served_trees(self, uuid):
        """Roots of the trees a provider can give resources to."""
        provider = self.by_uuid[uuid]
        trees = {self.root(uuid)}
        if provider.sharing:
            trees |= {self.root(other.uuid) for other in self.providers
                      if other.aggregates & provider.aggregates}
        return trees

    def has_room(self, uuid, rc, amount):
        inventory = self.by_uuid[uuid].inventories.get(rc)
        return (inventory is not None
                and inventory.fits_one(amount, self.used[uuid, rc]))

    def name(self, uuid):
        if uuid in self.by_uuid:
            return self.by_uuid[uuid].name
        return self.aggregate_names.get(uuid, uuid)

    def with_names(self, text):
        """``text`` with provider and aggregate names for their uuids."""
        for uuid in set(self.by_uuid) | set(self.aggregate_names):
            text = text.replace(uuid, self.name(uuid))
        return text

    def __repr__(self):
        lines = ['Deployment(']
        for p in self.providers:
            bits = [p.name]
            if p.parent:
                bits.append('parent=%s' % self.name(p.parent))
            if p.inventories:
                bits.append('inv={%s}' % ', '.join(
                    '%s: %r' % item for item in sorted(p.inventories.items())))
            if p.traits:
                bits.append('traits=%s' % sorted(p.traits))
            if p.aggregates:
                bits.append('aggs=%s' % sorted(
                    self.name(a) for a in p.aggregates))
            lines.append('  ' + ' '.join(bits))
        for allocations in self.consumers:
            lines.append('  consumer %s' % {
                self.name(u): r for u, r in allocations.items()})
        lines.append(')')
        return '\n'.join(lines)


@dataclasses.dataclass
class Group:
    resources: dict = dataclasses.field(default_factory=dict)
    required: tuple = ()  # of frozensets: any-of sets, all required
    forbidden: frozenset = frozenset()
    member_of: tuple = ()  # of frozensets: any-of sets, all required
    forbidden_aggs: tuple = ()  # of frozensets: one per !/!in: param
    in_tree: str = None

    @property
    def all_forbidden_aggs(self):
        return frozenset().union(*self.forbidden_aggs)

    def params(self, suffix):
        params = []
        if self.resources:
            params.append(('resources' + suffix, ','.join(
                '%s:%d' % item for item in sorted(self.resources.items()))))
        singles = sorted(next(iter(s)) for s in self.required if len(s) == 1)
        plain = singles + ['!' + t for t in sorted(self.forbidden)]
        if plain:
            params.append(('required' + suffix, ','.join(plain)))
        for any_of in self.required:
            if len(any_of) > 1:
                params.append(('required' + suffix,
                               'in:' + ','.join(sorted(any_of))))
        for any_of in self.member_of:
            value = ','.join(sorted(any_of))
            params.append(('member_of' + suffix,
                           value if len(any_of) == 1 else 'in:' + value))
        for none_of in self.forbidden_aggs:
            value = ','.join(sorted(none_of))
            params.append(('member_of' + suffix, '!' + value
                           if len(none_of) == 1 else '!in:' + value))
        if self.in_tree:
            params.append(('in_tree' + suffix, self.in_tree))
        return params


@dataclasses.dataclass
class Request:
    groups: dict  # suffix ('' for the unsuffixed group) -> Group
    group_policy: str = None
    root_required: frozenset = frozenset()
    root_forbidden: frozenset = frozenset()
    same_subtrees: tuple = ()  # of tuples of suffixes
    limit: int = None  # the reference ignores it: see ``expected``

    def params(self):
        params = []
        for suffix, group in self.groups.items():
            params += group.params(suffix)
        if self.group_policy:
            params.append(('group_policy', self.group_policy))
        if self.root_required or self.root_forbidden:
            params.append(('root_required', ','.join(
                sorted(self.root_required)
                + ['!' + t for t in sorted(self.root_forbidden)])))
        for suffixes in self.same_subtrees:
            params.append(('same_subtree', ','.join(suffixes)))
        if self.limit is not None:
            params.append(('limit', str(self.limit)))
        return params

    def query(self):
        return urllib.parse.urlencode(self.params(), safe=':,!')

    def describe(self, deployment):
        """The query with provider and aggregate names for uuids."""
        return deployment.with_names('&'.join(
            '%s=%s' % param for param in self.params()))


# -- the enumerator ----------------------------------------------------------

def _meets_traits(traits, group):
    return (all(traits & any_of for any_of in group.required)
            and not traits & group.forbidden)


def _in_all(aggregates, member_of):
    return all(aggregates & any_of for any_of in member_of)


def _granular_providers(dep, group, anchor):
    """Providers that can serve a granular group for ``anchor``'s tree."""
    result = []
    if group.in_tree and group.in_tree not in dep.by_uuid:
        return []
    tree_root = dep.root(group.in_tree) if group.in_tree else None
    for p in dep.providers:
        # (Upstream looks at in_tree only when looking for resources.)
        if group.in_tree and group.resources and dep.root(p.uuid) != tree_root:
            continue
        if not all(dep.has_room(p.uuid, rc, amount)
                   for rc, amount in group.resources.items()):
            continue
        if not _meets_traits(p.traits, group):
            continue
        if not _in_all(p.aggregates, group.member_of):
            continue
        if p.aggregates & group.all_forbidden_aggs:
            continue
        if anchor not in dep.served_trees(p.uuid):
            continue
        result.append(p.uuid)
    return result


def _unsuffixed_options(dep, group, anchor):
    """Every way to spread the unsuffixed group over ``anchor``'s tree and
    the sharing providers serving it: a list of (allocations, providers)."""
    if group.in_tree and (group.in_tree not in dep.by_uuid
                          or dep.root(group.in_tree) != anchor):
        return []
    anchor_aggs = dep.by_uuid[anchor].aggregates
    forbidden_aggs = group.all_forbidden_aggs
    if anchor_aggs & forbidden_aggs:
        return []
    per_class = []
    for rc, amount in sorted(group.resources.items()):
        choices = []
        for p in dep.providers:
            own_tree = dep.root(p.uuid) == anchor
            if not own_tree and (group.in_tree or not p.sharing
                                 or anchor not in dep.served_trees(p.uuid)):
                continue
            if not dep.has_room(p.uuid, rc, amount):
                continue
            if group.member_of and not (
                    _in_all(p.aggregates, group.member_of)
                    or (own_tree and _in_all(anchor_aggs, group.member_of))):
                continue
            if p.aggregates & forbidden_aggs:
                continue
            choices.append((p.uuid, rc, amount))
        per_class.append(choices)
    options = []
    for picks in itertools.product(*per_class):
        providers = frozenset(uuid for uuid, _, _ in picks)
        traits = frozenset().union(
            *(dep.by_uuid[uuid].traits for uuid in providers))
        if any(dep.by_uuid[uuid].traits & group.forbidden
               for uuid in providers):
            continue
        if not all(traits & any_of for any_of in group.required):
            continue
        options.append((picks, providers))
    return options


def _same_subtree(dep, uuids):
    return any(all(top in dep.ancestors(other) for other in uuids)
               for top in uuids)


def allocation_candidates(dep, req):
    """(set of candidates, provider summaries) for ``req`` on ``dep``.

    A candidate is (frozenset of (provider, class, amount), frozenset of
    (suffix, frozenset of providers)).
    """
    granular = [s for s in req.groups if s]
    found = set()
    for anchor in dep.roots:
        root_traits = dep.by_uuid[anchor].traits
        if not (req.root_required <= root_traits
                and not root_traits & req.root_forbidden):
            continue
        suffixes, choices = [], []
        for suffix, group in req.groups.items():
            if suffix:
                options = [(tuple((uuid, rc, amount) for rc, amount
                                  in sorted(group.resources.items())),
                            frozenset([uuid]))
                           for uuid in _granular_providers(dep, group, anchor)]
            else:
                options = _unsuffixed_options(dep, group, anchor)
            suffixes.append(suffix)
            choices.append(options)
        for combo in itertools.product(*choices):
            chosen = dict(zip(suffixes, combo))
            if req.group_policy == 'isolate':
                used_by_granular = {next(iter(chosen[s][1])) for s in granular}
                if len(used_by_granular) != len(granular):
                    continue
            if not all(_same_subtree(dep, frozenset().union(
                    *(chosen[s][1] for s in same)))
                    for same in req.same_subtrees):
                continue
            totals = collections.Counter()
            for picks, _ in combo:
                for uuid, rc, amount in picks:
                    totals[uuid, rc] += amount
            if any(dep.used[key] + amount
                   > dep.by_uuid[key[0]].inventories[key[1]].capacity
                   or amount > dep.by_uuid[key[0]].inventories[key[1]].maximum
                   for key, amount in totals.items()):
                continue
            found.add((
                frozenset((uuid, rc, amount)
                          for (uuid, rc), amount in totals.items()),
                frozenset((s, providers)
                          for s, (_, providers) in chosen.items())))
    return found, provider_summaries(dep, found)


def provider_summaries(dep, candidates):
    trees = {dep.root(uuid)
             for resources, _ in candidates for uuid, _, _ in resources}
    summaries = {}
    for p in dep.providers:
        root = dep.root(p.uuid)
        if root not in trees:
            continue
        summaries[p.uuid] = {
            'resources': {rc: {'capacity': inv.capacity,
                               'used': dep.used[p.uuid, rc]}
                          for rc, inv in p.inventories.items()},
            'traits': sorted(p.traits),
            'parent_provider_uuid': p.parent,
            'root_provider_uuid': root,
        }
    return summaries


def normalize(body):
    """The service's answer in the reference's form, and a list of
    problems with its shape (duplicates) that a set would hide."""
    problems = []
    found = set()
    for areq in body['allocation_requests']:
        resources = frozenset(
            (uuid, rc, amount)
            for uuid, entry in areq['allocations'].items()
            for rc, amount in entry['resources'].items())
        mappings = frozenset(
            (suffix, frozenset(uuids))
            for suffix, uuids in areq['mappings'].items())
        for suffix, uuids in areq['mappings'].items():
            if len(set(uuids)) != len(uuids):
                problems.append('duplicate uuids in mappings %r' % areq)
        if (resources, mappings) in found:
            problems.append('duplicate allocation request %r' % areq)
        found.add((resources, mappings))
    summaries = {}
    for uuid, summary in body['provider_summaries'].items():
        summary = dict(summary)
        if isinstance(summary.get('traits'), list):
            summary['traits'] = sorted(summary['traits'])
        summaries[uuid] = summary
    return found, summaries, problems


def mismatch(dep, req, body):
    """What is wrong with ``body``, the service's answer to ``req`` on
    ``dep`` (lines of text), or None when it is the reference's; with a
    ``limit`` below the number of candidates, any ``limit`` of them with
    the summaries of their trees is right."""
    actual, actual_summaries, problems = normalize(body)
    expected, expected_summaries = allocation_candidates(dep, req)
    if req.limit is not None and len(expected) > req.limit:
        if len(actual) == req.limit and actual <= expected:
            expected = actual
            expected_summaries = provider_summaries(dep, actual)
    lines = []
    if actual != expected or actual_summaries != expected_summaries:
        lines = [repr(dep), 'GET /allocation_candidates?'
                 + req.describe(dep), 'expected %d candidates, got %d'
                 % (len(expected), len(actual))]
        for title, cands in (('missing', expected - actual),
                             ('unexpected', actual - expected)):
            for cand in sorted(cands, key=repr):
                lines.append('  %s: %s' % (title, describe_candidate(
                    dep, cand)))
        for uuid in sorted(set(expected_summaries) | set(actual_summaries)):
            want = expected_summaries.get(uuid)
            got = actual_summaries.get(uuid)
            if want != got:
                lines.append('  summary of %s: expected %r, got %r'
                             % (dep.name(uuid), want, got))
    lines += problems
    return dep.with_names('\n'.join(lines)) if lines else None


def describe_candidate(dep, candidate):
    resources, mappings = candidate
    allocations = collections.defaultdict(dict)
    for uuid, rc, amount in resources:
        allocations[dep.name(uuid)][rc] = amount
    return '%s mappings=%s' % (
        dict(sorted(allocations.items())),
        {s: sorted(dep.name(u) for u in uuids)
         for s, uuids in sorted(mappings)})
