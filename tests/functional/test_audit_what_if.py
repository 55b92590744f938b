"""POST /audit/what_if: what changed inventories would do, answered
exactly and writing nothing; its errors, versions and policy."""

import pytest

from tests.functional.allocation_helpers import error
from tests.functional.test_allocation_candidates import AGG_A
from tests.functional.test_allocation_candidates import World
from tests.functional.test_audit import claim
from tests.functional.test_audit import consumer
from tests.functional.test_audit import written_ago


@pytest.fixture
def world(client, foreign):
    """cn1 (aggregate A, CUSTOM_FAST): 16 VCPU, 10 used by a, b, c (4, 4,
    2; a older than b); cn2 (aggregate A): 8 VCPU, 4096 MB, 2 VCPU used
    by d; cn3: 8 VCPU, CUSTOM_FAST."""
    world = World(client)
    client.put('/traits/CUSTOM_FAST', status=(201, 204))
    world.add('cn1', VCPU=16, aggregates=[AGG_A], traits=['CUSTOM_FAST'])
    world.add('cn2', VCPU=8, MEMORY_MB=4096, aggregates=[AGG_A])
    world.add('cn3', VCPU=8, traits=['CUSTOM_FAST'])
    claim(world, {'a': {'cn1': {'VCPU': 4}}, 'b': {'cn1': {'VCPU': 4}},
                  'c': {'cn1': {'VCPU': 2}}, 'd': {'cn2': {'VCPU': 2}}})
    written_ago(foreign, 'a', 3600)
    return world


def what_if(world, body, status=200, **kwargs):
    return world.client.post('/audit/what_if', json=body, status=status,
                             **kwargs)


def rows(world, body):
    """The answer's rows, the largest excess first (then by uuid: sorted
    here by name)."""
    return sorted([(world.names[row['resource_provider']['uuid']],
             row['resource_class'], row['capacity_before'],
             row['capacity_after'], row['used'], row['over_after'])
            for row in body['providers']], key=lambda row: (-row[5], row))


def state(world):
    """Every provider's generation and inventories: what must not move."""
    return {name: world.client.get('/resource_providers/%s/inventories'
                                   % world.uuid(name)).json
            for name in world.rps}


def test_one_field_changed_alone(world):
    before = state(world)
    body = what_if(world, {
        'inventories': {world.uuid('cn1'): {
            'VCPU': {'allocation_ratio': 0.5}}},
        'resources': 'VCPU:2'}).json
    row, = body['providers']
    assert row == {
        'resource_provider': {'uuid': world.uuid('cn1'), 'name': 'cn1'},
        'resource_class': 'VCPU', 'capacity_before': 16,
        'capacity_after': 8, 'used': 10, 'over_before': 0,
        'over_after': 2, 'refused': None,
        # Largest first, then newest.
        'consumers': [consumer(n) for n in 'bac'],
        'reason': 'capacity 16 -> 8 = (16 - 0 reserved) x 0.5, 10 used: 2 '
                  'over'}
    # 3 + 3 + 4 copies of 2 VCPU before; cn1 has none left after.
    assert body['capacity'] == {'before': 10, 'after': 7}
    assert state(world) == before


def test_removal_addition_and_no_capacity_without_resources(world):
    body = what_if(world, {'inventories': {
        world.uuid('cn2'): {'VCPU': None, 'MEMORY_MB': {'reserved': 96},
                            'DISK_GB': {'total': 100, 'reserved': 10}}}}).json
    assert 'capacity' not in body
    assert rows(world, body) == [
        ('cn2', 'VCPU', 8, 0, 2, 2),
        ('cn2', 'DISK_GB', 0, 90, 0, 0),
        ('cn2', 'MEMORY_MB', 4096, 4000, 0, 0)]
    assert body['providers'][0]['resource_class'] == 'VCPU'
    assert body['providers'][0]['refused'].startswith('VCPU is allocated')
    assert body['providers'][0]['consumers'] == [consumer('d')]


def test_by_aggregate_and_by_trait_change_those_with_the_class(world):
    body = what_if(world, {
        'by_aggregate': {AGG_A: {'MEMORY_MB': {'allocation_ratio': 2.0}}},
        'by_trait': {'CUSTOM_FAST': {'VCPU': {'reserved': 8}}},
        # Named alone, cn1 wins over its trait.
        'inventories': {world.uuid('cn1'): {'VCPU': {'reserved': 7}}},
        'resources': 'VCPU:1'}).json
    assert rows(world, body) == [
        ('cn1', 'VCPU', 16, 9, 10, 1),
        ('cn2', 'MEMORY_MB', 4096, 8192, 0, 0),
        ('cn3', 'VCPU', 8, 0, 0, 0)]
    assert body['capacity'] == {'before': 6 + 6 + 8, 'after': 6}


@pytest.mark.parametrize('body, words', [
    ({'inventories': {'6b3c7a4e-3e0b-4f5e-a2f9-0d8b2a1c9e77': {
        'VCPU': {'total': 1}}}}, 'No resource provider with uuid'),
    ({'inventories': {'not-a-uuid': {'VCPU': {'total': 1}}}},
     'is not a uuid'),
    ({'inventories': {'cn1': {'CUSTOM_NOPE': {'total': 1}}}},
     'No such resource class CUSTOM_NOPE'),
    ({'inventories': {'cn1': {'VCPU': {'reserved': 17}}}},
     'The reserved value is greater than total'),
    ({'inventories': {'cn1': {'DISK_GB': {'reserved': 1}}}},
     'give its total'),
    ({'inventories': {'cn1': {'VCPU': {'total': 0}}}},
     'JSON does not validate'),
    ({'inventories': {'cn1': {'VCPU': {'colour': 1}}}},
     'JSON does not validate'),
    ({'by_trait': {'CUSTOM_NOPE': {'VCPU': {'total': 1}}}},
     'No such trait CUSTOM_NOPE'),
    ({'by_aggregate': {'6b3c7a4e-3e0b-4f5e-a2f9-0d8b2a1c9e77': {
        'VCPU': {'total': 1}}}}, 'is a member of aggregate'),
    ({'resources': 'VCPU:1'}, 'JSON does not validate'),
    ({'inventories': {'cn1': {}}, 'resources': 'VCPU:x'},
     'expected positive integer amount'),
    ({'inventories': {'cn1': {}}, 'resources': 'CUSTOM_NOPE:1'},
     'CUSTOM_NOPE'),
    # Text beyond latin-1, as a query string never carries it raw.
    ({'inventories': {'cn1': {}}, 'resources': 'VCPU:1,\u00e9\U0001F600:1'},
     'No such resource class \u00e9\U0001F600'),
    ({'inventories': {'cn1': {}}, 'resources': '\u001e\U000f73f3a<H'},
     'Badly formed resources parameter'),
])
def test_bad_changes_are_400s_and_write_nothing(world, body, words):
    before = state(world)
    if 'inventories' in body:
        body = dict(body, inventories={
            world.uuid(k) if k in world.rps else k: v
            for k, v in body['inventories'].items()})
    resp = what_if(world, body, status=400)
    assert words in error(resp)['detail']
    assert state(world) == before


def test_served_at_every_microversion_to_admins_only(world):
    body = {'inventories': {world.uuid('cn3'): {'VCPU': {'total': 4}}}}
    for version in ('1.0', '1.39'):
        assert rows(world, what_if(world, body, headers={
            'OpenStack-API-Version': 'placement %s' % version}).json) == [
            ('cn3', 'VCPU', 8, 4, 0, 0)]
    world.client.post('/audit/what_if', params='{}', status=415,
                      headers={'Content-Type': 'text/plain'})
    world.client.token = 'user'
    what_if(world, body, status=403)
