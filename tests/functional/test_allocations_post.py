"""POST /allocations (1.13): many consumers in one all-or-nothing write."""

import pytest

from tests.functional.allocation_helpers import allocation_rows
from tests.functional.allocation_helpers import ALT_PROJECT
from tests.functional.allocation_helpers import ALT_USER
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import C3
from tests.functional.allocation_helpers import CONCURRENT
from tests.functional.allocation_helpers import consumer_body
from tests.functional.allocation_helpers import consumer_generation
from tests.functional.allocation_helpers import consumer_rows
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import generations
from tests.functional.allocation_helpers import get
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import PROJECT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import UNKNOWN_RP
from tests.functional.allocation_helpers import USER
from tests.functional.allocation_helpers import usages

INSTANCE = C1
MIGRATION = C2


def _post(client, status=204, version=None, **consumers):
    """POST /allocations; ``consumers`` maps a name in ``_UUIDS`` to a
    ready body."""
    return client.post('/allocations', status=status, version=version,
                       json={_UUIDS[name]: body
                             for name, body in consumers.items()})


_UUIDS = {'c1': C1, 'c2': C2, 'c3': C3, 'instance': INSTANCE,
          'migration': MIGRATION}


def _project_usages(client, project=PROJECT):
    return client.get('/usages?project_id=' + project,
                      version='1.37').json['usages']


@pytest.fixture
def computes(client):
    """Two computes and a shared storage provider."""
    return (provider(client, 'compute1', VCPU=16, MEMORY_MB=2048),
            provider(client, 'compute2', VCPU=16, MEMORY_MB=2048),
            provider(client, 'storage', DISK_GB=4096))


# -- microversion and schema ----------------------------------------------

def test_post_is_404_before_1_13(client, computes):
    body = consumer_body({computes[0]['uuid']: {'VCPU': 1}})
    resp = client.post('/allocations', version='1.12', status=404,
                       json={C1: body})
    assert error(resp)['title'] == 'Not Found'
    assert get(client, C1) == {'allocations': {}}


@pytest.mark.parametrize('body, message', [
    ({}, 'JSON does not validate'),
    ({'not-a-uuid': {}}, 'does not match any of the regexes'),
    ({C1: {'cow': 'moo'}}, 'JSON does not validate'),
    ({C1: {'allocations': {'x': {'cow': 'moo'}}, 'project_id': PROJECT,
           'user_id': USER, 'consumer_generation': None,
           'consumer_type': 'INSTANCE'}}, 'JSON does not validate'),
])
def test_malformed_bodies_are_400(client, body, message):
    resp = client.post('/allocations', json=body, status=400)
    assert message in error(resp)['detail']


def test_1_13_writes_without_generations(client, computes):
    compute1 = computes[0]
    body = {'allocations': {compute1['uuid']: {'resources': {'VCPU': 2}}},
            'project_id': PROJECT, 'user_id': USER}
    client.post('/allocations', version='1.13', status=204,
                json={C1: body, C2: body})
    client.post('/allocations', version='1.27', status=204,
                json={C1: body})
    assert consumer_generation(client, C1) == 2
    assert consumer_generation(client, C2) == 1
    assert usages(client, compute1) == {'VCPU': 4, 'MEMORY_MB': 0}


def test_generation_required_from_1_28(client, computes):
    body = {'allocations': {computes[0]['uuid']: {'resources': {'VCPU': 2}}},
            'project_id': PROJECT, 'user_id': USER}
    resp = client.post('/allocations', version='1.28', status=400,
                       json={C1: body})
    assert ("'consumer_generation' is a required property"
            in error(resp)['detail'])


def test_consumer_type_required_at_1_38(client, computes):
    body = consumer_body({computes[0]['uuid']: {'VCPU': 1}})
    del body['consumer_type']
    resp = client.post('/allocations', json={C1: body}, version='1.38',
                       status=400)
    assert "'consumer_type' is a required property" in error(resp)['detail']
    body['consumer_type'] = 'instance'
    resp = client.post('/allocations', json={C1: body}, version='1.38',
                       status=400)
    assert "'instance' does not match '^[A-Z0-9_]+$'" in (
        error(resp)['detail'])


def test_mappings_from_1_34(client, computes):
    body = consumer_body({computes[0]['uuid']: {'VCPU': 1}})
    del body['consumer_type']
    body['mappings'] = {'': [computes[0]['uuid']]}
    resp = client.post('/allocations', json={C1: body}, version='1.33',
                       status=400)
    assert 'Additional properties are not allowed' in error(resp)['detail']
    client.post('/allocations', json={C1: body}, version='1.34', status=204)
    assert held(client, C1) == {computes[0]['uuid']: {'VCPU': 1}}


# -- writing many consumers -------------------------------------------------

def test_two_consumers_two_owners(client, computes):
    compute1, compute2, storage = computes
    _post(client,
          c1=consumer_body({compute2['uuid']: {'MEMORY_MB': 1024, 'VCPU': 2},
                            storage['uuid']: {'DISK_GB': 5}}),
          c2=consumer_body({compute1['uuid']: {'MEMORY_MB': 1024, 'VCPU': 2}},
                           project=ALT_PROJECT, user=ALT_USER))
    assert get(client, C1) == {
        'allocations': {
            compute2['uuid']: {'generation': 2, 'resources': {
                'MEMORY_MB': 1024, 'VCPU': 2}},
            storage['uuid']: {'generation': 2, 'resources': {'DISK_GB': 5}}},
        'consumer_generation': 1, 'consumer_type': 'INSTANCE',
        'project_id': PROJECT, 'user_id': USER}
    assert get(client, C2)['project_id'] == ALT_PROJECT
    assert _project_usages(client) == {'VCPU': 2, 'MEMORY_MB': 1024,
                                       'DISK_GB': 5}
    assert _project_usages(client, ALT_PROJECT) == {'VCPU': 2,
                                                    'MEMORY_MB': 1024}


def test_move_then_confirm(client, computes):
    compute1, compute2, storage = computes
    source = {compute1['uuid']: {'VCPU': 2, 'MEMORY_MB': 1024}}
    put(client, INSTANCE, dict(source, **{storage['uuid']: {'DISK_GB': 5}}))
    before = generations(client, compute1, compute2, storage)

    # The move: the migration takes the source, the instance the target.
    target = {compute2['uuid']: {'VCPU': 2, 'MEMORY_MB': 1024},
              storage['uuid']: {'DISK_GB': 5}}
    _post(client,
          migration=consumer_body(source, None, consumer_type='MIGRATION'),
          instance=consumer_body(target, 1))
    assert held(client, MIGRATION) == source
    assert held(client, INSTANCE) == target
    assert usages(client, compute1) == {'VCPU': 2, 'MEMORY_MB': 1024}
    assert usages(client, compute2) == {'VCPU': 2, 'MEMORY_MB': 1024}
    assert usages(client, storage) == {'DISK_GB': 5}
    assert _project_usages(client) == {'VCPU': 4, 'MEMORY_MB': 2048,
                                       'DISK_GB': 5}
    assert generations(client, compute1, compute2, storage) == [
        before[0] + 1, before[1] + 1, before[2] + 1]
    assert consumer_generation(client, INSTANCE) == 2
    assert consumer_generation(client, MIGRATION) == 1

    # Confirm: the migration lets go of the source.
    _post(client, migration=consumer_body({}, 1, consumer_type='MIGRATION'),
          instance=consumer_body(target, 2))
    assert get(client, MIGRATION) == {'allocations': {}}
    assert held(client, INSTANCE) == target
    assert usages(client, compute1) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert _project_usages(client) == {'VCPU': 2, 'MEMORY_MB': 1024,
                                       'DISK_GB': 5}
    # The emptied consumer's provider moved too.
    assert generations(client, compute1, compute2, storage) == [
        before[0] + 2, before[1] + 2, before[2] + 2]


def test_revert_gives_the_source_back(client, computes):
    compute1, compute2, _ = computes
    source = {compute1['uuid']: {'VCPU': 2}}
    target = {compute2['uuid']: {'VCPU': 2}}
    put(client, INSTANCE, source)
    _post(client, migration=consumer_body(source, None),
          instance=consumer_body(target, 1))
    _post(client, instance=consumer_body(source, 2),
          migration=consumer_body({}, 1))
    assert held(client, INSTANCE) == source
    assert get(client, MIGRATION) == {'allocations': {}}
    assert usages(client, compute2) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert usages(client, compute1) == {'VCPU': 2, 'MEMORY_MB': 0}


def test_two_consumers_whose_sum_exceeds_capacity(client, db):
    rp = provider(client, 'rp', VCPU=4)
    resp = _post(client, status=409,
                 c1=consumer_body({rp['uuid']: {'VCPU': 3}}),
                 c2=consumer_body({rp['uuid']: {'VCPU': 2}}))
    assert ("Unable to create allocation for 'VCPU' on resource provider "
            "'%s'. The requested amount would exceed the capacity."
            % rp['uuid'] in error(resp)['detail'])
    assert allocation_rows(db) == []
    assert consumer_rows(db, C1) == consumer_rows(db, C2) == 0
    _post(client, c1=consumer_body({rp['uuid']: {'VCPU': 3}}),
          c2=consumer_body({rp['uuid']: {'VCPU': 1}}))
    assert usages(client, rp) == {'VCPU': 4}


def test_generation_conflict_names_both_generations(client, computes):
    compute1 = computes[0]
    put(client, C1, {compute1['uuid']: {'VCPU': 1}})
    put(client, C1, {compute1['uuid']: {'VCPU': 1}}, 1)
    put(client, C1, {compute1['uuid']: {'VCPU': 1}}, 2)
    resp = _post(client, status=409,
                 c1=consumer_body({compute1['uuid']: {'VCPU': 2}}, 1))
    assert error(resp)['code'] == CONCURRENT
    assert ('consumer generation conflict - expected 3 but got 1'
            in error(resp)['detail'])
    _post(client, c1=consumer_body({compute1['uuid']: {'VCPU': 2}}, 3))
    assert held(client, C1) == {compute1['uuid']: {'VCPU': 2}}


# -- a refused write changes nothing ----------------------------------------

def _bad_second_consumer(computes, kind):
    compute2 = computes[1]
    return {
        'capacity': ({compute2['uuid']: {'VCPU': 17}}, None, 409,
                     'The requested amount would exceed the capacity.'),
        'no_inventory': ({compute2['uuid']: {'DISK_GB': 1}}, None, 409,
                         "Inventory for 'DISK_GB' on resource provider "
                         "'%s' invalid." % compute2['uuid']),
        'unknown_class': ({compute2['uuid']: {'CUSTOM_PONY': 1}}, None, 400,
                          'Unable to allocate inventory No such resource '
                          'class CUSTOM_PONY'),
        'unknown_provider': ({UNKNOWN_RP: {'VCPU': 1}}, None, 400,
                             "Allocation for resource provider '%s' that "
                             "does not exist." % UNKNOWN_RP),
        'generation': ({compute2['uuid']: {'VCPU': 1}}, 4, 409,
                       'consumer generation conflict - expected null but '
                       'got 4'),
    }[kind]


@pytest.mark.parametrize('kind', ['capacity', 'no_inventory', 'unknown_class',
                                  'unknown_provider', 'generation'])
def test_failed_post_leaves_everything_as_it_was(client, db, computes, kind):
    compute1, compute2, storage = computes
    # C3 exists; C1 and C2 are new.  C3 is rewritten (with a new owner and
    # type), C1 created and C2 refused, in one request.
    put(client, C3, {compute1['uuid']: {'VCPU': 2}})
    before = {
        'generations': generations(client, *computes),
        'usages': [usages(client, rp) for rp in computes],
        'rows': allocation_rows(db), 'c3': get(client, C3)}
    allocations, gen, status, message = _bad_second_consumer(computes, kind)
    resp = _post(
        client, status=status,
        c3=consumer_body({compute1['uuid']: {'VCPU': 1},
                          storage['uuid']: {'DISK_GB': 10}}, 1,
                         consumer_type='MIGRATION', project=ALT_PROJECT,
                         user=ALT_USER),
        c1=consumer_body({compute1['uuid']: {'VCPU': 4}}),
        c2=consumer_body(allocations, gen))
    assert message in error(resp)['detail']
    assert generations(client, *computes) == before['generations']
    assert [usages(client, rp) for rp in computes] == before['usages']
    assert allocation_rows(db) == before['rows']
    assert get(client, C3) == before['c3']
    for new in (C1, C2):
        assert get(client, new) == {'allocations': {}}
        assert consumer_rows(db, new) == 0
    assert _project_usages(client, ALT_PROJECT) == {}
    # The refused consumers were never made: they start from null.
    put(client, C1, {compute1['uuid']: {'VCPU': 4}}, None)
    put(client, C2, {compute2['uuid']: {'VCPU': 1}}, None)


def test_failed_emptying_leaves_the_consumer(client, db, computes):
    compute1, compute2, _ = computes
    put(client, C1, {compute1['uuid']: {'VCPU': 2}})
    before = generations(client, compute1, compute2)
    _post(client, status=409,
          c1=consumer_body({}, 1),
          c2=consumer_body({compute2['uuid']: {'VCPU': 20}}))
    assert held(client, C1) == {compute1['uuid']: {'VCPU': 2}}
    assert consumer_generation(client, C1) == 1
    assert consumer_rows(db, C2) == 0
    assert generations(client, compute1, compute2) == before


@pytest.mark.parametrize('problems, status, message', [
    (('generation', 'unknown_provider', 'unknown_class', 'capacity'), 409,
     'consumer generation conflict'),
    (('unknown_provider', 'unknown_class', 'capacity'), 400,
     'that does not exist'),
    (('unknown_class', 'no_inventory', 'capacity'), 400,
     'No such resource class CUSTOM_PONY'),
])
def test_checks_come_in_upstream_order(client, computes, problems, status,
                                       message):
    # Each problem in its own consumer; the first in upstream's order of
    # checks is the one reported, wherever it is in the body.
    body = {}
    for consumer, kind in zip(
            ['a%07d-0000-4000-8000-000000000000' % n for n in range(4)],
            reversed(problems)):
        allocations, gen, _, _ = _bad_second_consumer(computes, kind)
        body[consumer] = consumer_body(allocations, gen)
    resp = client.post('/allocations', json=body, status=status)
    assert message in error(resp)['detail']
