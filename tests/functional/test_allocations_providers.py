"""Allocations seen from the providers: their generations, their capacity,
their inventories, and GET /resource_providers/{uuid}/allocations."""

import pytest

from tests.functional.allocation_helpers import allocation_rows
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import C3
from tests.functional.allocation_helpers import CONCURRENT
from tests.functional.allocation_helpers import consumer_body
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import generation
from tests.functional.allocation_helpers import generations
from tests.functional.allocation_helpers import get
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import IN_USE
from tests.functional.allocation_helpers import inventories
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import set_inventory
from tests.functional.allocation_helpers import UNKNOWN_RP
from tests.functional.allocation_helpers import usages


@pytest.fixture
def rps(client):
    return (provider(client, 'rp1', VCPU=8, MEMORY_MB=1024),
            provider(client, 'rp2', VCPU=8, DISK_GB=100))


def _provider_allocations(client, rp, version=None, status=200):
    return client.get('/resource_providers/%s/allocations' % rp['uuid'],
                      version=version, status=status)


# -- provider generations ---------------------------------------------------

def test_a_write_bumps_each_provider_once(client, rps):
    rp1, rp2 = rps
    before = generations(client, rp1, rp2)
    put(client, C1, {rp1['uuid']: {'VCPU': 1, 'MEMORY_MB': 64},
                     rp2['uuid']: {'VCPU': 1, 'DISK_GB': 10}})
    assert generations(client, rp1, rp2) == [before[0] + 1, before[1] + 1]
    # What GET shows is the generation after the write.
    assert {rp: entry['generation'] for rp, entry in
            get(client, C1)['allocations'].items()} == {
        rp1['uuid']: before[0] + 1, rp2['uuid']: before[1] + 1}


def test_a_provider_replaced_away_is_not_bumped(client, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 2}})
    before = generations(client, rp1, rp2)
    put(client, C1, {rp2['uuid']: {'VCPU': 2}}, 1)
    assert generations(client, rp1, rp2) == [before[0], before[1] + 1]
    assert usages(client, rp1) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert usages(client, rp2) == {'VCPU': 2, 'DISK_GB': 0}


def test_emptying_by_put_bumps_what_was_held(client, rps):
    rp1, rp2 = rps
    other = provider(client, 'other', VCPU=1)
    put(client, C1, {rp1['uuid']: {'VCPU': 2}, rp2['uuid']: {'DISK_GB': 5}})
    before = generations(client, rp1, rp2, other)
    put(client, C1, {}, 1)
    assert generations(client, rp1, rp2, other) == [
        before[0] + 1, before[1] + 1, before[2]]


def test_emptying_by_post_bumps_what_was_held(client, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 2}})
    put(client, C2, {rp2['uuid']: {'VCPU': 2}})
    before = generations(client, rp1, rp2)
    client.post('/allocations', status=204,
                json={C1: consumer_body({}, 1)})
    assert generations(client, rp1, rp2) == [before[0] + 1, before[1]]
    assert get(client, C1) == {'allocations': {}}
    assert held(client, C2) == {rp2['uuid']: {'VCPU': 2}}


def test_delete_does_not_bump(client, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 2}, rp2['uuid']: {'VCPU': 2}})
    before = generations(client, rp1, rp2)
    client.delete('/allocations/' + C1, status=204)
    assert generations(client, rp1, rp2) == before
    assert usages(client, rp1)['VCPU'] == usages(client, rp2)['VCPU'] == 0


def test_a_refused_write_bumps_nothing(client, db, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 2}})
    before, rows = generations(client, rp1, rp2), allocation_rows(db)
    put(client, C1, {rp1['uuid']: {'VCPU': 1}, rp2['uuid']: {'VCPU': 9}}, 1,
        status=409)
    assert generations(client, rp1, rp2) == before
    assert allocation_rows(db) == rows
    assert get(client, C1)['consumer_generation'] == 1


# -- capacity ---------------------------------------------------------------

def test_capacity_is_total_less_reserved_times_ratio(client):
    rp = provider(client, 'rp', VCPU={'total': 4, 'reserved': 1,
                                      'allocation_ratio': 2.0})
    put(client, C1, {rp['uuid']: {'VCPU': 7}}, status=409)
    put(client, C1, {rp['uuid']: {'VCPU': 6}})
    put(client, C2, {rp['uuid']: {'VCPU': 1}}, status=409)
    put(client, C1, {rp['uuid']: {'VCPU': 3}}, 1)
    put(client, C2, {rp['uuid']: {'VCPU': 3}})
    put(client, C3, {rp['uuid']: {'VCPU': 1}}, status=409)
    assert usages(client, rp) == {'VCPU': 6}


def test_fractional_ratio(client):
    rp = provider(client, 'rp', MEMORY_MB={'total': 10,
                                           'allocation_ratio': 1.5})
    put(client, C1, {rp['uuid']: {'MEMORY_MB': 16}}, status=409)
    put(client, C1, {rp['uuid']: {'MEMORY_MB': 15}})


def test_fully_reserved_inventory_takes_nothing(client):
    rp = provider(client, 'rp', VCPU={'total': 4, 'reserved': 4})
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}}, status=409)
    assert 'would exceed the capacity' in error(resp)['detail']


def test_an_over_capacity_provider_may_get_no_worse(client):
    rp = provider(client, 'rp', VCPU=8)
    put(client, C1, {rp['uuid']: {'VCPU': 6}})
    put(client, C2, {rp['uuid']: {'VCPU': 2}})
    # The inventory shrinks below what is used: allowed, as upstream.
    set_inventory(client, rp, VCPU=4)
    assert usages(client, rp) == {'VCPU': 8}
    resp = put(client, C3, {rp['uuid']: {'VCPU': 1}}, status=409)
    assert 'would exceed the capacity' in error(resp)['detail']
    put(client, C1, {rp['uuid']: {'VCPU': 5}}, 1)
    put(client, C1, {rp['uuid']: {'VCPU': 5}}, 2)
    resp = put(client, C1, {rp['uuid']: {'VCPU': 6}}, 3, status=409)
    assert 'would exceed the capacity' in error(resp)['detail']
    assert usages(client, rp) == {'VCPU': 7}
    # Moving usage between consumers that leaves the total as it was.
    client.post('/allocations', status=204, json={
        C1: consumer_body({rp['uuid']: {'VCPU': 4}}, 3),
        C2: consumer_body({rp['uuid']: {'VCPU': 3}}, 1)})
    assert usages(client, rp) == {'VCPU': 7}


def test_capacity_counts_other_consumers_only(client):
    rp = provider(client, 'rp', VCPU=4)
    put(client, C1, {rp['uuid']: {'VCPU': 4}})
    # A rewrite frees what the consumer held before.
    put(client, C1, {rp['uuid']: {'VCPU': 4}}, 1)
    put(client, C1, {rp['uuid']: {'VCPU': 3}}, 2)
    put(client, C2, {rp['uuid']: {'VCPU': 1}})
    assert usages(client, rp) == {'VCPU': 4}


# -- inventories and providers ---------------------------------------------

def test_inventory_in_use_cannot_be_deleted(client, rps):
    rp1 = rps[0]
    put(client, C1, {rp1['uuid']: {'VCPU': 2}})
    url = '/resource_providers/%s/inventories' % rp1['uuid']
    resp = client.delete(url + '/VCPU', status=409)
    # Upstream labels this one with the concurrent update code.
    assert error(resp)['code'] == CONCURRENT
    assert ("Unable to delete inventory of class VCPU: Inventory for 'VCPU' "
            "on resource provider '%s' in use." % rp1['uuid']
            in error(resp)['detail'])
    resp = client.put(url, status=409, json={
        'resource_provider_generation': generation(client, rp1),
        'inventories': {'MEMORY_MB': {'total': 1024}}})
    assert error(resp)['code'] == IN_USE
    resp = client.delete(url, status=409)
    assert error(resp)['code'] == IN_USE
    assert sorted(inventories(client, rp1)) == ['MEMORY_MB', 'VCPU']
    # Unused inventory goes; used goes once freed.
    client.delete(url + '/MEMORY_MB', status=204)
    client.delete('/allocations/' + C1, status=204)
    client.delete(url + '/VCPU', status=204)


def test_provider_with_allocations_cannot_be_deleted(client, rps):
    rp1 = rps[0]
    put(client, C1, {rp1['uuid']: {'VCPU': 2}})
    resp = client.delete('/resource_providers/' + rp1['uuid'], status=409)
    assert error(resp)['code'] == 'placement.resource_provider.inuse'
    client.delete('/allocations/' + C1, status=204)
    client.delete('/resource_providers/' + rp1['uuid'], status=204)


def test_provider_list_sees_usage(client, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 6}})

    def names(resources):
        return sorted(rp['name'] for rp in client.get(
            '/resource_providers?resources=' + resources).json[
            'resource_providers'])
    assert names('VCPU:2') == ['rp1', 'rp2']
    assert names('VCPU:3') == ['rp2']
    put(client, C1, {rp1['uuid']: {'VCPU': 1}}, 1)
    assert names('VCPU:7') == ['rp1', 'rp2']


# -- GET /resource_providers/{uuid}/allocations -----------------------------

def test_provider_allocations(client, rps):
    rp1, rp2 = rps
    put(client, C1, {rp1['uuid']: {'VCPU': 2, 'MEMORY_MB': 64},
                     rp2['uuid']: {'DISK_GB': 10}})
    put(client, C2, {rp1['uuid']: {'VCPU': 1}})
    put(client, C2, {rp1['uuid']: {'VCPU': 3}}, 1)
    rp1_generation = generation(client, rp1)
    assert _provider_allocations(client, rp1, '1.27').json == {
        'resource_provider_generation': rp1_generation,
        'allocations': {
            C1: {'resources': {'VCPU': 2, 'MEMORY_MB': 64}},
            C2: {'resources': {'VCPU': 3}}}}
    assert _provider_allocations(client, rp1, '1.28').json == {
        'resource_provider_generation': rp1_generation,
        'allocations': {
            C1: {'resources': {'VCPU': 2, 'MEMORY_MB': 64},
                 'consumer_generation': 1},
            C2: {'resources': {'VCPU': 3}, 'consumer_generation': 2}}}
    assert _provider_allocations(client, rp2).json['allocations'] == {
        C1: {'resources': {'DISK_GB': 10}, 'consumer_generation': 1}}


def test_provider_without_allocations(client, rps):
    rp1 = rps[0]
    assert _provider_allocations(client, rp1).json == {
        'allocations': {},
        'resource_provider_generation': generation(client, rp1)}


def test_provider_allocations_of_unknown_provider_is_404(client):
    resp = _provider_allocations(client, {'uuid': UNKNOWN_RP}, status=404)
    assert ("Resource provider '%s' not found" % UNKNOWN_RP
            in error(resp)['detail'])


# -- policy ------------------------------------------------------------------

@pytest.mark.parametrize('method, url', [
    ('get', '/allocations/' + C1), ('put', '/allocations/' + C1),
    ('delete', '/allocations/' + C1), ('post', '/allocations'),
    ('get', '/resource_providers/%s/allocations' % UNKNOWN_RP)])
def test_a_plain_user_is_refused(client, method, url):
    client.token = 'user'
    kwargs = {'json': {}} if method in ('put', 'post') else {}
    resp = getattr(client, method)(url, status=403, **kwargs)
    assert 'placement:' in error(resp)['detail']
