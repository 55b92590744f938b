"""GET /allocation_candidates: response shapes per microversion, filters,
sharing providers and errors.

The search itself (wide trees, group policies, capacity, limits and the
[placement] options) is covered in test_allocation_candidates_search.py,
which reuses the helpers below.  Answers are compared exactly, with
providers named after the names the tests give them.
"""

import pytest

from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put

AGG_A = 'f918801a-5e54-4bee-9095-09a9d0c786b8'
AGG_B = 'a893eb5c-e2a0-4251-ab26-f71d3b0cfc0b'
BAD_VALUE = 'placement.query.bad_value'
DUPLICATE_KEY = 'placement.query.duplicate_key'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def alloc(**by_provider):
    """An allocation request's allocations: alloc(cn={'VCPU': 1})."""
    return frozenset((name, rc, amount)
                     for name, resources in by_provider.items()
                     for rc, amount in resources.items())


def maps(mappings):
    """An allocation request's mappings: maps({'': ['cn']})."""
    return frozenset((suffix, tuple(sorted(names)))
                     for suffix, names in mappings.items())


def capacity(cap, used=0):
    return {'capacity': cap, 'used': used}


class World:
    """Providers created through the API, known by the names given them."""

    def __init__(self, client):
        self.client = client
        self.rps = {}
        self.names = {}

    def add(self, name, parent=None, traits=(), aggregates=(), **inventory):
        parent = self.rps[parent] if parent else None
        rp = provider(self.client, name, parent, **inventory)
        self.rps[name] = rp
        self.names[rp['uuid']] = name
        if traits:
            self.set_traits(name, *traits)
        if aggregates:
            self.set_aggregates(name, *aggregates)
        return rp

    def uuid(self, name):
        return self.rps[name]['uuid']

    def _generation(self, name):
        return self.client.get(
            '/resource_providers/' + self.uuid(name)).json['generation']

    def set_traits(self, name, *traits):
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.client.put('/traits/' + trait, status=(201, 204))
        self.client.put(
            '/resource_providers/%s/traits' % self.uuid(name),
            json={'traits': list(traits),
                  'resource_provider_generation': self._generation(name)})

    def set_aggregates(self, name, *aggregates):
        self.client.put(
            '/resource_providers/%s/aggregates' % self.uuid(name),
            json={'aggregates': list(aggregates),
                  'resource_provider_generation': self._generation(name)})

    def get(self, query, version=None, status=None):
        return self.client.get('/allocation_candidates?' + query,
                               version=version, status=status)

    def body(self, query, version=None):
        return self.get(query, version).json

    def answers(self, body):
        """Each allocation request (dict form) as (allocations, mappings),
        in the order given."""
        result = []
        for request in body['allocation_requests']:
            allocations = frozenset(
                (self.names[uuid], rc, amount)
                for uuid, entry in request['allocations'].items()
                for rc, amount in entry['resources'].items())
            mappings = frozenset(
                (suffix, tuple(sorted(self.names[uuid] for uuid in uuids)))
                for suffix, uuids in request.get('mappings', {}).items())
            result.append((allocations, mappings))
        return result

    def allocations(self, query, version=None):
        """The set of allocations answered; each exactly once."""
        found = [allocations for allocations, _ in
                 self.answers(self.body(query, version))]
        assert len(found) == len(set(found))
        return set(found)

    def summaries(self, body):
        """provider_summaries keyed by name, tree uuids as names too."""
        result = {}
        for uuid, summary in body['provider_summaries'].items():
            summary = dict(summary)
            for key in ('parent_provider_uuid', 'root_provider_uuid'):
                if summary.get(key) is not None:
                    summary[key] = self.names[summary[key]]
            if 'traits' in summary:
                summary['traits'] = sorted(summary['traits'])
            result[self.names[uuid]] = summary
        return result


@pytest.fixture
def world(client):
    return World(client)


# -- microversions -----------------------------------------------------------

def test_not_found_before_1_10(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources=VCPU:1', version='1.9', status=404)
    assert error(resp)['title'] == 'Not Found'


@pytest.mark.parametrize('version', ['1.10', '1.11'])
def test_list_form_before_1_12(world, version):
    cn = world.add('cn', VCPU=8, MEMORY_MB=2048, DISK_GB=100)
    body = world.body('resources=VCPU:1,MEMORY_MB:512', version)
    assert body == {
        'allocation_requests': [{'allocations': [
            {'resource_provider': {'uuid': cn['uuid']},
             'resources': {'VCPU': 1, 'MEMORY_MB': 512}}]}],
        'provider_summaries': {cn['uuid']: {'resources': {
            'VCPU': capacity(8), 'MEMORY_MB': capacity(2048)}}}}


def test_list_form_names_every_provider_of_an_answer(world):
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_A])
    body = world.body('resources=VCPU:2,DISK_GB:10', '1.11')
    [request] = body['allocation_requests']
    assert sorted((world.names[entry['resource_provider']['uuid']],
                   entry['resources'])
                  for entry in request['allocations']) == [
        ('cn1', {'VCPU': 2}), ('ss', {'DISK_GB': 10})]


def test_dict_form_from_1_12(world):
    cn = world.add('cn', VCPU=8, MEMORY_MB=2048)
    body = world.body('resources=VCPU:1,MEMORY_MB:512', '1.12')
    assert body == {
        'allocation_requests': [{'allocations': {
            cn['uuid']: {'resources': {'VCPU': 1, 'MEMORY_MB': 512}}}}],
        'provider_summaries': {cn['uuid']: {'resources': {
            'VCPU': capacity(8), 'MEMORY_MB': capacity(2048)}}}}


def test_limit_needs_1_16(world):
    for name in ('cn1', 'cn2', 'cn3'):
        world.add(name, VCPU=8)
    resp = world.get('resources=VCPU:1&limit=2', version='1.15', status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']
    body = world.body('resources=VCPU:1&limit=2', '1.16')
    assert len(body['allocation_requests']) == 2
    assert len(world.allocations('resources=VCPU:1', '1.16')) == 3


@pytest.mark.parametrize('limit', ['0', '-1', 'two'])
def test_limit_must_be_a_positive_integer(world, limit):
    world.add('cn', VCPU=8)
    resp = world.get('resources=VCPU:1&limit=' + limit, status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']


def test_repeated_limit_counts_the_first_and_checks_it(world):
    for name in ('cn1', 'cn2', 'cn3'):
        world.add(name, VCPU=8)
    body = world.body('resources=VCPU:1&limit=1&limit=2')
    assert len(body['allocation_requests']) == 1
    # The first value is the one used, so it must be checked too (not a
    # 500 from using an unchecked 'two').
    resp = world.get('resources=VCPU:1&limit=two&limit=2', status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']


def test_traits_in_summaries_from_1_17(world):
    world.add('cn', VCPU=8, traits=['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'])
    world.add('bare', VCPU=8)
    old = world.summaries(world.body('resources=VCPU:1', '1.16'))
    assert old == {'cn': {'resources': {'VCPU': capacity(8)}},
                   'bare': {'resources': {'VCPU': capacity(8)}}}
    new = world.summaries(world.body('resources=VCPU:1', '1.17'))
    assert new == {
        'cn': {'resources': {'VCPU': capacity(8)},
               'traits': ['CUSTOM_GOLD', 'HW_CPU_X86_AVX2']},
        'bare': {'resources': {'VCPU': capacity(8)}, 'traits': []}}
    resp = world.get('resources=VCPU:1&required=CUSTOM_GOLD', version='1.16',
                     status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']


def test_summaries_show_every_class_from_1_27(world):
    world.add('cn', VCPU=8, MEMORY_MB=2048, DISK_GB=100)
    put(world.client, C1, {world.uuid('cn'): {'DISK_GB': 40}})
    old = world.summaries(world.body('resources=VCPU:1', '1.26'))
    assert old == {'cn': {'resources': {'VCPU': capacity(8)}, 'traits': []}}
    new = world.summaries(world.body('resources=VCPU:1', '1.27'))
    assert new == {'cn': {'resources': {
        'VCPU': capacity(8), 'MEMORY_MB': capacity(2048),
        'DISK_GB': capacity(100, 40)}, 'traits': []}}


@pytest.fixture
def nested(world):
    """cn (VCPU) with a child pf (VFs); cn2 has both itself."""
    world.add('cn', VCPU=4)
    world.add('pf', parent='cn', SRIOV_NET_VF=8)
    world.add('cn2', VCPU=4, SRIOV_NET_VF=8)
    return world


def test_tree_in_summaries_from_1_29(nested):
    body = nested.body('resources=VCPU:1,SRIOV_NET_VF:1', '1.29')
    assert set(nested.answers(body)) == {
        (alloc(cn={'VCPU': 1}, pf={'SRIOV_NET_VF': 1}), frozenset()),
        (alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 1}), frozenset())}
    assert nested.summaries(body) == {
        'cn': {'resources': {'VCPU': capacity(4)}, 'traits': [],
               'parent_provider_uuid': None, 'root_provider_uuid': 'cn'},
        'pf': {'resources': {'SRIOV_NET_VF': capacity(8)}, 'traits': [],
               'parent_provider_uuid': 'cn', 'root_provider_uuid': 'cn'},
        'cn2': {'resources': {'VCPU': capacity(4),
                              'SRIOV_NET_VF': capacity(8)},
                'traits': [], 'parent_provider_uuid': None,
                'root_provider_uuid': 'cn2'}}


def test_before_1_29_an_answer_uses_one_provider_per_tree(nested):
    body = nested.body('resources=VCPU:1,SRIOV_NET_VF:1', '1.28')
    assert nested.answers(body) == [
        (alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 1}), frozenset())]
    assert nested.summaries(body) == {
        'cn2': {'resources': {'VCPU': capacity(4),
                              'SRIOV_NET_VF': capacity(8)}, 'traits': []}}


def test_before_1_29_summaries_only_show_providers_used(nested):
    body = nested.body('resources=SRIOV_NET_VF:1', '1.28')
    assert set(nested.answers(body)) == {
        (alloc(pf={'SRIOV_NET_VF': 1}), frozenset()),
        (alloc(cn2={'SRIOV_NET_VF': 1}), frozenset())}
    assert set(nested.summaries(body)) == {'pf', 'cn2'}
    # From 1.29 the whole tree of a provider used is described.
    body = nested.body('resources=SRIOV_NET_VF:1', '1.29')
    assert set(nested.summaries(body)) == {'cn', 'pf', 'cn2'}


def test_mappings_from_1_34(nested):
    query = 'resources=VCPU:1&resources_NIC=SRIOV_NET_VF:2&group_policy=none'
    old = nested.answers(nested.body(query, '1.33'))
    assert set(old) == {
        (alloc(cn={'VCPU': 1}, pf={'SRIOV_NET_VF': 2}), frozenset()),
        (alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 2}), frozenset())}
    new = nested.answers(nested.body(query, '1.34'))
    assert set(new) == {
        (alloc(cn={'VCPU': 1}, pf={'SRIOV_NET_VF': 2}),
         maps({'': ['cn'], '_NIC': ['pf']})),
        (alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 2}),
         maps({'': ['cn2'], '_NIC': ['cn2']}))}


def test_named_suffixes_need_1_33(nested):
    query = 'resources_NIC=SRIOV_NET_VF:1'
    resp = nested.get(query, version='1.32', status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']
    assert nested.allocations('resources1=SRIOV_NET_VF:1', '1.32') == {
        alloc(pf={'SRIOV_NET_VF': 1}), alloc(cn2={'SRIOV_NET_VF': 1})}


# -- filters -----------------------------------------------------------------

@pytest.fixture
def three(world):
    world.add('cn1', VCPU=8, traits=['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'],
              aggregates=[AGG_A])
    world.add('cn2', VCPU=8, traits=['HW_CPU_X86_SSE'], aggregates=[AGG_B])
    world.add('cn3', VCPU=8)
    return world


def _hosts(world, query, version=None):
    """The providers of single-provider answers."""
    return {name for allocations in world.allocations(query, version)
            for name, _, _ in allocations}


@pytest.mark.parametrize('query, version, expected', [
    ('required=HW_CPU_X86_AVX2', '1.17', {'cn1'}),
    ('required=HW_CPU_X86_AVX2,CUSTOM_GOLD', '1.17', {'cn1'}),
    ('required=HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.17', set()),
    ('required=!HW_CPU_X86_AVX2', '1.22', {'cn2', 'cn3'}),
    ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.39', {'cn1', 'cn2'}),
    ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE&required=!CUSTOM_GOLD',
     '1.39', {'cn2'}),
    ('member_of=' + AGG_A, '1.21', {'cn1'}),
    ('member_of=in:%s,%s' % (AGG_A, AGG_B), '1.21', {'cn1', 'cn2'}),
    ('member_of=%s&member_of=%s' % (AGG_A, AGG_B), '1.24', set()),
    ('member_of=!' + AGG_A, '1.32', {'cn2', 'cn3'}),
    ('member_of=!in:%s,%s' % (AGG_A, AGG_B), '1.32', {'cn3'}),
    ('root_required=CUSTOM_GOLD', '1.35', {'cn1'}),
    ('root_required=!CUSTOM_GOLD', '1.35', {'cn2', 'cn3'}),
])
def test_filters(three, query, version, expected):
    assert _hosts(three, 'resources=VCPU:1&' + query, version) == expected


@pytest.mark.parametrize('query, version', [
    ('required=!HW_CPU_X86_AVX2', '1.21'),
    ('required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.38'),
    ('member_of=!' + AGG_A, '1.31'),
    ('member_of=%s&member_of=%s' % (AGG_A, AGG_B), '1.23'),
])
def test_filters_before_their_microversion_are_400(three, query, version):
    three.get('resources=VCPU:1&' + query, version=version, status=400)


def test_in_tree_names_any_provider_of_the_tree(nested):
    query = 'resources=VCPU:1&in_tree=' + nested.uuid('pf')
    assert nested.allocations(query) == {alloc(cn={'VCPU': 1})}
    query = 'resources=VCPU:1&in_tree=' + nested.uuid('cn2')
    assert nested.allocations(query) == {alloc(cn2={'VCPU': 1})}
    query = ('resources=VCPU:1&in_tree=1f6a8b2c-1111-4c3d-9e8f-0a1b2c3d4e5f')
    assert nested.body(query) == {'allocation_requests': [],
                                  'provider_summaries': {}}


def test_root_required_looks_at_the_root_only(nested):
    nested.set_traits('pf', 'CUSTOM_GOLD')
    body = nested.body('resources=SRIOV_NET_VF:1&root_required=CUSTOM_GOLD')
    assert body == {'allocation_requests': [], 'provider_summaries': {}}
    nested.set_traits('cn', 'CUSTOM_GOLD')
    assert nested.allocations(
        'resources=SRIOV_NET_VF:1&root_required=CUSTOM_GOLD') == {
        alloc(pf={'SRIOV_NET_VF': 1})}


def test_same_subtree(world):
    world.add('cn')
    for n in '01':
        world.add('numa' + n, parent='cn', VCPU=4)
        world.add('nic' + n, parent='numa' + n, SRIOV_NET_VF=4)
    query = ('resources_C=VCPU:1&resources_N=SRIOV_NET_VF:1'
             '&group_policy=none')
    assert len(world.allocations(query)) == 4
    answers = set(world.answers(world.body(query + '&same_subtree=_C,_N')))
    assert answers == {
        (alloc(numa0={'VCPU': 1}, nic0={'SRIOV_NET_VF': 1}),
         maps({'_C': ['numa0'], '_N': ['nic0']})),
        (alloc(numa1={'VCPU': 1}, nic1={'SRIOV_NET_VF': 1}),
         maps({'_C': ['numa1'], '_N': ['nic1']}))}


def test_unsuffixed_group_spreads_over_a_tree_granular_does_not(nested):
    nested.add('cn3', VCPU=4)
    nested.add('pf3', parent='cn3', SRIOV_NET_VF=8)
    assert nested.allocations('resources=VCPU:1,SRIOV_NET_VF:1') == {
        alloc(cn={'VCPU': 1}, pf={'SRIOV_NET_VF': 1}),
        alloc(cn3={'VCPU': 1}, pf3={'SRIOV_NET_VF': 1}),
        alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 1})}
    assert nested.allocations('resources1=VCPU:1,SRIOV_NET_VF:1') == {
        alloc(cn2={'VCPU': 1, 'SRIOV_NET_VF': 1})}


# -- sharing providers -------------------------------------------------------

@pytest.fixture
def shared(world):
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('cn2', VCPU=8, aggregates=[AGG_A])
    world.add('cn3', VCPU=8, aggregates=[AGG_B])
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_A])
    return world


def test_sharing_provider_serves_the_trees_of_its_aggregate(shared):
    put(shared.client, C1, {shared.uuid('ss'): {'DISK_GB': 30}})
    body = shared.body('resources=VCPU:1,DISK_GB:10')
    assert set(shared.answers(body)) == {
        (alloc(cn1={'VCPU': 1}, ss={'DISK_GB': 10}),
         maps({'': ['cn1', 'ss']})),
        (alloc(cn2={'VCPU': 1}, ss={'DISK_GB': 10}),
         maps({'': ['cn2', 'ss']}))}
    assert shared.summaries(body) == {
        name: {'resources': {'VCPU': capacity(8)}, 'traits': [],
               'parent_provider_uuid': None, 'root_provider_uuid': name}
        for name in ('cn1', 'cn2')} | {
        'ss': {'resources': {'DISK_GB': capacity(100, 30)},
               'traits': [SHARES], 'parent_provider_uuid': None,
               'root_provider_uuid': 'ss'}}


def test_local_disk_and_shared_disk_are_both_offered(shared):
    shared.add('cn4', VCPU=8, DISK_GB=50, aggregates=[AGG_A])
    assert shared.allocations('resources=VCPU:1,DISK_GB:10') == {
        alloc(cn1={'VCPU': 1}, ss={'DISK_GB': 10}),
        alloc(cn2={'VCPU': 1}, ss={'DISK_GB': 10}),
        alloc(cn4={'VCPU': 1}, ss={'DISK_GB': 10}),
        alloc(cn4={'VCPU': 1, 'DISK_GB': 10})}


def test_sharing_provider_alone_is_one_answer(shared):
    # It serves three trees (its own and two others) but is one answer.
    body = shared.body('resources=DISK_GB:10')
    assert shared.answers(body) == [
        (alloc(ss={'DISK_GB': 10}), maps({'': ['ss']}))]
    assert set(shared.summaries(body)) == {'ss'}
    body = shared.body('resources1=DISK_GB:10&resources2=DISK_GB:10'
                       '&group_policy=none')
    assert shared.answers(body) == [
        (alloc(ss={'DISK_GB': 20}), maps({'1': ['ss'], '2': ['ss']}))]


def test_sharing_needs_the_trait(shared):
    shared.set_traits('ss')
    assert shared.allocations('resources=VCPU:1,DISK_GB:10') == set()


def test_granular_group_from_a_sharing_provider(shared):
    query = ('resources_CPU=VCPU:1&resources_DISK=DISK_GB:10'
             '&group_policy=isolate')
    assert set(shared.answers(shared.body(query))) == {
        (alloc(cn1={'VCPU': 1}, ss={'DISK_GB': 10}),
         maps({'_CPU': ['cn1'], '_DISK': ['ss']})),
        (alloc(cn2={'VCPU': 1}, ss={'DISK_GB': 10}),
         maps({'_CPU': ['cn2'], '_DISK': ['ss']}))}


# -- errors ------------------------------------------------------------------

def test_unknown_resource_class(world):
    world.add('cn', VCPU=8)
    for key in ('resources', 'resources1'):
        resp = world.get('%s=VCPU:1,CUSTOM_NOPE:1' % key, status=400)
        assert ('Invalid resource class in resources parameter: No such '
                'resource class CUSTOM_NOPE.' in error(resp)['detail'])


@pytest.mark.parametrize('query', [
    'resources=VCPU:1&required=CUSTOM_NOPE',
    'resources=VCPU:1&required=!CUSTOM_NOPE',
    'resources1=VCPU:1&required1=CUSTOM_NOPE',
    'resources=VCPU:1&root_required=CUSTOM_NOPE',
])
def test_unknown_trait(world, query):
    world.add('cn', VCPU=8)
    resp = world.get(query, status=400)
    assert 'No such trait(s): CUSTOM_NOPE.' in error(resp)['detail']


def test_no_resources_at_all(world):
    resp = world.get('', version='1.10', status=400)
    assert "'resources' is a required property" in error(resp)['detail']
    resp = world.get('', version='1.35', status=400)
    assert ('At least one request group (`resources` or `resources{$S}`) '
            'is required.' in error(resp)['detail'])
    resp = world.get('', version='1.36', status=400)
    assert ('There must be at least one resources or resources[$S] '
            'parameter.' in error(resp)['detail'])
    resp = world.get('resources=', status=400)
    assert 'Badly formed resources parameter. Expected resources query ' \
        'string parameter in form:' in error(resp)['detail']


def test_group_policy_is_required_with_two_granular_groups(world):
    world.add('cn', VCPU=8, MEMORY_MB=1024)
    for query in ('resources1=VCPU:1&resources2=MEMORY_MB:1',
                  'resources=VCPU:1&resources1=VCPU:1&resources2=VCPU:1'):
        resp = world.get(query, status=400)
        assert ('The "group_policy" parameter is required when specifying '
                'more than one "resources{N}" parameter.'
                in error(resp)['detail'])
    # One granular group (with or without the unsuffixed one) needs none.
    assert world.allocations('resources=VCPU:1&resources1=MEMORY_MB:1') == {
        alloc(cn={'VCPU': 1, 'MEMORY_MB': 1})}


def test_group_policy_value(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources1=VCPU:1&resources2=VCPU:1&group_policy=all',
                     status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']


def test_repeated_group_policy_checks_the_first(world):
    world.add('cn', VCPU=8)
    # The first value is the one used: a bogus one must not pass as
    # "none" because a later value is valid.
    resp = world.get('resources1=VCPU:1&resources2=VCPU:1'
                     '&group_policy=bogus&group_policy=isolate', status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']


def test_same_subtree_with_an_unknown_suffix(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources_A=VCPU:1&same_subtree=_A,_B', status=400)
    assert error(resp)['code'] == BAD_VALUE
    assert ("Real suffixes should be specified in `same_subtree`: ['_B'] "
            "not found in ['_A']." in error(resp)['detail'])


def test_same_subtree_with_the_unsuffixed_group(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources=VCPU:1&resources_A=VCPU:1'
                     '&same_subtree=_A,', status=400)
    assert error(resp)['code'] == BAD_VALUE
    assert ('Empty string (unsuffixed group) can not be specified in '
            '`same_subtree`' in error(resp)['detail'])


def test_root_required_given_twice(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources=VCPU:1&root_required=HW_CPU_X86_AVX2'
                     '&root_required=HW_CPU_X86_SSE', status=400)
    assert error(resp)['code'] == DUPLICATE_KEY
    assert ("Query parameter 'root_required' may be specified only once."
            in error(resp)['detail'])


def test_trait_both_required_and_forbidden(world):
    world.add('cn', VCPU=8)
    resp = world.get('resources=VCPU:1&required=HW_CPU_X86_AVX2'
                     '&required=!HW_CPU_X86_AVX2', status=400)
    assert ('Conflicting required and forbidden traits found in the '
            'following traits keys: required: (HW_CPU_X86_AVX2)'
            in error(resp)['detail'])



# -- encoding ----------------------------------------------------------------

@pytest.mark.parametrize('version', ['1.10', '1.29', '1.39'])
def test_an_answer_encoded_in_batches_and_streamed_is_the_same(
        world, monkeypatch, version):
    """Answers are encoded a batch at a time and a large body is sent in
    pieces (so that an answer at 100,000 providers is never whole as
    Python objects, nor copied whole once more): with batches of two
    and everything streamed, the body is the one encoded in one go."""
    from placement import json_encoding
    from placement.handlers import json_pieces
    for n in range(5):
        world.add('cn%d' % n, VCPU=8, MEMORY_MB=1024)
        world.add('cn%d-numa' % n, parent='cn%d' % n, VCPU=4)
    # A capacity past 64 bits: the standard library encodes that batch.
    world.add('huge', VCPU={'total': 8, 'allocation_ratio': 1e20})
    query = 'resources=VCPU:1'
    whole = world.get(query, version)
    assert 'Content-Length' in whole.headers
    monkeypatch.setattr(json_encoding, 'ENCODE_BATCH', 2)
    monkeypatch.setattr(json_pieces, '_JOINED_AT_MOST', 10)
    batched = world.get(query, version)
    assert batched.json == whole.json
    assert int(batched.headers['Content-Length']) == len(batched.body)
    assert len(whole.json['allocation_requests']) > 2
    assert len(whole.json['provider_summaries']) > 2
    assert whole.json['provider_summaries'][world.uuid('huge')][
        'resources']['VCPU']['capacity'] == 8 * 10 ** 20
