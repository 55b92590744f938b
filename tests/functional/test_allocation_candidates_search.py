"""GET /allocation_candidates: the search.

Wide trees of identical children with many granular groups (the case a
product of every group's providers cannot answer), group policies on
providers of limited capacity, what existing usage and the inventory's
units leave, ``limit`` (applied after every filter, summaries only for
the trees returned) and the [placement] options that bound, shuffle and
order the candidates generated.
"""

import itertools
import time

import pytest

from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import MAX_INT
from tests.functional.allocation_helpers import put
from tests.functional.test_allocation_candidates import alloc
from tests.functional.test_allocation_candidates import capacity
from tests.functional.test_allocation_candidates import maps
from tests.functional.test_allocation_candidates import World

CHILDREN = ['gpu%d' % index for index in range(8)]
EMPTY = {'allocation_requests': [], 'provider_summaries': {}}


@pytest.fixture
def world(client):
    return World(client)


@pytest.fixture
def configured(conf, db, request):
    """A World on an app built after [placement] options are set."""
    def make(**options):
        for name, value in options.items():
            conf.set_override(name, value, group='placement')
        return World(request.getfixturevalue('client'))
    return make


def _wide(world, vgpu=1):
    """A root with eight identical children of ``vgpu`` VGPU each."""
    world.add('cn', VCPU=8)
    for name in CHILDREN:
        world.add(name, parent='cn', VGPU=vgpu)
    return world


def _groups(count, policy='isolate', limit=None, amount=1):
    query = '&'.join('resources%d=VGPU:%d' % (index, amount)
                     for index in range(1, count + 1))
    query += '&group_policy=' + policy
    if limit:
        query += '&limit=%d' % limit
    return query


def _isolated(world, body, count):
    """The children each answer gives groups 1..count, after checking that
    the answer is valid (one distinct child per group, VGPU:1 on each)
    and that no two answers are the same."""
    found = []
    for allocations, mappings in world.answers(body):
        mapping = dict(mappings)
        assert set(mapping) == {str(index) for index in range(1, count + 1)}
        assert all(len(names) == 1 for names in mapping.values())
        chosen = tuple(mapping[str(index)][0]
                       for index in range(1, count + 1))
        assert len(set(chosen)) == count
        assert set(chosen) <= set(CHILDREN)
        assert allocations == alloc(**{name: {'VGPU': 1}
                                       for name in chosen})
        found.append(chosen)
    assert len(found) == len(set(found))
    return found


def _whole_wide_tree(world, body):
    assert world.summaries(body) == {
        'cn': {'resources': {'VCPU': capacity(8)}, 'traits': [],
               'parent_provider_uuid': None, 'root_provider_uuid': 'cn'},
        **{name: {'resources': {'VGPU': capacity(1)}, 'traits': [],
                  'parent_provider_uuid': 'cn', 'root_provider_uuid': 'cn'}
           for name in CHILDREN}}


# -- a wide tree -------------------------------------------------------------

@pytest.mark.parametrize('count', [5, 6, 8])
def test_wide_tree_many_isolated_groups_with_a_limit(world, count):
    _wide(world)
    body = world.body(_groups(count, limit=10))
    assert len(_isolated(world, body, count)) == 10
    _whole_wide_tree(world, body)


def test_wide_tree_every_isolated_answer_without_a_limit(world):
    _wide(world)
    body = world.body(_groups(4))
    found = _isolated(world, body, 4)
    assert len(found) == 8 * 7 * 6 * 5
    assert set(found) == set(itertools.permutations(CHILDREN, 4))
    _whole_wide_tree(world, body)


@pytest.mark.parametrize('policy', ['isolate', 'none'])
def test_wide_tree_more_groups_than_children_is_empty_quickly(world,
                                                              policy):
    _wide(world)
    start = time.monotonic()
    body = world.body(_groups(9, policy))
    assert time.monotonic() - start < 10
    assert body == EMPTY


def test_wide_tree_with_some_children_used(world):
    _wide(world)
    put(world.client, C1, {world.uuid(name): {'VGPU': 1}
                           for name in CHILDREN[:3]})
    found = _isolated(world, world.body(_groups(5)), 5)
    assert set(found) == set(itertools.permutations(CHILDREN[3:], 5))
    assert world.body(_groups(6)) == EMPTY


# -- group_policy on providers of limited capacity ---------------------------

@pytest.mark.parametrize('policy', ['none', 'isolate'])
def test_two_groups_do_not_overfill_one_child(world, policy):
    world.add('cn', VCPU=8)
    world.add('a', parent='cn', VGPU=1)
    world.add('b', parent='cn', VGPU=1)
    answers = set(world.answers(world.body(_groups(2, policy))))
    assert answers == {
        (alloc(a={'VGPU': 1}, b={'VGPU': 1}), maps({'1': ['a'], '2': ['b']})),
        (alloc(a={'VGPU': 1}, b={'VGPU': 1}), maps({'1': ['b'], '2': ['a']}))}


def test_policy_none_lets_groups_share_a_child_with_room(world):
    world.add('cn', VCPU=8)
    world.add('a', parent='cn', VGPU=2)
    world.add('b', parent='cn', VGPU=1)
    answers = set(world.answers(world.body(_groups(2, 'none'))))
    assert answers == {
        (alloc(a={'VGPU': 2}), maps({'1': ['a'], '2': ['a']})),
        (alloc(a={'VGPU': 1}, b={'VGPU': 1}), maps({'1': ['a'], '2': ['b']})),
        (alloc(a={'VGPU': 1}, b={'VGPU': 1}), maps({'1': ['b'], '2': ['a']}))}
    # isolate keeps the groups apart even where there is room.
    answers = set(world.answers(world.body(_groups(2, 'isolate'))))
    assert {mappings for _, mappings in answers} == {
        maps({'1': ['a'], '2': ['b']}), maps({'1': ['b'], '2': ['a']})}


@pytest.mark.parametrize('total, expected', [(1, set()), (2, {2})])
def test_policy_none_on_a_single_provider(world, total, expected):
    world.add('cn', VGPU=total)
    found = world.allocations(_groups(2, 'none'))
    assert found == {alloc(cn={'VGPU': amount}) for amount in expected}


def test_policy_none_counts_existing_usage(world):
    world.add('cn', VCPU=8)
    world.add('a', parent='cn', VGPU=2)
    put(world.client, C1, {world.uuid('a'): {'VGPU': 1}})
    assert world.allocations(_groups(2, 'none')) == set()
    assert world.allocations(_groups(1, 'none')) == {alloc(a={'VGPU': 1})}


def test_wide_tree_policy_none_pairs(world):
    _wide(world, vgpu=2)
    body = world.body(_groups(2, 'none'))
    pairs = [tuple(dict(mappings)[str(index)][0] for index in (1, 2))
             for _, mappings in world.answers(body)]
    assert len(pairs) == len(set(pairs)) == 64
    assert set(pairs) == set(itertools.product(CHILDREN, repeat=2))
    for allocations, mappings in world.answers(body):
        mapping = dict(mappings)
        first, second = mapping['1'][0], mapping['2'][0]
        expected = ({first: {'VGPU': 2}} if first == second else
                    {first: {'VGPU': 1}, second: {'VGPU': 1}})
        assert allocations == alloc(**expected)


def test_isolate_leaves_the_unsuffixed_group_alone(world):
    world.add('cn', VCPU=4, VGPU=1)
    world.add('c', parent='cn', VGPU=1)
    query = 'resources=VCPU:1&' + _groups(2)
    assert set(world.answers(world.body(query))) == {
        (alloc(cn={'VCPU': 1, 'VGPU': 1}, c={'VGPU': 1}),
         maps({'': ['cn'], '1': ['cn'], '2': ['c']})),
        (alloc(cn={'VCPU': 1, 'VGPU': 1}, c={'VGPU': 1}),
         maps({'': ['cn'], '1': ['c'], '2': ['cn']}))}


# -- limit -------------------------------------------------------------------

def test_limit_counts_answers_left_after_the_1_28_filter(world):
    # The first tree needs two providers, which 1.28 cannot show.
    world.add('t1', VCPU=4)
    world.add('t1-pf', parent='t1', SRIOV_NET_VF=4)
    world.add('t2', VCPU=4, SRIOV_NET_VF=4)
    body = world.body('resources=VCPU:1,SRIOV_NET_VF:1&limit=1', '1.28')
    assert world.answers(body) == [
        (alloc(t2={'VCPU': 1, 'SRIOV_NET_VF': 1}), frozenset())]
    assert set(world.summaries(body)) == {'t2'}


def test_limit_counts_answers_left_after_isolation(world):
    # The first tree's only provider cannot serve two isolated groups.
    world.add('t1', VGPU=2)
    world.add('t2')
    world.add('t2-a', parent='t2', VGPU=1)
    world.add('t2-b', parent='t2', VGPU=1)
    body = world.body(_groups(2, limit=1))
    [(allocations, _)] = world.answers(body)
    assert allocations == alloc(**{'t2-a': {'VGPU': 1},
                                   't2-b': {'VGPU': 1}})
    assert set(world.summaries(body)) == {'t2', 't2-a', 't2-b'}


def test_limit_counts_answers_left_after_capacity(world):
    world.add('cn', VCPU=8)
    for name in ('a', 'b', 'c'):
        world.add(name, parent='cn', VGPU=1)
    put(world.client, C1, {world.uuid('a'): {'VGPU': 1},
                           world.uuid('b'): {'VGPU': 1}})
    body = world.body('resources1=VGPU:1&limit=2')
    assert world.answers(body) == [
        (alloc(c={'VGPU': 1}), maps({'1': ['c']}))]


def test_limit_summaries_cover_only_the_trees_returned(world):
    for tree in ('t1', 't2', 't3'):
        world.add(tree, VCPU=4)
        world.add(tree + '-pf', parent=tree, SRIOV_NET_VF=4)
    for limit, trees in ((1, 1), (2, 2), (5, 3)):
        body = world.body('resources=VCPU:1&limit=%d' % limit)
        used = {name for allocations, _ in world.answers(body)
                for name, _, _ in allocations}
        assert len(used) == trees
        assert set(world.summaries(body)) == (
            used | {name + '-pf' for name in used})


def test_limit_summaries_include_the_sharing_provider(world):
    agg = '2e1e6ad1-8a0a-4b35-bd44-7bd1b6d9e0f7'
    world.add('cn1', VCPU=8, aggregates=[agg])
    world.add('cn2', VCPU=8, aggregates=[agg])
    world.add('ss', DISK_GB=100, traits=['MISC_SHARES_VIA_AGGREGATE'],
              aggregates=[agg])
    body = world.body('resources=VCPU:1,DISK_GB:10&limit=1')
    [(allocations, _)] = world.answers(body)
    [host] = {name for name, _, _ in allocations} - {'ss'}
    assert allocations == alloc(**{host: {'VCPU': 1}, 'ss': {'DISK_GB': 10}})
    assert set(world.summaries(body)) == {host, 'ss'}


# -- capacity, usage and units -----------------------------------------------

def test_existing_usage_reserved_and_ratio_are_counted(world):
    # capacity (8 - 2) * 2.0 = 12, 10 of it used.
    world.add('cn', VCPU={'total': 8, 'reserved': 2,
                          'allocation_ratio': 2.0})
    put(world.client, C1, {world.uuid('cn'): {'VCPU': 10}})
    body = world.body('resources=VCPU:2')
    assert world.answers(body) == [(alloc(cn={'VCPU': 2}), maps({'': ['cn']}))]
    assert world.summaries(body)['cn']['resources'] == {
        'VCPU': capacity(12, 10)}
    assert world.allocations('resources=VCPU:3') == set()


def test_fully_reserved_inventory_offers_nothing(world):
    world.add('cn', VCPU={'total': 8, 'reserved': 8})
    assert world.allocations('resources=VCPU:1') == set()


@pytest.mark.parametrize('amount, fits', [
    (5, False),    # below min_unit
    (10, True),
    (12, False),   # not a multiple of step_size
    (15, True),
    (50, True),
    (55, False),   # above max_unit
])
def test_min_unit_max_unit_and_step_size(world, amount, fits):
    world.add('cn', DISK_GB={'total': 100, 'min_unit': 10, 'max_unit': 50,
                             'step_size': 5})
    expected = {alloc(cn={'DISK_GB': amount})} if fits else set()
    assert world.allocations('resources=DISK_GB:%d' % amount) == expected


def test_units_are_checked_against_the_remaining_capacity(world):
    world.add('cn', DISK_GB={'total': 100, 'max_unit': 50})
    put(world.client, C1, {world.uuid('cn'): {'DISK_GB': 30}})
    put(world.client, C2, {world.uuid('cn'): {'DISK_GB': 30}})
    assert world.allocations('resources=DISK_GB:40') == {
        alloc(cn={'DISK_GB': 40})}
    assert world.allocations('resources=DISK_GB:45') == set()


@pytest.mark.parametrize('max_unit, fits', [(50, False), (60, True)])
def test_groups_on_one_provider_are_checked_summed(world, max_unit, fits):
    world.add('cn', DISK_GB={'total': 100, 'max_unit': max_unit})
    query = ('resources1=DISK_GB:30&resources2=DISK_GB:30'
             '&group_policy=none')
    expected = {alloc(cn={'DISK_GB': 60})} if fits else set()
    assert world.allocations(query) == expected


@pytest.mark.parametrize('amount', [
    MAX_INT + 1, 2 ** 63, 10 ** 30])
@pytest.mark.parametrize('key', ['resources', 'resources1'])
def test_amount_above_the_integer_range_finds_nothing(world, amount, key):
    world.add('cn', VCPU=MAX_INT)
    body = world.body('%s=VCPU:%d' % (key, amount))
    assert body == {'allocation_requests': [], 'provider_summaries': {}}


def test_amount_of_the_integer_maximum_fits(world):
    world.add('cn', VCPU=MAX_INT)
    assert world.allocations('resources=VCPU:%d' % MAX_INT) == {
        alloc(cn={'VCPU': MAX_INT})}


# -- [placement] options -----------------------------------------------------

def _hosts(count, world):
    for index in range(count):
        world.add('cn%d' % index, VCPU=8)
    return world


def test_max_allocation_candidates_caps_the_answers(configured):
    world = _hosts(5, configured(max_allocation_candidates=3))
    assert len(world.allocations('resources=VCPU:1')) == 3
    assert len(world.allocations('resources=VCPU:1&limit=10')) == 3
    assert len(world.allocations('resources=VCPU:1&limit=2')) == 2


def test_max_allocation_candidates_on_a_wide_tree(configured):
    world = _wide(configured(max_allocation_candidates=100))
    body = world.body(_groups(8))
    assert len(_isolated(world, body, 8)) == 100


def test_without_max_allocation_candidates_every_answer(world):
    _hosts(5, world)
    assert world.allocations('resources=VCPU:1') == {
        alloc(**{'cn%d' % index: {'VCPU': 1}}) for index in range(5)}


def test_answers_are_stable_without_randomize(world):
    _hosts(5, world)
    first = world.body('resources=VCPU:1&limit=2')
    for _ in range(5):
        assert world.body('resources=VCPU:1&limit=2') == first


def _two_of(world, allowed):
    """The allocation requests of one ``limit=2`` answer: two different
    ones, among ``allowed``, with the summaries of their hosts alone."""
    body = world.body('resources=VCPU:1&limit=2')
    found = [allocations for allocations, _ in world.answers(body)]
    assert len(found) == len(set(found)) == 2
    assert set(found) <= allowed
    hosts = {name for allocations in found for name, _, _ in allocations}
    assert set(world.summaries(body)) == hosts
    return found


def test_randomize_returns_valid_and_varied_answers(configured):
    world = _hosts(5, configured(randomize_allocation_candidates=True))
    every = {alloc(**{'cn%d' % index: {'VCPU': 1}}) for index in range(5)}
    seen = set()
    for _ in range(20):
        seen.add(frozenset(_two_of(world, every)))
    assert len(seen) > 1
    assert world.allocations('resources=VCPU:1') == every


def test_randomize_with_a_maximum_samples_the_first_found(configured):
    """As upstream: the first max_allocation_candidates in the order they
    are found, shuffled, then the limit; never one past them."""
    first_three = {alloc(**{'cn%d' % index: {'VCPU': 1}})
                   for index in range(3)}
    world = _hosts(10, configured(randomize_allocation_candidates=True,
                                  max_allocation_candidates=3))
    seen = set()
    for _ in range(30):
        seen.update(_two_of(world, first_three))
    assert seen == first_three
    assert world.allocations('resources=VCPU:1') == first_three


def test_randomize_on_a_wide_tree(configured):
    world = _wide(configured(randomize_allocation_candidates=True))
    seen = set()
    for _ in range(5):
        body = world.body(_groups(5, limit=10))
        found = _isolated(world, body, 5)
        assert len(found) == 10
        _whole_wide_tree(world, body)
        seen.add(frozenset(found))
    assert len(seen) > 1
    assert len(_isolated(world, world.body(_groups(3)), 3)) == 8 * 7 * 6


def _three_trees(world):
    for tree in ('t1', 't2', 't3'):
        world.add(tree, VCPU=8)
        for child in ('a', 'b', 'c'):
            world.add('%s-%s' % (tree, child), parent=tree, VGPU=1)
    return world


def _roots(world, body):
    return [{name.split('-')[0] for name, _, _ in allocations}
            for allocations, _ in world.answers(body)]


@pytest.mark.parametrize('strategy, trees', [
    ('depth-first', 1), ('breadth-first', 3)])
@pytest.mark.parametrize('bound', ['limit', 'max'])
def test_generation_strategy(configured, strategy, trees, bound):
    options = {'allocation_candidates_generation_strategy': strategy}
    query = 'resources1=VGPU:1'
    if bound == 'limit':
        query += '&limit=3'
    else:
        options['max_allocation_candidates'] = 3
    world = _three_trees(configured(**options))
    body = world.body(query)
    roots = _roots(world, body)
    assert len(roots) == 3
    assert all(len(answer) == 1 for answer in roots)
    assert len(set().union(*roots)) == trees
    assert len(world.summaries(body)) == 4 * trees


def test_breadth_first_takes_one_per_tree_in_turn(configured):
    world = _three_trees(configured(
        allocation_candidates_generation_strategy='breadth-first'))
    body = world.body('resources1=VGPU:1&limit=7')
    roots = [answer.pop() for answer in _roots(world, body)]
    assert len(roots) == 7
    assert len(set(roots[0:3])) == len(set(roots[3:6])) == 3
    assert roots[0:3] == roots[3:6]
    assert len(set(world.allocations('resources1=VGPU:1'))) == 9


def test_breadth_first_with_randomize(configured):
    world = _three_trees(configured(
        allocation_candidates_generation_strategy='breadth-first',
        randomize_allocation_candidates=True))
    for _ in range(5):
        roots = _roots(world, world.body('resources1=VGPU:1&limit=3'))
        assert len(set().union(*roots)) == 3


# -- a bounded answer reads trees a page at a time ---------------------------
#
# The pages are normally at least 16 trees; with pages of 1, 4, 16 ... the
# small deployments below span several pages, and a bounded answer must be
# exactly the start of the unbounded one, whatever pages it came from.

@pytest.fixture
def small_pages(monkeypatch):
    from placement.candidates import search
    monkeypatch.setattr(search, '_FIRST_PAGE', 1)


SHARED_DISK_AGG = '5a1c4c53-6f4e-4bd9-9a7d-3c4fa5ad2b61'


def _selective(world, count=24):
    """``count`` hosts; every third has AVX2; hosts 2, 9, 10 and 17 take
    DISK_GB from a sharing provider as well as (9 and 17 only) from their
    own disk, and host 5 is full."""
    world.add('shared', DISK_GB=1000, traits=('MISC_SHARES_VIA_AGGREGATE',),
              aggregates=(SHARED_DISK_AGG,))
    for index in range(count):
        inventory = {'VCPU': 8}
        if index not in (2, 10):
            inventory['DISK_GB'] = 100
        world.add('cn%d' % index,
                  traits=('HW_CPU_X86_AVX2',) if index % 3 == 0 else (),
                  aggregates=((SHARED_DISK_AGG,)
                              if index in (2, 9, 10, 17) else ()),
                  **inventory)
    put(world.client, C1, {world.uuid('cn5'): {'VCPU': 8}})
    return world


@pytest.mark.parametrize('query', [
    'resources=VCPU:1,DISK_GB:10',
    'resources=VCPU:1,DISK_GB:10&required=HW_CPU_X86_AVX2',
    'resources1=VCPU:1&resources2=DISK_GB:10&group_policy=none',
    'resources=DISK_GB:10&member_of=' + SHARED_DISK_AGG,
])
def test_limited_answer_is_the_start_of_the_unlimited_one(
        world, small_pages, query):
    _selective(world)
    every = world.answers(world.body(query))
    assert len(every) == len(set(every)) >= 3
    for limit in range(1, len(every) + 2):
        body = world.body(query + '&limit=%d' % limit)
        assert world.answers(body) == every[:limit]
        hosts = {name for allocations, _ in every[:limit]
                 for name, _, _ in allocations}
        assert set(world.summaries(body)) == hosts


def test_sharing_provider_alone_answers_once_across_pages(world,
                                                          small_pages):
    _selective(world)
    query = 'resources=DISK_GB:10&member_of=' + SHARED_DISK_AGG
    for limit in ('', '&limit=1', '&limit=50'):
        found = world.allocations(query + '&required=!HW_CPU_X86_AVX2'
                                  + limit)
        assert alloc(shared={'DISK_GB': 10}) in found


def test_limited_answer_with_root_required_across_pages(world, small_pages):
    _selective(world)
    query = 'resources=VCPU:1&root_required=HW_CPU_X86_AVX2'
    every = world.answers(world.body(query))
    assert [sorted(name for name, _, _ in allocations)
            for allocations, _ in every] == [
        ['cn%d' % index] for index in range(0, 24, 3)]
    assert world.answers(world.body(query + '&limit=5')) == every[:5]


def test_limit_beyond_every_page_returns_everything(world, small_pages):
    _hosts(21, world)
    assert len(world.allocations('resources=VCPU:1&limit=100')) == 21


@pytest.mark.parametrize('strategy, trees', [
    ('depth-first', 1), ('breadth-first', 3)])
def test_generation_strategy_across_pages(configured, small_pages, strategy,
                                          trees):
    world = _three_trees(configured(
        allocation_candidates_generation_strategy=strategy))
    body = world.body('resources1=VGPU:1&limit=7')
    roots = [answer.pop() for answer in _roots(world, body)]
    assert len(roots) == 7
    if strategy == 'breadth-first':
        # One from each tree before a second from any, though every tree
        # is a page of its own.
        assert roots[0:3] == roots[3:6] == ['t1', 't2', 't3']
    else:
        assert roots == ['t1'] * 3 + ['t2'] * 3 + ['t3']


def test_randomize_with_pages(configured, small_pages):
    world = _hosts(10, configured(randomize_allocation_candidates=True))
    every = {alloc(**{'cn%d' % index: {'VCPU': 1}}) for index in range(10)}
    seen = set()
    for _ in range(10):
        found = world.allocations('resources=VCPU:1&limit=3')
        assert len(found) == 3 and found <= every
        seen.add(frozenset(found))
    assert len(seen) > 1
