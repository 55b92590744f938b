"""GET /allocation_candidates/explain: the funnel names the constraint
that emptied the answer, with the right counts, on hand-built
deployments (flat, nested with isolate and same_subtree, sharing); its
errors, versions and policy are those of GET /allocation_candidates; and
its count of allocation requests is the candidates' own on the property
test's random deployments."""

import logging
import unittest.mock as mock

import hypothesis
import pytest

from placement.candidates import explain as explain_module

from tests.functional import test_candidates_property as prop
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import error
from tests.functional.test_allocation_candidates import AGG_A
from tests.functional.test_allocation_candidates import AGG_B
from tests.functional.test_allocation_candidates import SHARES
from tests.functional.test_allocation_candidates import World

api = prop.api


@pytest.fixture
def world(client):
    return World(client)


def explain(world, query, version=None, status=None):
    return world.client.get('/allocation_candidates/explain?' + query,
                            version=version, status=status)


def steps(body, suffix=''):
    """{constraint: step} of one group."""
    [group] = [g for g in body['groups'] if g['suffix'] == suffix]
    return {step['constraint']: step for step in group['constraints']}


def combination(body):
    return {step['step']: step for step in body['combination']}


def counts(step):
    return (step['providers']['kept'], step['providers']['removed'],
            step['trees']['kept'], step['trees']['removed'])


# -- flat --------------------------------------------------------------------

def test_one_reason_too_little_free_vcpu(world):
    for name in ('cn1', 'cn2', 'cn3'):
        world.add(name, VCPU={'total': 64, 'reserved': 4}, MEMORY_MB=4096)
    world.client.put('/allocations/' + C1, json={
        'allocations': {world.uuid('cn1'): {'resources': {'VCPU': 54}}},
        'consumer_generation': None, 'consumer_type': 'INSTANCE',
        'project_id': C1, 'user_id': C1}, status=204)
    body = explain(world, 'resources=VCPU:8,MEMORY_MB:512').json
    assert body['allocation_requests'] == 2
    assert body['summary'] == (
        '2/3 trees can satisfy the request: 1 cannot fit VCPU (need 8)')
    capacity = [s for s in body['groups'][0]['constraints']
                if s['constraint'] == 'capacity'
                and s['resource_class'] == 'VCPU'][0]
    assert counts(capacity) == (2, 1, 2, 1)
    assert capacity['examples'] == [{
        'uuid': world.uuid('cn1'), 'name': 'cn1',
        'reason': 'VCPU: needs 8, free 6 = (64 - 4 reserved) x 1.0 - 54 '
                  'used'}]


def test_several_reasons_each_tree_counted_once(world):
    world.add('small', VCPU=4, traits=['CUSTOM_FAST'], aggregates=[AGG_A])
    world.add('plain', VCPU=16, aggregates=[AGG_A])
    world.add('elsewhere', VCPU=16, traits=['CUSTOM_FAST'],
              aggregates=[AGG_B])
    world.add('nocpu', MEMORY_MB=1024)
    world.add('good', VCPU=16, traits=['CUSTOM_FAST'], aggregates=[AGG_A])
    body = explain(world, 'resources=VCPU:8&required=CUSTOM_FAST'
                   '&member_of=' + AGG_A).json
    assert body['allocation_requests'] == 1
    assert body['trees'] == 5 and body['trees_satisfying'] == 1
    assert body['summary'] == (
        '1/5 trees can satisfy the request: 1 have no VCPU inventory, '
        '1 cannot fit VCPU (need 8), 1 lack trait CUSTOM_FAST, '
        '1 are not in aggregate %s' % AGG_A)
    found = steps(body)
    assert list(found) == ['resource_class', 'capacity', 'required_traits',
                           'member_of']
    assert counts(found['member_of']) == (1, 1, 1, 1)
    [example] = found['member_of']['examples']
    assert example['name'] == 'elsewhere'
    assert example['reason'] == 'not in aggregate %s' % AGG_A


def test_forbidden_and_any_of_traits_and_in_tree(world):
    world.add('gold', VCPU=8, traits=['CUSTOM_GOLD'])
    world.add('silver', VCPU=8, traits=['CUSTOM_SILVER', 'CUSTOM_OLD'])
    world.add('bronze', VCPU=8)
    body = explain(world, 'resources1=VCPU:1'
                   '&required1=in:CUSTOM_GOLD,CUSTOM_SILVER'
                   '&required1=!CUSTOM_OLD&in_tree1=%s'
                   % world.uuid('silver')).json
    found = steps(body, '1')
    assert counts(found['any_of_traits']) == (2, 1, 2, 1)
    assert found['any_of_traits']['examples'][0]['reason'] == (
        'lacks any of CUSTOM_GOLD, CUSTOM_SILVER')
    assert counts(found['forbidden_traits']) == (1, 1, 1, 1)
    assert counts(found['in_tree']) == (0, 1, 0, 1)
    assert body['summary'] == (
        '0/3 trees can satisfy the request: '
        '1 have none of traits CUSTOM_GOLD, CUSTOM_SILVER (group 1), '
        '1 have forbidden trait CUSTOM_OLD (group 1), '
        '1 are not in tree %s (group 1)' % world.uuid('silver'))


# -- nested: isolate, same_subtree --------------------------------------------

def test_isolate_removes_a_tree_with_one_provider_for_two_groups(world):
    world.add('cn1', VCPU=8)
    world.add('cn2', VCPU=8)
    world.add('cn2.numa1', 'cn2', VCPU=8)
    query = ('resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate')
    body = explain(world, query).json
    assert body['allocation_requests'] == len(
        world.body(query)['allocation_requests']) == 2
    step = combination(body)['group_policy_isolate']
    assert step['trees'] == {'kept': 1, 'removed': 1}
    assert [e['name'] for e in step['examples']] == ['cn1']
    assert body['summary'] == (
        '1/2 trees can satisfy the request: 1 have no separate provider '
        'for each of groups 1, 2 (group_policy=isolate)')


def test_same_subtree_removes_a_tree_with_the_groups_apart(world):
    world.client.put('/resource_classes/CUSTOM_GPU', status=(201, 204))
    for cn in ('cn1', 'cn2'):
        world.add(cn)
        world.add(cn + '.numa0', cn, VCPU=8)
        world.add(cn + '.numa1', cn, CUSTOM_GPU=1)
    world.add('cn2.numa0.gpu', 'cn2.numa0', CUSTOM_GPU=1)
    query = ('resources_C=VCPU:1&resources_G=CUSTOM_GPU:1'
             '&same_subtree=_C,_G&group_policy=none')
    body = explain(world, query).json
    assert body['allocation_requests'] == 1
    together = combination(body)
    assert together['together']['trees'] == {'kept': 2, 'removed': 0}
    assert together['same_subtree']['trees'] == {'kept': 1, 'removed': 1}
    assert together['same_subtree']['examples'][0]['name'] == 'cn1'
    assert body['summary'] == (
        '1/2 trees can satisfy the request: 1 cannot place groups _C,_G '
        'in one subtree (same_subtree)')


def test_groups_that_fit_apart_but_not_together(world):
    world.add('cn1', VCPU=3)
    body = explain(world, 'resources=VCPU:2&resources1=VCPU:2'
                   '&group_policy=none').json
    assert body['allocation_requests'] == 0
    assert combination(body)['together']['trees'] == {
        'kept': 0, 'removed': 1}
    assert body['summary'] == (
        '0/1 trees can satisfy the request: 1 cannot fit all groups at once')


# -- sharing -----------------------------------------------------------------

def test_sharing_provider_joins_only_its_aggregate(world):
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('cn2', VCPU=8)
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_A])
    query = 'resources=VCPU:1,DISK_GB:10'
    body = explain(world, query).json
    assert body['allocation_requests'] == len(
        world.body(query)['allocation_requests']) == 1
    sharing = combination(body)['sharing']
    assert sharing['trees_joined'] == 1
    assert sharing['examples'] == [{
        'uuid': world.uuid('ss'), 'name': 'ss',
        'reason': 'joins 1 tree(s) through an aggregate'}]
    assert body['summary'] == (
        '1/3 trees can satisfy the request: 1 have no VCPU inventory, '
        '1 have no DISK_GB inventory')
    # ss's own tree has no VCPU; cn2 has no DISK_GB of its own and ss
    # does not share with it.
    disk = [s for s in body['groups'][0]['constraints']
            if s.get('resource_class') == 'DISK_GB'
            and s['constraint'] == 'resource_class'][0]
    assert disk['trees'] == {'kept': 1, 'removed': 1}


def test_root_required_and_limit(world):
    world.add('cn1', VCPU=8, traits=['CUSTOM_RACK'])
    world.add('cn2', VCPU=8, traits=['CUSTOM_RACK'])
    world.add('cn3', VCPU=8)
    body = explain(world, 'resources=VCPU:1&root_required=CUSTOM_RACK'
                   '&limit=1').json
    assert body['allocation_requests'] == 1
    found = combination(body)
    assert found['root_required']['trees'] == {'kept': 2, 'removed': 1}
    assert found['limit']['trees'] == {'kept': 1, 'removed': 1}
    assert found['limit']['limit'] == 1
    assert body['summary'] == ('2/3 trees can satisfy the request: '
                               '1 have a root failing root_required')


# -- same errors, versions and policy as GET /allocation_candidates ----------

@pytest.mark.parametrize('query, version', [
    ('resources=VCPU:x', None),
    ('resources=CUSTOM_NOPE:1', None),
    ('resources=VCPU:1&required=CUSTOM_NOPE', None),
    ('resources1=VCPU:1&resources2=VCPU:1', None),
    ('resources=VCPU:1&limit=0', None),
    ('resources=VCPU:1&bogus=1', None),
    ('resources1=VCPU:1', '1.24'),
    ('resources_X=VCPU:1', '1.32'),
    ('required=CUSTOM_A', None),
    ('resources=VCPU:1&root_required=CUSTOM_A,!CUSTOM_A', None),
    ('resources=VCPU:1&same_subtree=_A', None),
])
def test_errors_are_the_candidates_errors(world, query, version):
    world.client.put('/traits/CUSTOM_A', status=(201, 204))
    world.add('cn', VCPU=8)
    expected = world.get(query, version=version, status='*')
    assert expected.status_int == 400
    got = explain(world, query, version=version, status='*')
    assert got.status_int == 400
    assert _without_request_id(got) == _without_request_id(expected)


def _without_request_id(resp):
    return [{k: v for k, v in e.items() if k != 'request_id'}
            for e in resp.json['errors']]


def test_not_found_below_1_10(world):
    world.add('cn', VCPU=8)
    resp = explain(world, 'resources=VCPU:1', version='1.9', status=404)
    assert error(resp)['title'] == 'Not Found'
    explain(world, 'resources=VCPU:1', version='1.10', status=200)


def test_empty_answer_for_unknown_names_after_an_empty_group(world):
    """The candidates answer 200 and nothing when a group nobody can
    satisfy precedes an unknown trait; so does explain."""
    world.add('cn', VCPU=8)
    query = ('resources1=VCPU:100&resources2=VCPU:1&required2=CUSTOM_NOPE'
             '&group_policy=none')
    assert world.body(query)['allocation_requests'] == []
    body = explain(world, query).json
    assert body['allocation_requests'] == 0
    assert body['summary'].startswith('0/1 trees can satisfy the request: '
                                      '1 cannot fit VCPU (need 100)')


def test_admin_only_by_default(world):
    world.add('cn', VCPU=8)
    headers = {'X-Roles': 'service'}
    world.client.get('/allocation_candidates?resources=VCPU:1',
                     headers=headers)
    resp = world.client.get('/allocation_candidates/explain?resources=VCPU:1',
                            headers=headers, status=403)
    assert 'placement:allocation_candidates:explain' in error(resp)['detail']


def test_openapi_marks_it_an_extension(client):
    document = client.get('/openapi.json').json
    operation = document['paths']['/allocation_candidates/explain']['get']
    assert operation['x-openstack-extension'] is True
    assert operation['x-openstack-microversions']['min_version'] == '1.10'


# -- the count is the candidates' count ---------------------------------------

@prop.on_random_deployments(30)
@hypothesis.given(scenario=prop.scenarios())
def test_count_is_the_candidates_count(api, scenario):
    dep, reqs = prop.built(api, scenario)
    for req in reqs:
        query = req.query()
        answered = api.get('/allocation_candidates?' + query).json
        body = api.get('/allocation_candidates/explain?' + query).json
        count = len(answered['allocation_requests'])
        assert body['allocation_requests'] == count, req.describe(dep)
        # Without a limit, a tree satisfies the request iff it has an
        # answer; the summary counts every other tree once.
        assert (body['trees_satisfying'] > 0) == (count > 0), (
            dep, req.describe(dep), body['summary'])
        removed = sum(item['trees'] for item in body['reasons'])
        assert removed == body['trees'] - body['trees_satisfying']


# -- the counts add up from step to step --------------------------------------

def _step_slots(group, step):
    """The slots a step narrows: one class's for a resource step of the
    unsuffixed group, else every slot of the group."""
    per_class = [other['resource_class'] for other in group['constraints']
                 if other['constraint'] == 'resource_class']
    if group['suffix'] == '' and step['constraint'] in (
            'resource_class', 'capacity'):
        return frozenset([step['resource_class']])
    return frozenset(per_class if group['suffix'] == '' else ())


def assert_counts_add_up(body):
    """A step's kept and removed sum to what the step before it kept:
    trees always, providers when both narrow the same slots.  What is in
    play only shrinks, and with no tree left nothing is."""
    for group in body['groups']:
        trees = body['trees']
        before = None
        last_kept = {}      # slots: providers the last step on them kept
        for step in group['constraints']:
            kept, removed, trees_kept, trees_removed = counts(step)
            assert trees_kept + trees_removed == trees, (group, step)
            if trees == 0:
                assert (kept, removed) == (0, 0), (group, step)
            trees = trees_kept
            slots = _step_slots(group, step)
            if before is not None and before[0] == slots:
                assert kept + removed == before[1], (group, step)
            assert kept + removed <= last_kept.get(slots, kept + removed), (
                group, step)
            before = (slots, kept)
            last_kept[slots] = kept


@pytest.mark.parametrize('query, emptied, after', [
    # Capacity empties the only slot: no provider is left for the traits.
    ('resources=MEMORY_MB:8192&required=HW_CPU_X86_AVX2', 'capacity',
     'required_traits'),
    # VCPU's capacity leaves no tree: memory's providers are out of play.
    ('resources=VCPU:20,MEMORY_MB:1024', 'capacity', None),
])
def test_a_step_counts_only_what_is_still_in_play(world, query, emptied,
                                                  after):
    for name in ('cn1', 'cn2', 'cn3'):
        world.add(name, VCPU=8, MEMORY_MB=4096)
    body = explain(world, query).json
    [group] = body['groups']
    constraints = group['constraints']
    first = next(step for step in constraints
                 if step['constraint'] == emptied)
    assert counts(first) == (0, 3, 0, 3)
    for step in constraints[constraints.index(first) + 1:]:
        assert counts(step) == (0, 0, 0, 0), step
    if after:
        assert counts(steps(body)[after]) == (0, 0, 0, 0)
    else:
        memory = [step for step in constraints
                  if step['constraint'] == 'capacity'
                  and step['resource_class'] == 'MEMORY_MB']
        assert [counts(step) for step in memory] == [(0, 0, 0, 0)]
    assert_counts_add_up(body)


@prop.on_random_deployments(30)
@hypothesis.given(scenario=prop.scenarios())
def test_counts_add_up_step_by_step(api, scenario):
    _, reqs = prop.built(api, scenario)
    for req in reqs:
        assert_counts_add_up(api.get(
            '/allocation_candidates/explain?' + req.query()).json)


# -- the debug log of an empty answer -----------------------------------------

EXPLAIN_LOGGER = 'placement.candidates.explain'


def test_empty_answer_logs_the_summary_when_debug_is_on(world, caplog):
    world.add('cn', VCPU=8)
    caplog.set_level(logging.DEBUG, logger=EXPLAIN_LOGGER)
    world.body('resources=VCPU:100')
    assert [r.getMessage() for r in caplog.records
            if r.name == EXPLAIN_LOGGER] == [
        'No allocation candidates: 0/1 trees can satisfy the request: '
        '1 cannot fit VCPU (need 100)']


@pytest.mark.parametrize('level, query', [
    (logging.INFO, 'resources=VCPU:100'),    # debug off
    (logging.DEBUG, 'resources=VCPU:1'),     # an answer
])
def test_summary_computed_only_for_an_empty_answer_with_debug(
        world, caplog, level, query):
    world.add('cn', VCPU=8)
    caplog.set_level(level, logger=EXPLAIN_LOGGER)
    with mock.patch.object(explain_module, 'summary') as summary:
        world.body(query)
    summary.assert_not_called()


def test_before_1_29_one_provider_per_tree(world):
    """Older clients cannot tell a tree's providers apart: an answer
    spread over a root and its child is left out, and explain says so."""
    world.add('cn', MEMORY_MB=4096)
    world.add('cn.numa0', 'cn', VCPU=8)
    query = 'resources=VCPU:1,MEMORY_MB:512'
    assert world.body(query, '1.28')['allocation_requests'] == []
    body = explain(world, query, version='1.28').json
    assert body['allocation_requests'] == 0
    step = combination(body)['single_provider_per_tree']
    assert step['trees'] == {'kept': 0, 'removed': 1}
    assert explain(world, query).json['allocation_requests'] == 1


def test_member_of_any_of_several_aggregates(world):
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('cn2', VCPU=8)
    body = explain(world, 'resources=VCPU:1&member_of=in:%s,%s'
                   % (AGG_A, AGG_B)).json
    [example] = steps(body)['member_of']['examples']
    assert example['reason'] == 'not in any of aggregates %s' % ', '.join(
        sorted([AGG_A, AGG_B]))
    assert body['reasons'] == [{'trees': 1, 'reason': (
        'are not in any of aggregates %s' % ', '.join(
            sorted([AGG_A, AGG_B])))}]
