"""GET /allocation_candidates against a brute-force reference.

Hypothesis draws small deployments (1-3 trees of up to five providers,
0-2 sharing providers as standalone roots, 0-2 aggregates, inventories
with the odd reserved amount, allocation ratio, min/max unit and step
size, a few traits and some existing allocations) and a few requests for
each (unsuffixed and granular groups with traits, any-of traits, forbidden
traits, member_of with in: and !, in_tree, group_policy, root_required,
same_subtree with resourceless groups, sometimes a limit).  Each
deployment is built through the REST API in a database emptied beforehand
(through the API too), and the service's answer, as a set of allocation
requests with their mappings plus the provider summaries, must be exactly
what ``tests.functional.candidates_reference`` enumerates.

A few hand-made cases follow the property; they also pin the reference
itself to answers worked out by hand.
"""

import os
import unittest.mock as mock
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st
import pytest

from placement.candidates import search

from tests.functional import candidates_reference as ref
from tests.functional.candidates_reference import Deployment
from tests.functional.candidates_reference import Group
from tests.functional.candidates_reference import Inventory
from tests.functional.candidates_reference import Provider
from tests.functional.candidates_reference import Request
from tests.functional.candidates_reference import SHARING_TRAIT

PROJECT = '42a32c07-3eeb-4401-9373-68a8cdca6784'
USER = '66cb2f29-c86d-47c3-8af5-69ae7b778c70'
NAMESPACE = uuidlib.UUID('6d3a2a40-6a43-4c57-9a63-6c1d1a3a3f00')

CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_GPU', 'SRIOV_NET_VF']
CUSTOM_TRAITS = ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C']
TRAITS = CUSTOM_TRAITS + ['HW_CPU_X86_AVX2']
REQUEST_TRAITS = TRAITS + [SHARING_TRAIT]
AGG_NAMES = ['aggA', 'aggB', 'aggNone']  # nothing is ever in aggNone
AGGS = {name: str(uuidlib.uuid5(NAMESPACE, name)) for name in AGG_NAMES}
SUFFIXES = ['1', '2', '_X']
UNKNOWN_RP = 'be8b9cba-e7db-4a12-a386-99b4242167fe'


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


# -- talking to the service --------------------------------------------------

@pytest.fixture
def api(client):
    """The client, with the custom traits and class the deployments use."""
    for trait in CUSTOM_TRAITS:
        client.put('/traits/' + trait)
    client.put('/resource_classes/CUSTOM_GPU')
    return client


def reset(client):
    """Delete every consumer's allocations, then every provider, children
    before parents: whatever a previous (maybe failed) example left."""
    providers = client.get('/resource_providers').json['resource_providers']
    consumers = set()
    for p in providers:
        consumers |= set(client.get(
            '/resource_providers/%s/allocations' % p['uuid']
        ).json['allocations'])
    for consumer in sorted(consumers):
        client.delete('/allocations/' + consumer)
    parents = {p['uuid']: p['parent_provider_uuid'] for p in providers}

    def depth(uuid):
        return 0 if parents[uuid] is None else 1 + depth(parents[uuid])

    for uuid in sorted(parents, key=depth, reverse=True):
        client.delete('/resource_providers/' + uuid)


def build(client, dep):
    for p in dep.providers:
        body = {'name': p.name, 'uuid': p.uuid}
        if p.parent:
            body['parent_provider_uuid'] = p.parent
        generation = client.post('/resource_providers',
                                 json=body).json['generation']
        if p.inventories:
            generation = client.put(
                '/resource_providers/%s/inventories' % p.uuid,
                json={'resource_provider_generation': generation,
                      'inventories': {rc: inv.record() for rc, inv
                                      in p.inventories.items()}},
            ).json['resource_provider_generation']
        if p.traits:
            generation = client.put(
                '/resource_providers/%s/traits' % p.uuid,
                json={'resource_provider_generation': generation,
                      'traits': sorted(p.traits)},
            ).json['resource_provider_generation']
        if p.aggregates:
            client.put('/resource_providers/%s/aggregates' % p.uuid,
                       json={'resource_provider_generation': generation,
                             'aggregates': sorted(p.aggregates)})
    for number, allocations in enumerate(dep.consumers):
        client.put(
            '/allocations/' + _uuid('consumer-%d' % number),
            json={'allocations': {u: {'resources': r}
                                  for u, r in allocations.items()},
                  'consumer_generation': None, 'consumer_type': 'INSTANCE',
                  'project_id': PROJECT, 'user_id': USER},
            status=204)


def check(client, dep, req):
    """The service's answer to ``req`` is the reference's
    (``candidates_reference.mismatch``).  Returns the candidates."""
    body = client.get('/allocation_candidates?' + req.query()).json
    problem = ref.mismatch(dep, req, body)
    if problem:
        pytest.fail(problem, pytrace=False)
    return ref.normalize(body)[0]


# -- strategies --------------------------------------------------------------
#
# Tuned so that about 40% of the requests have candidates: each deployment
# uses a palette of two or three classes, requests ask for small amounts of
# classes the deployment has, and filters (traits, aggregates, in_tree,
# root_required) are present in a minority of groups and name traits and
# aggregates the deployment uses.

def _sometimes(draw, one_in):
    """True once in ``one_in`` draws (shrinks towards False)."""
    return draw(st.sampled_from([False] * (one_in - 1) + [True]))


@st.composite
def inventories(draw):
    total = draw(st.integers(1, 8))
    if not _sometimes(draw, 3):
        return Inventory(total)
    min_unit = draw(st.integers(1, min(2, total)))
    return Inventory(
        total=total,
        reserved=draw(st.integers(0, total - 1)),
        min_unit=min_unit,
        max_unit=draw(st.integers(min_unit, total)),
        step_size=draw(st.sampled_from([1, 2])),
        allocation_ratio=draw(st.sampled_from([1.0, 2.0, 0.5, 1.5])))


@st.composite
def deployments(draw):
    palette = draw(st.lists(st.sampled_from(CLASSES), min_size=2,
                            max_size=3, unique=True))
    n_aggs = draw(st.sampled_from([0, 1, 2, 2]))
    aggs = [AGGS[name] for name in AGG_NAMES[:n_aggs]]

    def inventory():
        n = draw(st.integers(0, len(palette)))
        return {rc: draw(inventories()) for rc in draw(st.lists(
            st.sampled_from(palette), min_size=n, max_size=n, unique=True))}

    traits = st.frozensets(st.sampled_from(TRAITS), max_size=2)
    providers = []

    def add(name, parent=None, sharing=False):
        p = Provider(name=name, uuid=_uuid(name),
                     parent=parent.uuid if parent else None,
                     inventories=inventory(), traits=draw(traits),
                     aggregates=frozenset(
                         a for a in aggs if _sometimes(draw, 2)))
        if sharing:
            p.traits |= {SHARING_TRAIT}
        providers.append(p)
        return p

    for t in range(draw(st.integers(1, 3))):
        root = add('t%d' % t)
        room = 4
        for c in range(draw(st.integers(0, 3))):
            if not room:
                break
            child = add('t%d.%d' % (t, c), root)
            room -= 1
            for g in range(min(room, draw(st.integers(0, 2)))):
                add('t%d.%d.%d' % (t, c, g), child)
                room -= 1
    for s in range(draw(st.sampled_from([0, 1, 1, 2]))):
        add('ss%d' % s, sharing=True)

    consumers = []
    slots = [(p, rc) for p in providers for rc in sorted(p.inventories)]
    if slots:
        for p, rc in draw(st.lists(st.sampled_from(slots), max_size=4,
                                   unique_by=lambda s: (s[0].uuid, s[1]))):
            inv = p.inventories[rc]
            amounts = [a for a in range(inv.min_unit, inv.maximum + 1)
                       if a % inv.step_size == 0 and a <= inv.capacity]
            if amounts:
                consumers.append({p.uuid: {rc: draw(st.sampled_from(
                    amounts))}})
    return Deployment(providers, consumers,
                      {u: name for name, u in AGGS.items()})


@st.composite
def groups(draw, dep, min_classes, max_classes, asked=(), unsuffixed=False):
    """A request group; ``asked`` are the classes earlier groups asked for
    (asking again sums amounts on shared providers)."""
    classes = sorted({rc for p in dep.providers for rc in p.inventories})
    if asked and _sometimes(draw, 2):
        classes = sorted(asked)
    elif not classes or _sometimes(draw, 10):
        classes = CLASSES
    n = draw(st.integers(min_classes, min(max_classes, len(classes))))
    resources = {rc: draw(st.sampled_from([1, 1, 1, 2, 3]))
                 for rc in draw(st.lists(st.sampled_from(classes),
                                         min_size=n, max_size=n,
                                         unique=True))}
    present = sorted(frozenset().union(*(p.traits for p in dep.providers)))
    trait = st.sampled_from(present)
    if len(present) < 2 or _sometimes(draw, 6):
        trait = st.sampled_from(REQUEST_TRAITS)
    required, forbidden = (), frozenset()
    if _sometimes(draw, 4):
        required = tuple(draw(st.lists(
            st.one_of(st.builds(lambda t: frozenset([t]), trait),
                      st.frozensets(trait, min_size=2, max_size=2)),
            min_size=1, max_size=draw(st.sampled_from([1, 1, 2])),
            unique=True)))
    if _sometimes(draw, 5):
        forbidden = frozenset([draw(trait)])
    # A required set entirely forbidden is a 400: not this test's business.
    for any_of in required:
        if any_of <= forbidden:
            forbidden -= any_of
    present = sorted(frozenset().union(*(p.aggregates
                                          for p in dep.providers)))
    agg = st.sampled_from(present)
    if len(present) < 2 or _sometimes(draw, 6):
        agg = st.sampled_from(sorted(AGGS.values()))
    agg_set = st.one_of(st.builds(lambda a: frozenset([a]), agg),
                        st.frozensets(agg, min_size=2, max_size=2))
    member_of = forbidden_aggs = ()
    # The unsuffixed group's aggregate rules are the subtle ones.
    if _sometimes(draw, 3 if unsuffixed else 5):
        member_of = tuple(draw(st.lists(agg_set, min_size=1, max_size=2,
                                        unique=True)))
    if _sometimes(draw, 5 if unsuffixed else 8):
        forbidden_aggs = (draw(agg_set),)
    if not (resources or required or forbidden or member_of
            or forbidden_aggs):
        # A resourceless group needs some parameter to exist at all; a
        # sharing provider meeting it may sit in another tree.
        required = (frozenset([draw(st.sampled_from(
            [SHARING_TRAIT]) if _sometimes(draw, 2) else trait)]),)
    in_tree = None
    if resources and _sometimes(draw, 8):
        in_tree = draw(st.sampled_from([p.uuid for p in dep.providers]
                                       + [UNKNOWN_RP]))
    return Group(resources, required, forbidden, member_of, forbidden_aggs,
                 in_tree)


@st.composite
def requests(draw, dep):
    suffixes = SUFFIXES[:draw(st.sampled_from([0, 1, 2, 3]))]
    same_subtrees = []
    if suffixes and _sometimes(draw, 3):
        same_subtrees = draw(st.lists(
            st.lists(st.sampled_from(suffixes), min_size=1, unique=True),
            min_size=1, max_size=2))
    in_subtree = {s for same in same_subtrees for s in same}
    request_groups = {}
    if not suffixes or not _sometimes(draw, 4):
        request_groups[''] = draw(groups(dep, 1, 3, unsuffixed=True))
    for suffix in suffixes:
        # Only groups named in same_subtree may be resourceless.
        asked = {rc for g in request_groups.values() for rc in g.resources}
        request_groups[suffix] = draw(groups(
            dep, 0 if suffix in in_subtree else 1, 2, asked))
    if not any(g.resources for g in request_groups.values()):
        # Every group resourceless is a 400: give the last one a class.
        classes = sorted({rc for p in dep.providers for rc in p.inventories})
        request_groups[suffixes[-1]].resources = {(classes or CLASSES)[0]: 1}
    if len(suffixes) > 1:
        policy = draw(st.sampled_from(['none', 'isolate']))
    elif suffixes:
        policy = draw(st.sampled_from([None, 'none', 'isolate']))
    else:
        policy = None
    root_required = root_forbidden = frozenset()
    if _sometimes(draw, 5):
        root_required = draw(st.frozensets(st.sampled_from(REQUEST_TRAITS),
                                           max_size=1))
        root_forbidden = draw(st.frozensets(
            st.sampled_from(REQUEST_TRAITS), max_size=1)) - root_required
    limit = None
    if _sometimes(draw, 4):
        limit = draw(st.integers(1, 4))
    return Request(request_groups, policy, root_required, root_forbidden,
                   tuple(tuple(same) for same in same_subtrees), limit)


@st.composite
def scenarios(draw):
    dep = draw(deployments())
    return dep, draw(st.lists(requests(dep), min_size=1, max_size=4))


# -- the property ------------------------------------------------------------

def _events(dep, req, expected):
    """What a case exercised, for --hypothesis-show-statistics."""
    count = len(expected)
    hypothesis.event('candidates: %s' % (
        '0' if not count else '1-3' if count < 4 else '4+'))
    hypothesis.event('granular groups: %d' % sum(1 for s in req.groups if s))
    if any(len({dep.root(u) for u, _, _ in resources}) > 1
           for resources, _ in expected):
        hypothesis.event('a candidate spanning trees (sharing)')
    if any(len(providers) > 1 for _, mappings in expected
           for s, providers in mappings if s == ''):
        hypothesis.event('unsuffixed group spread over providers')
    if any(not g.resources for g in req.groups.values()) and count:
        hypothesis.event('resourceless group answered')


# CANDIDATES_EXAMPLES=500 for a longer hunt.  A failure is reported as
# drawn (the message names providers and lists the differences); shrinking
# a deployment through the API can take Hypothesis's full five minutes, so
# it only happens with CANDIDATES_SHRINK=1.
PHASES = [phase for phase in hypothesis.Phase
          if os.environ.get('CANDIDATES_SHRINK')
          or phase not in (hypothesis.Phase.shrink, hypothesis.Phase.explain)]


def on_random_deployments(max_examples):
    """The settings of a test over ``scenarios()``: no deadline, no
    example database, the function-scoped ``api`` fixture reused."""
    return hypothesis.settings(
        max_examples=max_examples, deadline=None, database=None,
        phases=PHASES, suppress_health_check=[
            hypothesis.HealthCheck.function_scoped_fixture,
            hypothesis.HealthCheck.too_slow,
            hypothesis.HealthCheck.data_too_large])


def built(api, scenario):
    """The scenario's deployment built through ``api`` from nothing; its
    (deployment, requests)."""
    dep, reqs = scenario
    reset(api)
    build(api, dep)
    return dep, reqs


@on_random_deployments(int(os.environ.get('CANDIDATES_EXAMPLES', 60)))
@hypothesis.given(scenario=scenarios(), first_page=st.sampled_from([16, 1]))
def test_candidates_match_the_reference(api, scenario, first_page):
    """With pages of one tree too, so that a bounded answer spans pages."""
    dep, reqs = built(api, scenario)
    with mock.patch.object(search, '_FIRST_PAGE', first_page):
        for req in reqs:
            _events(dep, req, check(api, dep, req))


# -- hand-made cases ---------------------------------------------------------

def _p(name, parent=None, traits=(), aggs=(), **inventories):
    return Provider(
        name=name, uuid=_uuid(name), parent=_uuid(parent) if parent else None,
        inventories={rc: inv if isinstance(inv, Inventory) else Inventory(inv)
                     for rc, inv in inventories.items()},
        traits=frozenset(traits),
        aggregates=frozenset(AGGS[a] for a in aggs))


def _dep(*providers, consumers=()):
    return Deployment(providers, [{_uuid(n): r for n, r in c.items()}
                                  for c in consumers],
                      {u: name for name, u in AGGS.items()})


def _run(api, dep, req):
    """Build ``dep`` (the first time) and check ``req`` on it."""
    if not getattr(dep, 'built', False):
        build(api, dep)
        dep.built = True
    return check(api, dep, req)


def _names(dep, candidates):
    """Each candidate as sorted (provider name, class, amount) tuples."""
    return sorted(tuple(sorted((dep.name(u), rc, a) for u, rc, a in res))
                  for res, _ in candidates)


def test_shared_disk_needs_the_sharing_provider_itself_in_member_of(api):
    # The compute node's (root's) aggregate stretches over its own tree in
    # the unsuffixed group, but not over a sharing provider lent to it.
    dep = _dep(_p('cn', aggs=['aggA', 'aggB'], VCPU=4),
               _p('ss', traits=[SHARING_TRAIT], aggs=['aggB'], DISK_GB=10))
    req = Request({'': Group({'VCPU': 1, 'DISK_GB': 2},
                             member_of=(frozenset([AGGS['aggA']]),))})
    assert _run(api, dep, req) == set()
    req.groups[''].member_of = (frozenset([AGGS['aggB']]),)
    assert _names(dep, _run(api, dep, req)) == [
        (('cn', 'VCPU', 1), ('ss', 'DISK_GB', 2))]


def test_amounts_summed_across_groups_must_fit_capacity_and_max_unit(api):
    dep = _dep(_p('cn', VCPU=Inventory(4, max_unit=3)),
               _p('numa', 'cn', VCPU=2),
               consumers=[{'cn': {'VCPU': 1}}])
    req = Request({'': Group({'VCPU': 2}), '1': Group({'VCPU': 2})},
                  group_policy='none')
    # cn alone would need 4 > max_unit 3 (and 1 + 4 > 4); numa alone 4 > 2.
    # Either group may take cn: two candidates, same resources, different
    # mappings.
    assert _names(dep, _run(api, dep, req)) == [
        (('cn', 'VCPU', 2), ('numa', 'VCPU', 2))] * 2


def test_sharing_provider_candidates_are_deduplicated_across_anchors(api):
    # Two compute nodes and the sharing provider itself anchor the same
    # disk-only candidate: it is returned once, and the summaries cover
    # only the sharing provider's tree.
    dep = _dep(_p('cn1', aggs=['aggA']), _p('cn2', aggs=['aggA']),
               _p('ss', traits=[SHARING_TRAIT], aggs=['aggA'], DISK_GB=10))
    req = Request({'': Group({'DISK_GB': 5})})
    assert _names(dep, _run(api, dep, req)) == [(('ss', 'DISK_GB', 5),)]


def test_root_required_filters_anchors_not_sharing_providers(api):
    dep = _dep(_p('cn', traits=['CUSTOM_A'], aggs=['aggA'], VCPU=2),
               _p('ss', traits=[SHARING_TRAIT], aggs=['aggA'], DISK_GB=10))
    req = Request({'': Group({'DISK_GB': 1})},
                  root_required=frozenset(['CUSTOM_A']))
    # ss lacks CUSTOM_A, but cn anchors the disk-only candidate.
    assert _names(dep, _run(api, dep, req)) == [(('ss', 'DISK_GB', 1),)]
    req.root_forbidden = frozenset([SHARING_TRAIT])
    req.root_required = frozenset()
    assert _names(dep, _run(api, dep, req)) == [(('ss', 'DISK_GB', 1),)]


def test_granular_group_in_tree_of_a_sharing_provider_serves_others(api):
    dep = _dep(_p('cn', aggs=['aggA'], VCPU=2),
               _p('other', VCPU=2),
               _p('ss', traits=[SHARING_TRAIT], aggs=['aggA'], DISK_GB=10))
    req = Request({'': Group({'VCPU': 1}),
                   '1': Group({'DISK_GB': 1}, in_tree=_uuid('ss'))})
    assert _names(dep, _run(api, dep, req)) == [
        (('cn', 'VCPU', 1), ('ss', 'DISK_GB', 1))]


def test_resourceless_group_in_same_subtree(api):
    dep = _dep(_p('cn', VCPU=4),
               _p('nic1', 'cn', traits=['CUSTOM_A']),
               _p('pf1', 'nic1', SRIOV_NET_VF=2),
               _p('nic2', 'cn', traits=['CUSTOM_A']),
               _p('pf2', 'nic2', SRIOV_NET_VF=2, traits=['CUSTOM_B']))
    req = Request({'1': Group({'SRIOV_NET_VF': 1}),
                   '2': Group({'SRIOV_NET_VF': 1}),
                   '_X': Group(required=(frozenset(['CUSTOM_A']),))},
                  group_policy='isolate', same_subtrees=(('1', '2', '_X'),))
    # The three groups must sit under one of their own providers: only a
    # NIC (CUSTOM_A) above both VFs' PF would do, which isolate forbids.
    assert _run(api, dep, req) == set()
    req.group_policy = 'none'
    assert _names(dep, _run(api, dep, req)) == [
        (('pf1', 'SRIOV_NET_VF', 2),), (('pf2', 'SRIOV_NET_VF', 2),)]


def test_unsuffixed_traits_are_met_by_the_providers_together(api):
    dep = _dep(_p('cn', traits=['CUSTOM_A'], VCPU=2),
               _p('numa', 'cn', traits=['CUSTOM_B'], MEMORY_MB=4),
               _p('gpu', 'cn', traits=['CUSTOM_C'], MEMORY_MB=4))
    req = Request({'': Group({'VCPU': 1, 'MEMORY_MB': 1},
                             required=(frozenset(['CUSTOM_A']),
                                       frozenset(['CUSTOM_B', 'CUSTOM_C'])))})
    assert _names(dep, _run(api, dep, req)) == [
        (('cn', 'VCPU', 1), ('gpu', 'MEMORY_MB', 1)),
        (('cn', 'VCPU', 1), ('numa', 'MEMORY_MB', 1))]
    req.groups[''].forbidden = frozenset(['CUSTOM_C'])
    assert _names(dep, _run(api, dep, req)) == [
        (('cn', 'VCPU', 1), ('numa', 'MEMORY_MB', 1))]


def test_forbidden_aggregate_on_the_root_excludes_the_whole_tree(api):
    dep = _dep(_p('cn', aggs=['aggA']),
               _p('numa', 'cn', VCPU=2),
               _p('cn2'),
               _p('numa2', 'cn2', aggs=['aggA'], VCPU=2),
               _p('numa3', 'cn2', VCPU=2))
    req = Request({'': Group({'VCPU': 1},
                             forbidden_aggs=(frozenset([AGGS['aggA']]),))})
    assert _names(dep, _run(api, dep, req)) == [(('numa3', 'VCPU', 1),)]


def test_member_of_sets_are_met_by_the_provider_or_by_the_root(api):
    # Each of provider and root is in one of the two required aggregates:
    # neither is in both, so the unsuffixed group finds nothing.
    dep = _dep(_p('cn', aggs=['aggB']),
               _p('numa', 'cn', aggs=['aggA'], VCPU=2))
    both = (frozenset([AGGS['aggA']]), frozenset([AGGS['aggB']]))
    req = Request({'': Group({'VCPU': 1}, member_of=both)})
    assert _run(api, dep, req) == set()
    req.groups[''].member_of = (frozenset([AGGS['aggB']]),)
    assert _names(dep, _run(api, dep, req)) == [(('numa', 'VCPU', 1),)]


def test_granular_member_of_does_not_look_at_the_root(api):
    dep = _dep(_p('cn', aggs=['aggA']), _p('numa', 'cn', VCPU=2))
    req = Request({'1': Group({'VCPU': 1},
                              member_of=(frozenset([AGGS['aggA']]),))})
    assert _run(api, dep, req) == set()
    req = Request({'': Group({'VCPU': 1},
                             member_of=(frozenset([AGGS['aggA']]),))})
    assert _names(dep, _run(api, dep, req)) == [(('numa', 'VCPU', 1),)]


def test_in_tree_of_an_unknown_provider_finds_nothing(api):
    dep = _dep(_p('cn', VCPU=2))
    for suffix in ('', '1'):
        req = Request({suffix: Group({'VCPU': 1}, in_tree=UNKNOWN_RP)})
        assert _run(api, dep, req) == set()


def test_limit_keeps_the_summaries_of_the_trees_it_keeps(api):
    dep = _dep(_p('cn1', VCPU=2), _p('cn2', VCPU=2), _p('cn3', VCPU=2),
               _p('numa', 'cn3', MEMORY_MB=2))
    req = Request({'': Group({'VCPU': 1})}, limit=2)
    assert len(_run(api, dep, req)) == 2
    req.limit = 3
    assert len(_run(api, dep, req)) == 3


def test_a_resourceless_group_adds_no_provider_summaries(api):
    # Upstream builds the summaries from the trees of the providers that
    # give resources; the sharing provider only satisfies the resourceless
    # group (it is in the mappings, not in the allocations), so its tree
    # has no summary.
    dep = _dep(_p('cn', aggs=['aggA'], VCPU=2),
               _p('ss', traits=[SHARING_TRAIT], aggs=['aggA']))
    req = Request({'': Group({'VCPU': 1}),
                   '_X': Group(required=(frozenset([SHARING_TRAIT]),))},
                  same_subtrees=(('_X',),))
    assert _names(dep, _run(api, dep, req)) == [(('cn', 'VCPU', 1),)]
