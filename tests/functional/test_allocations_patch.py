"""PATCH /allocations/{consumer_uuid}: a JSON merge patch of the dict
form (an extension, from 1.28), checked as a PUT of its result is."""

import json
import threading

import pytest

from tests.functional.allocation_helpers import (
    C1, C2, CONCURRENT, PROJECT, USER, UNKNOWN_RP, error, get, held,
    provider, put, usages)
from tests.functional.server import request
from tests.functional.server import running

MERGE_PATCH = {'Content-Type': 'application/merge-patch+json'}


def _patch(client, consumer, allocations, generation, status=200,
           version=None, headers=MERGE_PATCH, **fields):
    body = dict(allocations=allocations, consumer_generation=generation,
                **fields)
    return client.app.patch(
        '/allocations/' + consumer, json.dumps(body),
        headers=dict(client._headers(version, None), **headers),
        status=status)


@pytest.fixture
def hosts(client):
    cn = provider(client, 'cn', VCPU=8, MEMORY_MB=4096)
    nic = provider(client, 'nic', NET_BW_EGR_KILOBIT_PER_SEC=1000)
    put(client, C1, {cn['uuid']: {'VCPU': 2, 'MEMORY_MB': 1024}})
    return cn, nic


def test_adds_changes_and_removes_by_provider_and_class(client, hosts):
    cn, nic = hosts
    resp = _patch(client, C1, {
        cn['uuid']: {'resources': {'VCPU': 4, 'MEMORY_MB': None}},
        nic['uuid']: {'resources': {'NET_BW_EGR_KILOBIT_PER_SEC': 100}},
    }, 1)
    expected = {cn['uuid']: {'VCPU': 4},
                nic['uuid']: {'NET_BW_EGR_KILOBIT_PER_SEC': 100}}
    assert {rp: entry['resources'] for rp, entry in
            resp.json['allocations'].items()} == expected
    assert resp.json['consumer_generation'] == 2
    assert (resp.json['project_id'], resp.json['user_id']) == (PROJECT, USER)
    assert resp.json['consumer_type'] == 'INSTANCE'
    assert held(client, C1) == expected
    assert usages(client, cn) == {'VCPU': 4, 'MEMORY_MB': 0}
    # null removes a provider; what is not named stays as it was.
    _patch(client, C1, {nic['uuid']: None}, 2)
    assert held(client, C1) == {cn['uuid']: {'VCPU': 4}}


def test_plain_json_is_accepted_too(client, hosts):
    cn, _ = hosts
    _patch(client, C1, {cn['uuid']: {'resources': {'VCPU': 3}}}, 1,
           headers={'Content-Type': 'application/json'})
    assert held(client, C1)[cn['uuid']]['VCPU'] == 3


def test_removing_everything_removes_the_consumer(client, hosts):
    cn, _ = hosts
    resp = _patch(client, C1, {cn['uuid']: None}, 1)
    assert resp.json == {'allocations': {}}
    assert get(client, C1) == {'allocations': {}}


def test_a_new_consumer_needs_its_owner(client, hosts):
    cn, _ = hosts
    resp = _patch(client, C2, {cn['uuid']: {'resources': {'VCPU': 1}}},
                  None, status=400)
    assert 'project_id and user_id are required' in error(resp)['detail']
    resp = _patch(client, C2, {cn['uuid']: {'resources': {'VCPU': 1}}},
                  None, project_id='p', user_id='u', consumer_type='MIGRATION')
    assert resp.json['consumer_generation'] == 1
    assert get(client, C2)['consumer_type'] == 'MIGRATION'


@pytest.mark.parametrize('allocations, generation, status, code', [
    # stale consumer generation
    ({'VCPU': 1}, 0, 409, CONCURRENT),
    # beyond capacity (8 VCPU)
    ({'VCPU': 9}, 1, 409, 'placement.undefined_code'),
    # a class the provider has no inventory of
    ({'DISK_GB': 1}, 1, 409, 'placement.undefined_code'),
    # an unknown class
    ({'CUSTOM_NOPE': 1}, 1, 400, 'placement.undefined_code'),
    # not an amount
    ({'VCPU': 0}, 1, 400, 'placement.undefined_code'),
    ({'VCPU': 'two'}, 1, 400, 'placement.undefined_code'),
])
def test_refused_patches_change_nothing(client, hosts, allocations,
                                        generation, status, code):
    cn, _ = hosts
    resp = _patch(client, C1, {cn['uuid']: {'resources': allocations}},
                  generation, status=status)
    assert error(resp)['code'] == code
    assert held(client, C1) == {cn['uuid']: {'VCPU': 2, 'MEMORY_MB': 1024}}
    assert get(client, C1)['consumer_generation'] == 1


def test_unknown_provider_is_a_400(client, hosts):
    resp = _patch(client, C1, {UNKNOWN_RP: {'resources': {'VCPU': 1}}}, 1,
                  status=400)
    assert UNKNOWN_RP in error(resp)['detail']


def test_only_from_1_28_and_only_json(client, hosts):
    cn, _ = hosts
    body = {cn['uuid']: {'resources': {'VCPU': 1}}}
    resp = _patch(client, C1, body, 1, version='1.27', status=405)
    assert resp.headers['Allow'] == 'GET, PUT, DELETE'
    resp = _patch(client, C1, body, 1, status=415,
                  headers={'Content-Type': 'text/plain'})
    assert 'application/merge-patch+json or application/json' in (
        error(resp)['detail'])
    # The consumer generation is required.
    client.app.patch('/allocations/' + C1, json.dumps({'allocations': {}}),
                     headers=dict(client._headers(None, None), **MERGE_PATCH),
                     status=400)


def _writer(port, consumer, provider_uuid, resource_class, outcomes):
    """Patch our own class up one by one, as a client does: read the
    generation, patch, and on a 409 read it again and retry.

    Each 409 means the other writer landed meanwhile, so the retries are
    bounded by the other writer's patches."""
    for amount in range(1, 21):
        for _ in range(50):
            _, current = request(port, 'GET', '/allocations/' + consumer)
            status, answer = request(
                port, 'PATCH', '/allocations/' + consumer, {
                    'allocations': {provider_uuid: {'resources': {
                        resource_class: amount}}},
                    'consumer_generation': current['consumer_generation']})
            assert status in (200, 409), answer
            outcomes.append((amount, status))
            if status == 200:
                break


def test_concurrent_patches_land_or_conflict(database_url, tmp_path):
    """Two writers patch one consumer, each its own class, retrying on
    409: every patch lands once, none is undone by the other, and the
    generation counts every acknowledged patch."""
    with running(database_url, tmp_path, workers=2) as port:
        _, rp = request(port, 'POST', '/resource_providers', {'name': 'cn'})
        for name in ('CUSTOM_A', 'CUSTOM_B'):
            request(port, 'PUT', '/resource_classes/' + name)
        request(port, 'PUT', '/resource_providers/%s/inventories' % rp['uuid'],
                {'resource_provider_generation': 0, 'inventories': {
                    'VCPU': {'total': 8}, 'CUSTOM_A': {'total': 100},
                    'CUSTOM_B': {'total': 100}}})
        status, _ = request(port, 'PUT', '/allocations/' + C1, {
            'allocations': {rp['uuid']: {'resources': {'VCPU': 1}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        assert status == 204
        outcomes = {'CUSTOM_A': [], 'CUSTOM_B': []}
        threads = [threading.Thread(target=_writer, args=(
            port, C1, rp['uuid'], name, outcomes[name])) for name in outcomes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        _, body = request(port, 'GET', '/allocations/' + C1)
    resources = body['allocations'][rp['uuid']]['resources']
    acknowledged = 0
    for name, results in outcomes.items():
        landed = [amount for amount, status in results if status == 200]
        assert landed == list(range(1, 21)), results
        acknowledged += len(landed)
        assert resources[name] == 20
    assert resources['VCPU'] == 1
    assert body['consumer_generation'] == 1 + acknowledged


@pytest.mark.parametrize('version, allowed', [
    ('1.27', 'GET, PUT, DELETE'), ('1.28', 'GET, PUT, DELETE, PATCH')])
def test_allow_names_patch_only_where_it_is_served(client, version, allowed):
    """Below 1.28 a 405 names the methods upstream's does."""
    for method in ('POST', 'OPTIONS'):
        resp = client.request(method, '/allocations/' + C1, version=version,
                              status=405)
        assert resp.headers['Allow'] == allowed
