"""The /overview extensions (what the dashboard reads): every number
equals what upstream's own endpoints answer for the same providers
(inventories, usages, traits, aggregates, allocations), on every
backend; paging, filters, errors, versions and policy."""

import collections
import time

import pytest

from tests.functional.allocation_helpers import error
from tests.ui import scene as scene_module


def _call(client):
    def call(method, path, body=None):
        resp = client.request(method, path, json=body, status='*')
        return resp.status_int, (resp.json if resp.body else None)
    return call


@pytest.fixture
def scene(client):
    return scene_module.build(_call(client))


def get(client, path, status=200, **kwargs):
    return client.get(path, status=status, **kwargs).json


def capacity(record):
    return int((record['total'] - record['reserved'])
               * record['allocation_ratio'])


def upstream_view(client):
    """{uuid: {class: (record, used)}} from upstream's endpoints."""
    found = {}
    for rp in get(client, '/resource_providers')['resource_providers']:
        inventories = get(client, '/resource_providers/%s/inventories'
                          % rp['uuid'])['inventories']
        usages = get(client, '/resource_providers/%s/usages'
                     % rp['uuid'])['usages']
        found[rp['uuid']] = {rc: (record, usages.get(rc, 0))
                             for rc, record in inventories.items()}
    return found


# -- GET /overview ----------------------------------------------------------

def test_summary_equals_the_sums_of_upstreams_answers(client, scene):
    view = upstream_view(client)
    expected = collections.defaultdict(collections.Counter)
    histograms = collections.defaultdict(collections.Counter)
    for inventory in view.values():
        for rc, (record, used) in inventory.items():
            free = capacity(record) - used
            sums = expected[rc]
            sums['total'] += record['total']
            sums['reserved'] += record['reserved']
            sums['capacity'] += capacity(record)
            sums['used'] += used
            sums['free'] += max(free, 0)
            sums['over'] += max(-free, 0)
            sums['providers'] += 1
            sums['providers_with_free'] += free > 0
            sums['providers_over_capacity'] += free < 0
            sums['max_free'] = max(sums['max_free'], free)
            histograms[rc][free.bit_length() if free > 0 else 0] += 1
    body = get(client, '/overview')
    assert body['providers'] == len(view) == len(scene.providers)
    roots = {rp['root_provider_uuid'] for rp in get(
        client, '/resource_providers')['resource_providers']}
    assert body['trees'] == len(roots)
    assert body['sharing_providers'] == len(get(
        client, '/resource_providers?required=MISC_SHARES_VIA_AGGREGATE')[
        'resource_providers']) == 1
    assert body['providers_over_capacity'] == 1     # cn3
    assert list(body['resource_classes']) == sorted(expected)
    for rc, sums in body['resource_classes'].items():
        histogram = sums.pop('histogram')
        assert sums == dict(expected[rc]), rc
        assert sums['capacity'] - sums['used'] == sums['free'] - sums['over']
        assert {index: item['providers'] for index, item in
                enumerate(histogram) if item['providers']} == dict(
            histograms[rc])
        assert sum(item['providers'] for item in histogram) == sums[
            'providers']
    vcpu = body['resource_classes']['VCPU']
    assert vcpu['over'] == 2 and vcpu['providers_over_capacity'] == 1
    assert body['resource_classes']['DISK_GB']['capacity'] == 480 + 9900


def test_summary_histogram_bins_are_powers_of_two(client):
    world = scene_module
    call = _call(client)
    for name, total in (('a', 1), ('b', 3), ('c', 9)):
        uuid = world.provider_uuid(name)
        call('POST', '/resource_providers', {'name': name, 'uuid': uuid})
        call('PUT', '/resource_providers/%s/inventories' % uuid, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': total}}})
    histogram = get(client, '/overview')['resource_classes']['VCPU'][
        'histogram']
    assert histogram == [
        {'min': 0, 'max': 0, 'providers': 0},
        {'min': 1, 'max': 1, 'providers': 1},
        {'min': 2, 'max': 3, 'providers': 1},
        {'min': 4, 'max': 7, 'providers': 0},
        {'min': 8, 'max': 15, 'providers': 1}]


def test_summary_of_an_empty_cloud(client):
    assert get(client, '/overview') == {
        'providers': 0, 'trees': 0, 'sharing_providers': 0,
        'providers_over_capacity': 0, 'resource_classes': {}}


# -- GET /overview/providers ------------------------------------------------

def pages(client, query='', limit=10):
    """Every page of the listing, following next_marker."""
    found, marker, totals = [], None, set()
    while True:
        url = '/overview/providers?limit=%d' % limit + (
            '&' + query if query else '') + (
            '&marker=' + marker if marker else '')
        body = get(client, url)
        assert len(body['resource_providers']) <= limit
        found += body['resource_providers']
        totals.add(body['total'])
        marker = body['next_marker']
        if marker is None:
            assert len(totals) == 1 and totals.pop() == len(found)
            return found
        assert marker == body['resource_providers'][-1]['uuid']


def test_pages_list_every_provider_once_in_name_order(client, scene):
    listed = pages(client, limit=7)
    assert [rp['name'] for rp in listed] == sorted(scene.providers)
    view = upstream_view(client)
    upstream = {rp['uuid']: rp for rp in get(
        client, '/resource_providers')['resource_providers']}
    for rp in listed:
        mine = upstream[rp['uuid']]
        for field in ('name', 'generation', 'parent_provider_uuid',
                      'root_provider_uuid'):
            assert rp[field] == mine[field]
        assert {rc: (dict((k, v) for k, v in record.items()
                          if k not in ('capacity', 'used')),
                     record['used'])
                for rc, record in rp['resources'].items()} == view[
            rp['uuid']]
        assert all(record['capacity'] == capacity(record)
                   for record in rp['resources'].values())
        assert rp['over_capacity'] == (['VCPU'] if rp['name'] == 'cn3'
                                       else [])
        assert rp['sharing'] is (rp['name'] == 'ss1')


@pytest.mark.parametrize('mine, upstream', [
    ('required=CUSTOM_FILLER', 'required=CUSTOM_FILLER'),
    ('required=HW_CPU_X86_AVX2,!CUSTOM_FILLER',
     'required=HW_CPU_X86_AVX2,!CUSTOM_FILLER'),
    ('required=in:CUSTOM_RACK_A,CUSTOM_PHYSNET_A',
     'required=in:CUSTOM_RACK_A,CUSTOM_PHYSNET_A'),
    ('member_of=%s' % scene_module.AGG_EDGE,
     'member_of=%s' % scene_module.AGG_EDGE),
    ('member_of=!%s' % scene_module.AGG_EDGE,
     'member_of=!%s' % scene_module.AGG_EDGE),
    ('member_of=in:%s,%s' % (scene_module.AGG_EDGE, scene_module.AGG_RACK),
     'member_of=in:%s,%s' % (scene_module.AGG_EDGE, scene_module.AGG_RACK)),
    ('in_tree=%s' % scene_module.provider_uuid('cn1-numa1'),
     'in_tree=%s' % scene_module.provider_uuid('cn1-numa1')),
])
def test_filters_find_what_upstreams_listing_finds(client, scene, mine,
                                                   upstream):
    expected = sorted(rp['name'] for rp in get(
        client, '/resource_providers?' + upstream)['resource_providers'])
    assert expected
    assert [rp['name'] for rp in pages(client, mine, limit=4)] == expected


def test_free_filter_counts_capacity_less_usage(client, scene):
    view = upstream_view(client)
    for query, wanted in (('VCPU:5', {'VCPU': 5}),
                          ('VCPU:1,MEMORY_MB:8000',
                           {'VCPU': 1, 'MEMORY_MB': 8000}),
                          ('DISK_GB:9800', {'DISK_GB': 9800})):
        expected = sorted(
            scene.name_of(uuid) for uuid, inventory in view.items()
            if all(rc in inventory and capacity(inventory[rc][0])
                   - inventory[rc][1] >= amount
                   for rc, amount in wanted.items()))
        assert [rp['name'] for rp in pages(client, 'free=' + query)] == (
            expected), query
    assert [rp['name'] for rp in pages(client, 'free=DISK_GB:9800')] == [
        'ss1']


def test_prefix_matches_names_case_insensitively_and_uuids(client, scene):
    assert [rp['name'] for rp in pages(client, 'prefix=CN1')] == [
        'cn1', 'cn1-numa0', 'cn1-numa0-pf0', 'cn1-numa1']
    uuid = scene.providers['cn2']
    assert [rp['name'] for rp in pages(client, 'prefix=' + uuid[:13])] == [
        'cn2']
    assert pages(client, 'prefix=nothing-like-it') == []


def test_filters_combine(client, scene):
    assert [rp['name'] for rp in pages(
        client, 'prefix=fill&required=CUSTOM_FILLER&member_of=%s&free='
        'VCPU:5' % scene_module.AGG_EDGE)] == ['fill-01', 'fill-05']


@pytest.mark.parametrize('query', [
    'limit=0', 'limit=10001', 'limit=x', 'marker=not-a-uuid',
    'marker=%s' % scene_module.provider_uuid('nobody'),
    'required=CUSTOM_NO_SUCH', 'required=', 'free=VCPU', 'free=VCPU:-1',
    'free=NO_SUCH_CLASS:1', 'member_of=nope', 'in_tree=nope', 'color=red',
    'prefix=', 'required=in:A,!B'])
def test_bad_listing_queries_are_400s(client, scene, query):
    resp = client.get('/overview/providers?' + query, status=400)
    assert error(resp)['status'] == 400
    assert error(resp)['code'] == 'placement.undefined_code'


# -- GET /overview/providers/{uuid} -----------------------------------------

def test_tree_equals_upstreams_answers(client, scene):
    uuid = scene.providers['cn1-numa0-pf0']
    body = get(client, '/overview/providers/' + uuid)
    assert body['provider'] == uuid
    assert body['root_provider_uuid'] == scene.providers['cn1']
    # Depth first from the root, children by name.
    assert [(rp['name'], rp['depth']) for rp in body['providers']] == [
        ('cn1', 0), ('cn1-numa0', 1), ('cn1-numa0-pf0', 2),
        ('cn1-numa1', 1)]
    in_tree = {rp['uuid']: rp for rp in get(
        client, '/resource_providers?in_tree=' + uuid)['resource_providers']}
    assert {rp['uuid'] for rp in body['providers']} == set(in_tree)
    view = upstream_view(client)
    for rp in body['providers'] + body['sharing_providers']:
        base = '/resource_providers/' + rp['uuid']
        assert rp['traits'] == sorted(get(client, base + '/traits')[
            'traits'])
        assert rp['aggregates'] == sorted(get(client, base + '/aggregates')[
            'aggregates'])
        assert {rc: record['used'] for rc, record in rp['resources'].items()
                } == {rc: used for rc, (_, used) in view[rp['uuid']].items()}
    assert [(rp['name'], rp['via_aggregates'])
            for rp in body['sharing_providers']] == [
        ('ss1', [scene_module.AGG_RACK])]
    # Who holds there, as the provider allocations and each consumer's
    # own allocations say.
    expected = {}
    for rp in body['providers']:
        allocations = get(client, '/resource_providers/%s/allocations'
                          % rp['uuid'])['allocations']
        for consumer, held in allocations.items():
            expected.setdefault(consumer, {})[rp['uuid']] = held[
                'resources']
    assert {c['consumer']: c['resources'] for c in body['consumers']} == (
        expected)
    assert body['consumer_count'] == len(expected) == 2
    for found in body['consumers']:
        mine = get(client, '/allocations/' + found['consumer'])
        assert (found['project_id'], found['user_id'],
                found['consumer_type']) == (
            mine['project_id'], mine['user_id'], mine['consumer_type'])


def test_a_sharing_provider_shows_the_trees_it_shares_with(client, scene):
    body = get(client, '/overview/providers/' + scene.providers['ss1'])
    (ss1,) = body['providers']
    assert ss1['sharing'] is True
    assert ss1['shares_with_trees'] == 2    # cn1's and cn2's
    assert [c['consumer'] for c in body['consumers']] == [
        scene.consumers['inst-a']]


def test_consumers_are_limited_largest_first(client, scene):
    body = get(client, '/overview/providers/%s?consumer_limit=1'
               % scene.providers['cn3'])
    assert body['consumer_count'] == 2
    assert [c['consumer'] for c in body['consumers']] == [
        scene.consumers['heavy']]
    assert body['consumers'][0]['resources'] == {
        scene.providers['cn3']: {'MEMORY_MB': 2048, 'VCPU': 4}}


@pytest.mark.parametrize('path, status', [
    ('/overview/providers/%s' % scene_module.provider_uuid('nobody'), 404),
    ('/overview/providers/not-a-uuid', 404),
    ('/overview/providers/%s?consumer_limit=0'
     % scene_module.provider_uuid('cn1'), 400),
    ('/overview/providers/%s?color=red' % scene_module.provider_uuid('cn1'),
     400),
    ('/overview?color=red', 400),
])
def test_bad_provider_requests(client, scene, path, status):
    resp = client.get(path, status=status)
    assert error(resp)['status'] == status


# -- versions and policy ----------------------------------------------------

PATHS = ['/overview', '/overview/providers',
         '/overview/providers/%s' % scene_module.provider_uuid('cn1')]


def test_served_at_every_microversion(client, scene):
    for version in ('1.0', '1.39'):
        for path in PATHS:
            client.get(path, version=version, status=200)


def test_admin_only_by_default(client, scene):
    client.token = 'someone'
    for path, rule in zip(PATHS, ('placement:overview',
                                  'placement:overview:providers',
                                  'placement:overview:provider')):
        assert error(client.get(path, status=403))['detail'].endswith(
            'Policy does not allow %s to be performed.  ' % rule)


def test_readers_need_the_rules_of_what_is_summarised(client, conf, scene):
    """Opening the overview rules alone shows nothing more: the rules of
    the data each summarises are checked too."""
    policy_file = conf.oslo_policy.policy_file
    reader = 'role:reader or rule:admin_api'
    rules = ['placement:overview', 'placement:overview:providers',
             'placement:overview:provider']
    with open(policy_file, 'w') as out:
        out.write(''.join('"%s": "%s"\n' % (rule, reader) for rule in rules))
    time.sleep(1.1)     # the enforcer looks at the file once a second
    client.token = 'someone'
    headers = {'X-Roles': 'reader'}
    assert 'placement:resource_providers:' in error(client.get(
        '/overview', headers=headers, status=403))['detail']
    underlying = [
        'placement:resource_providers:list',
        'placement:resource_providers:show',
        'placement:resource_providers:inventories:list',
        'placement:resource_providers:usages',
        'placement:resource_providers:traits:list',
        'placement:resource_providers:aggregates:list',
        'placement:resource_providers:allocations:list',
        'placement:allocations:list']
    with open(policy_file, 'w') as out:
        out.write(''.join('"%s": "%s"\n' % (rule, reader)
                          for rule in rules + underlying))
    time.sleep(1.1)
    for path in PATHS:
        client.get(path, headers=headers, status=200)
    assert error(client.get('/audit', headers=headers, status=403))[
        'detail'].endswith('placement:audit to be performed.  ')
