"""GET /allocation_candidates/capacity: how many copies of a request fit
in each tree now, checked against a brute-force count on the property
test's random deployments, and on a few hand-built ones."""

import collections
import functools
import unittest.mock as mock

import hypothesis
import pytest

from placement.candidates import capacity as capacity_module

from tests.functional import candidates_reference as ref
from tests.functional import test_candidates_property as prop
from tests.functional.test_allocation_candidates import AGG_A
from tests.functional.test_allocation_candidates import SHARES
from tests.functional.test_allocation_candidates import World
from tests.functional.test_candidates_explain import _without_request_id

api = prop.api


@pytest.fixture
def world(client):
    return World(client)


def capacity(world, query, version=None, status=None):
    return world.client.get('/allocation_candidates/capacity?' + query,
                            version=version, status=status)


def by_name(world, copies):
    return {world.names[uuid]: count for uuid, count in copies.items()}


# -- hand-built ----------------------------------------------------------------

def test_flat_with_units_ratio_and_reserved(world):
    world.add('cn1', VCPU={'total': 16, 'reserved': 4,
                           'allocation_ratio': 2.0}, MEMORY_MB=4096)
    world.add('cn2', VCPU={'total': 8, 'max_unit': 2}, MEMORY_MB=4096)
    world.add('cn3', VCPU=8, MEMORY_MB={'total': 4096, 'step_size': 1000})
    body = capacity(world, 'resources=VCPU:4,MEMORY_MB:1000').json
    # cn1: 24 VCPU / 4 = 6, 4096 MB / 1000 = 4; cn2: max_unit 2 < 4;
    # cn3: 2 by VCPU.
    assert by_name(world, body['roots']) == {'cn1': 4, 'cn2': 0, 'cn3': 2}
    assert body['total'] == 6
    assert body['sharing'] == {} and body['bounded'] == []
    assert body['limited_by_sharing'] is False


def test_nested_isolate_counts_distinct_children_per_copy(world):
    world.add('cn')
    for numa in ('cn.numa0', 'cn.numa1'):
        world.add(numa, 'cn', VCPU=4)
    query = 'resources1=VCPU:2&resources2=VCPU:2&group_policy=%s'
    assert by_name(world, capacity(world, query % 'isolate').json[
        'roots']) == {'cn': 2}
    assert by_name(world, capacity(world, query % 'none').json[
        'roots']) == {'cn': 2}
    world.add('cn.numa2', 'cn', VCPU=1)
    assert capacity(world, 'resources1=VCPU:3&resources2=VCPU:1'
                    '&group_policy=isolate').json['total'] == 2


def test_sharing_counts_as_its_only_user_and_says_when_it_limits(world):
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('cn2', VCPU=8, aggregates=[AGG_A])
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_A])
    body = capacity(world, 'resources=VCPU:1,DISK_GB:20').json
    assert by_name(world, body['roots']) == {'cn1': 5, 'cn2': 5, 'ss': 0}
    assert by_name(world, body['sharing']) == {'ss': 5}
    assert body['total'] == 10 and body['limited_by_sharing'] is True
    body = capacity(world, 'resources=VCPU:1,DISK_GB:5').json
    assert body['total'] == 16 and body['limited_by_sharing'] is False


def test_errors_versions_and_policy_are_the_candidates(world):
    world.add('cn', VCPU=8)
    for query in ('resources=CUSTOM_NOPE:1', 'resources=VCPU:1&limit=x',
                  'resources=VCPU:1&required=CUSTOM_NOPE'):
        expected = world.get(query, status=400)
        got = capacity(world, query, status=400)
        assert _without_request_id(got) == _without_request_id(expected)
    capacity(world, 'resources=VCPU:1', version='1.9', status=404)
    resp = world.client.get('/allocation_candidates/capacity?resources='
                            'VCPU:1', headers={'X-Roles': 'service'},
                            status=403)
    assert 'capacity' in resp.json['errors'][0]['detail']


# -- the property ----------------------------------------------------------------

class _OneAnchor(ref.Deployment):
    """The deployment with one tree anchoring candidates."""

    def __init__(self, deployment, anchor):
        self.__dict__.update(deployment.__dict__)
        self.anchor = anchor

    @property
    def roots(self):
        return [self.anchor]


def _free(dep):
    return {(p.uuid, rc): inv.capacity - dep.used[p.uuid, rc]
            for p in dep.providers for rc, inv in p.inventories.items()}


def brute_force_copies(patterns, free):
    """The most copies of ``patterns`` (each {(uuid, class): amount})
    fitting ``free``, by trying every count of every pattern."""
    patterns = [tuple(sorted(p.items())) for p in patterns]
    keys = sorted({key for p in patterns for key, _ in p})

    @functools.lru_cache(maxsize=None)
    def most(index, left):
        if index == len(patterns):
            return 0
        room = dict(zip(keys, left))
        best = most(index + 1, left)
        if all(room[key] >= amount for key, amount in patterns[index]):
            for key, amount in patterns[index]:
                room[key] -= amount
            best = max(best, 1 + most(index, tuple(room[k] for k in keys)))
        return best

    return most(0, tuple(free[key] for key in keys))


def expected_capacity(dep, req):
    free = _free(dep)
    roots, per_sharing = {}, collections.defaultdict(set)
    for anchor in dep.roots:
        found, _ = ref.allocation_candidates(_OneAnchor(dep, anchor), req)
        patterns = {frozenset(((uuid, rc), amount)
                              for uuid, rc, amount in resources)
                    for resources, _ in found}
        roots[anchor] = brute_force_copies([dict(p) for p in patterns], free)
        for pattern in patterns:
            for uuid in {key[0] for key, _ in pattern}:
                if dep.by_uuid[uuid].sharing:
                    per_sharing[uuid].add(frozenset(
                        item for item in pattern if item[0][0] == uuid))
    sharing = {p.uuid: brute_force_copies(
        [dict(x) for x in per_sharing[p.uuid]], free)
        for p in dep.providers if p.sharing}
    return roots, sharing


@prop.on_random_deployments(40)
@hypothesis.given(scenario=prop.scenarios())
def test_capacity_is_the_brute_force_count(api, scenario):
    dep, reqs = prop.built(api, scenario)
    for req in reqs:
        resp = api.get('/allocation_candidates/capacity?' + req.query(),
                       status='*')
        if resp.status_int == 400:
            # An unknown name the candidates refuse too.
            api.get('/allocation_candidates?' + req.query(), status=400)
            continue
        body = resp.json
        roots, sharing = expected_capacity(dep, req)
        described = dep.with_names('%r\n%s' % (dep, req.describe(dep)))
        # A tree past the search's bounds (a few random deployments have
        # over 200 usage patterns in one tree) is counted low, and says
        # so; every other is exact.
        bounded = set(body['bounded'])
        assert {uuid: copies for uuid, copies in body['roots'].items()
                if uuid not in bounded} == {
            uuid: copies for uuid, copies in roots.items()
            if uuid not in bounded}, described
        assert all(body['roots'][uuid] <= roots[uuid]
                   for uuid in bounded), described
        assert body['total'] == sum(body['roots'].values())
        if not bounded:
            assert body['sharing'] == sharing, described


@pytest.mark.parametrize('bound', ['PATTERN_BOUND', 'NODE_BOUND'])
def test_a_search_past_its_bound_is_a_lower_bound_and_says_so(world, bound):
    world.client.put('/resource_classes/CUSTOM_GPU', status=(201, 204))
    world.add('cn')
    for n in range(4):
        world.add('cn.gpu%d' % n, 'cn', CUSTOM_GPU=1)
    query = ('resources1=CUSTOM_GPU:1&resources2=CUSTOM_GPU:1'
             '&group_policy=isolate')
    body = capacity(world, query).json
    assert (by_name(world, body['roots']), body['bounded']) == ({'cn': 2},
                                                                [])
    with mock.patch.object(capacity_module, bound, 1):
        body = capacity(world, query).json
    assert body['roots'][world.uuid('cn')] < 2
    assert body['bounded'] == [world.uuid('cn')]
