"""Allocation corner cases: odd identifiers, the largest amounts, empty
resources, and consumers left behind (or not) by refused writes."""

import pytest

from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import CONCURRENT
from tests.functional.allocation_helpers import consumer_body
from tests.functional.allocation_helpers import consumer_generation
from tests.functional.allocation_helpers import consumer_rows
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import get
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import MAX_INT
from tests.functional.allocation_helpers import PROJECT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import USER
from tests.functional.allocation_helpers import usages

LETTERED = 'abcdefab-cdef-4abc-8def-abcdefabcdef'
ODD_IDS = ['not-a-uuid', LETTERED.replace('-', ''), 'x' * 300]


@pytest.fixture
def rp(client):
    return provider(client, 'rp', VCPU=8)


@pytest.mark.parametrize('consumer', ODD_IDS)
def test_get_with_an_odd_consumer_id_is_empty(client, rp, consumer):
    put(client, LETTERED, {rp['uuid']: {'VCPU': 1}})
    resp = client.get('/allocations/' + consumer)
    assert resp.json == {'allocations': {}}


def test_consumer_ids_compare_as_the_database_collates(client, rp,
                                                      backend):
    """Upstream's schema declares no collation: on MySQL the database's
    (case-insensitive, as deployments create it) applies, and an upper
    case spelling names the same consumer, as it does for upstream
    there; elsewhere it is another consumer."""
    put(client, LETTERED, {rp['uuid']: {'VCPU': 1}})
    found = client.get('/allocations/' + LETTERED.upper()).json
    if backend == 'mysql':
        assert found['allocations'] == {
            rp['uuid']: {'resources': {'VCPU': 1}, 'generation': 2}}
    else:
        assert found == {'allocations': {}}


@pytest.mark.parametrize('consumer', ODD_IDS)
def test_delete_with_an_odd_consumer_id_is_404(client, rp, consumer):
    put(client, LETTERED, {rp['uuid']: {'VCPU': 1}})
    resp = client.delete('/allocations/' + consumer, status=404)
    assert ("No allocations for consumer '%s'" % consumer
            in error(resp)['detail'])
    assert held(client, LETTERED) == {rp['uuid']: {'VCPU': 1}}


@pytest.mark.parametrize('uuid', ['not-a-uuid', 'x' * 300])
def test_odd_provider_ids_are_404(client, uuid):
    for suffix in ('allocations', 'usages'):
        resp = client.get('/resource_providers/%s/%s' % (uuid, suffix),
                          status=404)
        assert error(resp)['title'] == 'Not Found'


def test_uppercase_consumer_uuid_is_stored_lowercase(client, rp):
    put(client, LETTERED.upper(), {rp['uuid']: {'VCPU': 1}})
    assert held(client, LETTERED) == {rp['uuid']: {'VCPU': 1}}


def test_longest_owner_ids_are_stored(client, rp):
    project, user = 'p' * 255, 'u' * 255
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, project=project, user=user)
    body = get(client, C1)
    assert (body['project_id'], body['user_id']) == (project, user)
    assert client.get('/usages?project_id=%s&user_id=%s' % (project, user),
                      version='1.9').json == {'usages': {'VCPU': 1}}


def test_longest_consumer_type_is_stored(client, rp):
    name = 'T' * 255
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_type=name)
    assert get(client, C1)['consumer_type'] == name
    resp = put(client, C2, {rp['uuid']: {'VCPU': 1}},
               consumer_type='T' * 256, status=400)
    assert "Failed validating 'maxLength'" in error(resp)['detail']


@pytest.mark.parametrize('version', ['1.11', '1.12'])
def test_empty_resources_are_400(client, rp, version):
    if version == '1.11':
        body = {'allocations': [{'resource_provider': {'uuid': rp['uuid']},
                                 'resources': {}}]}
    else:
        body = {'allocations': {rp['uuid']: {'resources': {}}},
                'project_id': PROJECT, 'user_id': USER}
    resp = client.put('/allocations/' + C1, version=version, status=400,
                      json=body)
    assert 'JSON does not validate' in error(resp)['detail']


def test_the_largest_amounts(client):
    big = {'total': MAX_INT, 'max_unit': MAX_INT, 'allocation_ratio': 2.0}
    rp1 = provider(client, 'rp1', DISK_GB=big)
    rp2 = provider(client, 'rp2', DISK_GB=big)
    put(client, C1, {rp1['uuid']: {'DISK_GB': MAX_INT},
                     rp2['uuid']: {'DISK_GB': MAX_INT}})
    put(client, C2, {rp1['uuid']: {'DISK_GB': MAX_INT}})
    # Sums beyond a 32-bit integer are reported exactly.
    assert usages(client, rp1) == {'DISK_GB': 2 * MAX_INT}
    assert client.get('/usages?project_id=' + PROJECT,
                      version='1.9').json == {
        'usages': {'DISK_GB': 3 * MAX_INT}}
    assert client.get('/usages?project_id=' + PROJECT).json == {
        'usages': {'INSTANCE': {'DISK_GB': 3 * MAX_INT,
                                'consumer_count': 2}}}
    # rp1 is full: its capacity is 2 * MAX_INT.
    resp = put(client, '33333333-3333-4333-8333-333333333333',
               {rp1['uuid']: {'DISK_GB': 1}}, status=409)
    assert 'would exceed the capacity' in error(resp)['detail']
    names = sorted(p['name'] for p in client.get(
        '/resource_providers?resources=DISK_GB:1').json['resource_providers'])
    assert names == ['rp2']


def test_failed_put_of_a_new_consumer_leaves_no_consumer(client, db, rp):
    # Upstream bug 1778591: the retry must be able to say "new" again.
    resp = put(client, C1, {rp['uuid']: {'VCPU': 9999}}, status=409)
    assert 'would exceed the capacity' in error(resp)['detail']
    assert get(client, C1) == {'allocations': {}}
    assert consumer_rows(db, C1) == 0
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, None)
    assert consumer_generation(client, C1) == 1


def test_emptying_an_unknown_consumer_records_it_as_upstream(client, db, rp):
    # Upstream creates the consumer before it finds there is nothing to
    # remove, and keeps it, at generation 0.
    put(client, C1, {}, None)
    assert get(client, C1) == {'allocations': {}}
    assert consumer_rows(db, C1) == 1
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}}, None, status=409)
    assert error(resp)['code'] == CONCURRENT
    assert 'expected 0 but got None' in error(resp)['detail']
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, 0)
    assert consumer_generation(client, C1) == 1


def test_post_changes_owner_back_and_forth(client, rp):
    # Upstream bug 1779717: a consumer's project follows its last write.
    other = 'a2cec092-0f67-42ed-b870-f3925cc5c6d4'
    put(client, C1, {rp['uuid']: {'VCPU': 2}})
    put(client, C1, {rp['uuid']: {'VCPU': 2}}, 1, project=other)
    assert get(client, C1)['project_id'] == other
    client.post('/allocations', status=204, json={
        C1: consumer_body({rp['uuid']: {'VCPU': 1}}, 2),
        C2: consumer_body({rp['uuid']: {'VCPU': 1}}, None, project=other)})
    assert get(client, C1)['project_id'] == PROJECT
    assert client.get('/usages?project_id=' + other, version='1.9').json == {
        'usages': {'VCPU': 1}}


def test_three_new_consumers_over_capacity_write_nothing(client, db):
    # Upstream bug 1778743.
    rp = provider(client, 'rp', VCPU=2)
    consumers = [C1, C2, '33333333-3333-4333-8333-333333333333']
    client.post('/allocations', status=409, json={
        consumer: consumer_body({rp['uuid']: {'VCPU': 1}})
        for consumer in consumers})
    assert usages(client, rp) == {'VCPU': 0}
    assert [consumer_rows(db, c) for c in consumers] == [0, 0, 0]
    assert client.get('/resource_providers/%s/inventories' % rp['uuid']
                      ).json['inventories']['VCPU']['total'] == 2


def _at_least(version):
    def parse(text):
        return tuple(int(part) for part in text.split('.'))
    return lambda other: parse(version) >= parse(other)


@pytest.mark.parametrize('version, field, value', [
    ('1.0', 'consumer_generation', None),
    ('1.11', 'consumer_generation', None),
    ('1.27', 'consumer_generation', None),
    ('1.27', 'consumer_type', 'INSTANCE'),
    ('1.33', 'mappings', {'': ['be8b9cba-e7db-4a12-a386-99b4242167fe']}),
])
def test_fields_before_their_microversion_are_refused(client, rp, version,
                                                      field, value):
    at_least = _at_least(version)
    if not at_least('1.12'):
        body = {'allocations': [{'resource_provider': {'uuid': rp['uuid']},
                                 'resources': {'VCPU': 1}}]}
        if at_least('1.8'):
            body.update(project_id=PROJECT, user_id=USER)
    else:
        body = {'allocations': {rp['uuid']: {'resources': {'VCPU': 1}}},
                'project_id': PROJECT, 'user_id': USER}
        if at_least('1.28'):
            body['consumer_generation'] = None
    body[field] = value
    resp = client.put('/allocations/' + C1, json=body, version=version,
                      status=400)
    assert 'Additional properties are not allowed' in error(resp)['detail']
    assert get(client, C1) == {'allocations': {}}
    if at_least('1.13'):
        resp = client.post('/allocations', json={C1: body}, version=version,
                           status=400)
        assert 'Additional properties are not allowed' in (
            error(resp)['detail'])
