"""GET, PUT and DELETE /allocations/{consumer_uuid}: forms, microversions,
consumer generations and types, and how the answers look."""

import re

import pytest

from tests.functional.allocation_helpers import ALT_PROJECT
from tests.functional.allocation_helpers import ALT_USER
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import CONCURRENT
from tests.functional.allocation_helpers import consumer_body
from tests.functional.allocation_helpers import consumer_generation
from tests.functional.allocation_helpers import consumer_rows
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import get
from tests.functional.allocation_helpers import GMT_DATE
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import INCOMPLETE
from tests.functional.allocation_helpers import PROJECT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import USER
from tests.functional.allocation_helpers import usages


@pytest.fixture
def rp(client):
    return provider(client, 'rp', VCPU=8,
                    DISK_GB={'total': 2048, 'min_unit': 10,
                             'max_unit': 1024})


def _list_form(rp, resources):
    return [{'resource_provider': {'uuid': rp['uuid']},
             'resources': resources}]


def _url(consumer):
    return '/allocations/' + consumer


# -- GET -------------------------------------------------------------------

@pytest.mark.parametrize('version', ['1.0', '1.12', '1.28', '1.38'])
def test_get_for_unknown_consumer_is_an_empty_dict(client, version):
    resp = client.get(_url(C1), version=version)
    assert resp.json == {'allocations': {}}


def test_get_allocations_without_consumer_is_405(client):
    resp = client.get('/allocations', status=405)
    assert resp.headers['Allow'] == 'POST'


def test_get_body_grows_with_the_microversion(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 2, 'DISK_GB': 20}})
    allocations = {rp['uuid']: {'generation': 2,
                                'resources': {'VCPU': 2, 'DISK_GB': 20}}}
    assert get(client, C1, version='1.11') == {'allocations': allocations}
    owner = {'project_id': PROJECT, 'user_id': USER}
    assert get(client, C1, version='1.12') == dict(
        owner, allocations=allocations)
    assert get(client, C1, version='1.28') == dict(
        owner, allocations=allocations, consumer_generation=1)
    assert get(client, C1, version='1.38') == dict(
        owner, allocations=allocations, consumer_generation=1,
        consumer_type='INSTANCE')


def test_cache_headers_only_from_1_15(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    for url in (_url(C1), '/resource_providers/%s/allocations' % rp['uuid']):
        old = client.get(url, version='1.14')
        assert 'Cache-Control' not in old.headers
        assert 'Last-Modified' not in old.headers
        new = client.get(url, version='1.15')
        assert new.headers['Cache-Control'] == 'no-cache'
        assert re.match(GMT_DATE, new.headers['Last-Modified'])


def test_put_and_delete_send_no_cache_headers(client, rp):
    for resp in (put(client, C1, {rp['uuid']: {'VCPU': 1}}),
                 client.delete(_url(C1), status=204)):
        assert resp.body == b''
        assert 'Cache-Control' not in resp.headers
        assert 'Last-Modified' not in resp.headers


# -- PUT: the list form before 1.12 and the owner before 1.8 ----------------

def test_list_form_before_1_8_records_the_incomplete_consumer(client, rp):
    client.put(_url(C1), version='1.0', status=204, json={
        'allocations': _list_form(rp, {'DISK_GB': 10, 'VCPU': 1})})
    assert get(client, C1, version='1.0') == {'allocations': {
        rp['uuid']: {'generation': 2,
                     'resources': {'DISK_GB': 10, 'VCPU': 1}}}}
    body = get(client, C1, version='1.38')
    assert body['project_id'] == INCOMPLETE
    assert body['user_id'] == INCOMPLETE
    assert body['consumer_type'] == 'unknown'
    assert body['consumer_generation'] == 1


def test_incomplete_consumer_ids_come_from_the_configuration(client, conf,
                                                            rp):
    conf.set_override('incomplete_consumer_project_id', 'no-project',
                      group='placement')
    conf.set_override('incomplete_consumer_user_id', 'no-user',
                      group='placement')
    client.put(_url(C1), version='1.7', status=204, json={
        'allocations': _list_form(rp, {'VCPU': 1})})
    body = get(client, C1, version='1.12')
    assert (body['project_id'], body['user_id']) == ('no-project', 'no-user')


def test_owner_is_refused_before_1_8(client, rp):
    resp = client.put(_url(C1), version='1.7', status=400, json={
        'allocations': _list_form(rp, {'VCPU': 1}),
        'project_id': PROJECT, 'user_id': USER})
    assert 'Additional properties are not allowed' in error(resp)['detail']
    assert get(client, C1) == {'allocations': {}}


@pytest.mark.parametrize('missing', ['project_id', 'user_id'])
def test_owner_is_required_from_1_8(client, rp, missing):
    body = {'allocations': _list_form(rp, {'VCPU': 1}),
            'project_id': PROJECT, 'user_id': USER}
    del body[missing]
    resp = client.put(_url(C1), version='1.8', status=400, json=body)
    assert "'%s' is a required property" % missing in error(resp)['detail']
    body[missing] = PROJECT
    client.put(_url(C1), version='1.8', status=204, json=body)


@pytest.mark.parametrize('field', ['project_id', 'user_id'])
@pytest.mark.parametrize('value, failure', [('', 'minLength'),
                                            ('x' * 256, 'maxLength')])
def test_owner_length_is_checked(client, rp, field, value, failure):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    body[field] = value
    resp = client.put(_url(C1), json=body, status=400)
    assert "Failed validating '%s'" % failure in error(resp)['detail']


def test_list_form_then_dict_form_from_1_12(client, rp):
    owner = {'project_id': PROJECT, 'user_id': USER}
    resp = client.put(_url(C1), version='1.12', status=400, json=dict(
        owner, allocations=_list_form(rp, {'VCPU': 1})))
    assert 'JSON does not validate' in error(resp)['detail']
    resp = client.put(_url(C1), version='1.11', status=400, json=dict(
        owner, allocations={rp['uuid']: {'resources': {'VCPU': 1}}}))
    assert 'JSON does not validate' in error(resp)['detail']
    client.put(_url(C1), version='1.12', status=204, json=dict(
        owner, allocations={rp['uuid']: {'resources': {'VCPU': 3}}}))
    assert held(client, C1) == {rp['uuid']: {'VCPU': 3}}


def test_what_get_returns_can_be_put_back_at_1_12(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1, 'DISK_GB': 20}})
    body = get(client, C1, version='1.12')
    client.put(_url(C1), version='1.12', status=204, json=body)
    assert held(client, C1) == {rp['uuid']: {'VCPU': 1, 'DISK_GB': 20}}


@pytest.mark.parametrize('version', ['1.12', '1.27'])
def test_empty_dict_is_refused_before_1_28(client, rp, version):
    resp = client.put(_url(C1), version=version, status=400, json={
        'allocations': {}, 'project_id': PROJECT, 'user_id': USER})
    assert 'JSON does not validate' in error(resp)['detail']


def test_empty_list_is_refused(client, rp):
    resp = client.put(_url(C1), version='1.0', status=400,
                      json={'allocations': []})
    assert "Failed validating 'minItems'" in error(resp)['detail']


def test_rewrite_replaces_rather_than_adds(client, rp):
    put(client, C1, {rp['uuid']: {'DISK_GB': 10}})
    put(client, C2, {rp['uuid']: {'DISK_GB': 10}})
    assert usages(client, rp)['DISK_GB'] == 20
    put(client, C1, {rp['uuid']: {'DISK_GB': 12}}, consumer_generation=1)
    assert usages(client, rp) == {'DISK_GB': 22, 'VCPU': 0}
    assert held(client, C1) == {rp['uuid']: {'DISK_GB': 12}}


def test_rewrite_changes_project_and_user(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=1,
        project=ALT_PROJECT, user=ALT_USER)
    body = get(client, C1)
    assert (body['project_id'], body['user_id']) == (ALT_PROJECT, ALT_USER)
    assert body['consumer_generation'] == 2


# -- PUT: consumer generations (1.28) --------------------------------------

def test_consumer_generation_is_required_from_1_28(client, rp):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    del body['consumer_generation'], body['consumer_type']
    resp = client.put(_url(C1), json=body, version='1.28', status=400)
    assert ("'consumer_generation' is a required property"
            in error(resp)['detail'])
    client.put(_url(C1), json=body, version='1.27', status=204)


def test_new_consumer_must_be_sent_with_null(client, rp):
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=5,
               status=409)
    assert error(resp)['code'] == CONCURRENT
    assert ('consumer generation conflict - expected null but got 5'
            in error(resp)['detail'])
    assert get(client, C1) == {'allocations': {}}
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=None)
    assert consumer_generation(client, C1) == 1


@pytest.mark.parametrize('sent, shown', [(None, 'None'), (0, '0'),
                                         (2, '2')])
def test_existing_consumer_needs_its_generation(client, rp, sent, shown):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    resp = put(client, C1, {rp['uuid']: {'VCPU': 5}}, consumer_generation=sent,
               status=409)
    assert error(resp)['code'] == CONCURRENT
    assert ('consumer generation conflict - expected 1 but got %s' % shown
            in error(resp)['detail'])
    assert held(client, C1) == {rp['uuid']: {'VCPU': 1}}
    assert consumer_generation(client, C1) == 1


def test_each_write_bumps_the_consumer_generation(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    put(client, C1, {rp['uuid']: {'VCPU': 2}}, consumer_generation=1)
    put(client, C1, {rp['uuid']: {'VCPU': 2}}, consumer_generation=2)
    assert consumer_generation(client, C1) == 3


def test_generation_is_not_checked_before_1_28(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    client.put(_url(C1), version='1.27', status=204, json={
        'allocations': {rp['uuid']: {'resources': {'VCPU': 4}}},
        'project_id': PROJECT, 'user_id': USER})
    assert held(client, C1) == {rp['uuid']: {'VCPU': 4}}
    assert consumer_generation(client, C1) == 2


def test_dashless_consumer_uuid_is_the_same_consumer(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    put(client, C1.replace('-', ''), {rp['uuid']: {'VCPU': 3}},
        consumer_generation=1)
    assert held(client, C1) == {rp['uuid']: {'VCPU': 3}}


def test_empty_allocations_remove_the_consumer(client, db, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 2}})
    put(client, C1, {}, consumer_generation=1)
    assert get(client, C1) == {'allocations': {}}
    assert usages(client, rp) == {'VCPU': 0, 'DISK_GB': 0}
    assert consumer_rows(db, C1) == 0
    # Gone: a stale generation is refused, a new consumer is welcome.
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=2,
               status=409)
    assert 'expected null but got 2' in error(resp)['detail']
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=None)
    assert consumer_generation(client, C1) == 1


def test_emptying_checks_the_generation(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 2}})
    resp = put(client, C1, {}, consumer_generation=7, status=409)
    assert 'expected 1 but got 7' in error(resp)['detail']
    assert held(client, C1) == {rp['uuid']: {'VCPU': 2}}


# -- PUT: mappings (1.34) and consumer types (1.38) ------------------------

def test_mappings_are_accepted_from_1_34(client, rp):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    del body['consumer_type']
    body['mappings'] = {'': [rp['uuid']], '_NET1': [rp['uuid']]}
    client.put(_url(C1), json=body, version='1.34', status=204)
    assert held(client, C1) == {rp['uuid']: {'VCPU': 1}}
    assert 'mappings' not in get(client, C1)
    resp = client.put(_url(C2), json=body, version='1.33', status=400)
    assert 'Additional properties are not allowed' in error(resp)['detail']
    assert get(client, C2) == {'allocations': {}}


@pytest.mark.parametrize('mappings, message', [
    ({'alpha': 'beta'}, "'beta' is not of type 'array'"),
    ({}, 'JSON does not validate: {}'),
])
def test_malformed_mappings(client, rp, mappings, message):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    body['mappings'] = mappings
    resp = client.put(_url(C1), json=body, status=400)
    assert message in error(resp)['detail']


def test_consumer_type_is_required_from_1_38(client, rp):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    del body['consumer_type']
    resp = client.put(_url(C1), json=body, version='1.38', status=400)
    assert "'consumer_type' is a required property" in error(resp)['detail']
    client.put(_url(C1), json=body, version='1.37', status=204)


def test_consumer_type_is_refused_before_1_38(client, rp):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    resp = client.put(_url(C1), json=body, version='1.37', status=400)
    assert 'Additional properties are not allowed' in error(resp)['detail']


def test_malformed_consumer_type(client, rp):
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_type='instance',
               status=400)
    assert "'instance' does not match '^[A-Z0-9_]+$'" in (
        error(resp)['detail'])


def test_consumer_type_is_stored_changed_and_kept(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_type='INSTANCE')
    assert get(client, C1)['consumer_type'] == 'INSTANCE'
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=1,
        consumer_type='PONY')
    assert get(client, C1)['consumer_type'] == 'PONY'
    # An older client does not name one: the type stays.
    client.put(_url(C1), version='1.37', status=204, json={
        'allocations': {rp['uuid']: {'resources': {'VCPU': 2}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': 2})
    assert get(client, C1)['consumer_type'] == 'PONY'


def test_untyped_consumer_reads_as_unknown(client, rp):
    client.put(_url(C1), version='1.37', status=204, json={
        'allocations': {rp['uuid']: {'resources': {'DISK_GB': 10}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None})
    body = get(client, C1, version='1.38')
    assert body['consumer_type'] == 'unknown'
    assert body['allocations'][rp['uuid']]['resources'] == {'DISK_GB': 10}
    assert 'consumer_type' not in get(client, C1, version='1.37')


# -- PUT: what is refused ---------------------------------------------------

@pytest.mark.parametrize('consumer', ['not-a-uuid', C1 + 'a'])
def test_malformed_consumer_uuid(client, rp, consumer):
    resp = client.put(_url(consumer), status=400,
                      json=consumer_body({rp['uuid']: {'VCPU': 1}}))
    assert 'Malformed consumer_uuid: %s' % consumer in error(resp)['detail']


def test_unknown_provider(client, rp):
    missing = 'be8b9cba-e7db-4a12-a386-99b4242167fe'
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1}, missing: {'VCPU': 1}},
               status=400)
    assert ("Allocation for resource provider '%s' that does not exist."
            % missing in error(resp)['detail'])
    assert get(client, C1) == {'allocations': {}}


def test_provider_key_must_be_a_uuid(client, rp):
    resp = put(client, C1, {'nice_house_friend': {'VCPU': 1}}, status=400)
    assert 'does not match any of the regexes' in error(resp)['detail']


def test_unknown_resource_class(client, rp):
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1, 'CUSTOM_PONY': 1}},
               status=400)
    assert ('Unable to allocate inventory for consumer %s: No such resource '
            'class CUSTOM_PONY' % C1 in error(resp)['detail'])


def test_malformed_resource_class(client, rp):
    resp = put(client, C1, {rp['uuid']: {'vcpu': 1}}, status=400)
    assert 'does not match any of the regexes' in error(resp)['detail']


def test_class_without_inventory(client, rp):
    resp = put(client, C1, {rp['uuid']: {'VCPU': 1, 'MEMORY_MB': 64}},
               status=409)
    assert ("Unable to allocate inventory: Inventory for 'MEMORY_MB' on "
            "resource provider '%s' invalid." % rp['uuid']
            in error(resp)['detail'])


def test_provider_without_any_inventory(client, rp):
    empty = provider(client, 'empty')
    resp = put(client, C1, {empty['uuid']: {'DISK_GB': 10}}, status=409)
    assert ("Inventory for 'DISK_GB' on resource provider '%s' invalid."
            % empty['uuid'] in error(resp)['detail'])


def test_capacity_exceeded(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 6}})
    resp = put(client, C2, {rp['uuid']: {'VCPU': 3}}, status=409)
    assert ("Unable to create allocation for 'VCPU' on resource provider "
            "'%s'. The requested amount would exceed the capacity."
            % rp['uuid'] in error(resp)['detail'])
    put(client, C2, {rp['uuid']: {'VCPU': 2}})
    assert usages(client, rp)['VCPU'] == 8


@pytest.mark.parametrize('amount', [5, 1025, 15])
def test_inventory_constraints(client, amount):
    provider_ = provider(client, 'constrained', DISK_GB={
        'total': 4096, 'min_unit': 10, 'max_unit': 1024, 'step_size': 10})
    resp = put(client, C1, {provider_['uuid']: {'DISK_GB': amount}},
               status=409)
    assert ("Unable to create allocation for 'DISK_GB' on resource provider "
            "'%s'. The requested amount would violate inventory constraints."
            % provider_['uuid'] in error(resp)['detail'])
    put(client, C1, {provider_['uuid']: {'DISK_GB': 1020}})


@pytest.mark.parametrize('amount, failure', [
    (0, "Failed validating 'minimum'"), (-1, "Failed validating 'minimum'"),
    ('1', "is not of type 'integer'"), (1.5, "is not of type 'integer'")])
def test_bad_amounts_are_400(client, rp, amount, failure):
    resp = put(client, C1, {rp['uuid']: {'VCPU': amount}}, status=400)
    assert failure in error(resp)['detail']
    assert 'JSON does not validate' in error(resp)['detail']


@pytest.mark.parametrize('amount', [2147483648, 10 ** 30])
def test_amounts_no_inventory_can_hold_are_409(client, db, rp, amount):
    """As upstream: the schema sets no maximum; the capacity check
    refuses the amount before anything is stored."""
    resp = put(client, C1, {rp['uuid']: {'VCPU': amount}}, status=409)
    assert ("Unable to create allocation for 'VCPU' on resource provider "
            "'%s'. The requested amount would violate inventory "
            "constraints." % rp['uuid']) in error(resp)['detail']
    assert consumer_rows(db, C1) == 0


def test_unknown_fields_are_refused(client, rp):
    body = consumer_body({rp['uuid']: {'VCPU': 1}})
    body['bad_field'] = 'moo'
    resp = client.put(_url(C1), json=body, status=400)
    assert 'JSON does not validate' in error(resp)['detail']


def test_put_needs_a_json_body(client, rp):
    resp = client.put(_url(C1), status=400,
                      headers={'Content-Type': 'application/json'})
    assert error(resp)['title'] == 'Bad Request'
    resp = client.put(_url(C1), status=415)
    assert 'The media type None is not supported' in error(resp)['detail']


# -- DELETE ----------------------------------------------------------------

def test_delete_then_404(client, db, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 2, 'DISK_GB': 20}})
    put(client, C2, {rp['uuid']: {'VCPU': 1}})
    resp = client.delete(_url(C1), status=204)
    assert resp.body == b''
    assert get(client, C1) == {'allocations': {}}
    assert consumer_rows(db, C1) == 0
    assert usages(client, rp) == {'VCPU': 1, 'DISK_GB': 0}
    resp = client.delete(_url(C1), status=404)
    assert ("No allocations for consumer '%s'" % C1
            in error(resp)['detail'])
    # The consumer is gone: it can be made anew.
    put(client, C1, {rp['uuid']: {'VCPU': 1}}, consumer_generation=None)


def test_delete_unknown_consumer_is_404(client):
    resp = client.delete(_url(C2), status=404)
    assert "No allocations for consumer '%s'" % C2 in error(resp)['detail']
    assert error(resp)['title'] == 'Not Found'
