"""The /resource_classes API and the resource class storage lookups."""

import os_resource_classes as orc
import pytest

from placement.storage import exceptions
from placement.storage import resource_classes
from placement.storage import standard_sync
from placement.storage import tables

JSON = {'Content-Type': 'application/json'}


def _create(client, name):
    return client.post('/resource_classes', json={'name': name}, status=201)


def _detail(resp):
    return resp.json['errors'][0]['detail']


def _add_provider(client, name='rp'):
    return client.post('/resource_providers', json={'name': name}).json


@pytest.mark.parametrize('method', ['get', 'post', 'put', 'delete'])
def test_below_1_2_the_endpoints_do_not_exist(client, method):
    url = '/resource_classes' if method in ('get', 'post') else (
        '/resource_classes/CUSTOM_A')
    kwargs = {'json': {'name': 'CUSTOM_A'}} if method in ('post', 'put') \
        else {}
    getattr(client, method)(url, version='1.1', status=404, **kwargs)


def test_list_has_standard_classes_then_custom_ones(client):
    _create(client, 'CUSTOM_B')
    _create(client, 'CUSTOM_A')
    body = client.get('/resource_classes').json
    names = [rc['name'] for rc in body['resource_classes']]
    assert names == list(orc.STANDARDS) + ['CUSTOM_B', 'CUSTOM_A']
    assert body['resource_classes'][0]['links'] == [
        {'rel': 'self', 'href': '/resource_classes/%s' % orc.STANDARDS[0]}]


def test_custom_ids_start_at_the_custom_minimum(client, db):
    _create(client, 'CUSTOM_A')
    client.put('/resource_classes/CUSTOM_B', status=201)
    ids = db.read(resource_classes.ids_by_name, ['CUSTOM_A', 'CUSTOM_B'])
    first = standard_sync.MIN_CUSTOM_RESOURCE_CLASS_ID
    assert ids == {'CUSTOM_A': first, 'CUSTOM_B': first + 1}


def test_create_answers_201_with_location_and_no_body(client):
    resp = _create(client, 'CUSTOM_GOLD')
    assert resp.headers['Location'].endswith('/resource_classes/CUSTOM_GOLD')
    assert resp.body == b''
    assert 'Last-Modified' not in resp.headers


def test_create_needs_json(client):
    client.post('/resource_classes', params='name', status=415,
                headers={'Content-Type': 'text/plain'})


def test_create_duplicate_is_409(client):
    _create(client, 'CUSTOM_GOLD')
    resp = client.post('/resource_classes', json={'name': 'CUSTOM_GOLD'},
                       status=409)
    assert ('Conflicting resource class already exists: CUSTOM_GOLD'
            in _detail(resp))
    assert resp.json['errors'][0]['code'] == 'placement.undefined_code'


@pytest.mark.parametrize('name', ['VCPU', 'GOLD', 'CUSTOM_lower', 'CUSTOM_',
                                  'CUSTOM_' + 'A' * 249])
def test_create_rejects_names_that_are_not_custom(client, name):
    resp = client.post('/resource_classes', json={'name': name}, status=400)
    assert 'JSON does not validate' in _detail(resp)


def test_create_rejects_other_properties(client):
    resp = client.post('/resource_classes', status=400,
                       json={'name': 'CUSTOM_A', 'other': 1})
    assert 'Additional properties are not allowed' in _detail(resp)


def test_show(client):
    _create(client, 'CUSTOM_GOLD')
    body = client.get('/resource_classes/CUSTOM_GOLD').json
    assert body == {'name': 'CUSTOM_GOLD', 'links': [
        {'rel': 'self', 'href': '/resource_classes/CUSTOM_GOLD'}]}


def test_show_unknown_is_404(client):
    resp = client.get('/resource_classes/CUSTOM_NOPE', status=404)
    assert 'No such resource class CUSTOM_NOPE.' in _detail(resp)


@pytest.mark.parametrize('url', ['/resource_classes',
                                 '/resource_classes/VCPU'])
def test_cache_headers_from_1_15(client, url):
    old = client.get(url, version='1.14')
    assert 'Last-Modified' not in old.headers
    assert 'Cache-Control' not in old.headers
    new = client.get(url, version='1.15')
    assert new.headers['Cache-Control'] == 'no-cache'
    assert new.headers['Last-Modified'].endswith(' GMT')


def test_rename_at_1_6(client):
    _create(client, 'CUSTOM_OLD')
    resp = client.put('/resource_classes/CUSTOM_OLD', version='1.6',
                      json={'name': 'CUSTOM_NEW'})
    assert resp.json == {'name': 'CUSTOM_NEW', 'links': [
        {'rel': 'self', 'href': '/resource_classes/CUSTOM_NEW'}]}
    assert 'Last-Modified' not in resp.headers
    client.get('/resource_classes/CUSTOM_OLD', status=404)
    client.get('/resource_classes/CUSTOM_NEW')


def test_rename_to_its_own_name_is_fine(client):
    _create(client, 'CUSTOM_SAME')
    client.put('/resource_classes/CUSTOM_SAME', version='1.6',
               json={'name': 'CUSTOM_SAME'}, status=200)


def test_rename_standard_class_is_400(client):
    resp = client.put('/resource_classes/VCPU', version='1.6',
                      json={'name': 'CUSTOM_CPU'}, status=400)
    assert 'Cannot update standard resource class VCPU' in _detail(resp)


def test_rename_onto_existing_name_is_409(client):
    _create(client, 'CUSTOM_A')
    _create(client, 'CUSTOM_B')
    resp = client.put('/resource_classes/CUSTOM_B', version='1.6',
                      json={'name': 'CUSTOM_A'}, status=409)
    assert 'Resource class already exists: CUSTOM_A' in _detail(resp)


def test_rename_unknown_is_404(client):
    client.put('/resource_classes/CUSTOM_NOPE', version='1.6',
               json={'name': 'CUSTOM_A'}, status=404)


def test_put_at_1_6_needs_a_body(client):
    resp = client.put('/resource_classes/CUSTOM_A', version='1.6',
                      headers=JSON, status=400)
    assert 'Malformed JSON' in _detail(resp)


def test_put_at_1_7_creates_then_confirms(client):
    created = client.put('/resource_classes/CUSTOM_COW', status=201)
    assert created.headers['Location'].endswith('/resource_classes/CUSTOM_COW')
    again = client.put('/resource_classes/CUSTOM_COW', status=204)
    assert again.headers['Location'].endswith('/resource_classes/CUSTOM_COW')
    assert 'Last-Modified' not in again.headers


@pytest.mark.parametrize('name, message', [
    ('VCPU', "Failed validating 'pattern'"),
    ('CUSTOM_' + 'S' * 249, "Failed validating 'maxLength'"),
    ('CUSTOM_%22', 'Malformed JSON'),
])
def test_put_at_1_7_validates_the_url_name(client, name, message):
    resp = client.put('/resource_classes/%s' % name, status=400)
    assert message in _detail(resp)


def test_delete_custom_class(client):
    _create(client, 'CUSTOM_GONE')
    client.delete('/resource_classes/CUSTOM_GONE', status=204)
    client.delete('/resource_classes/CUSTOM_GONE', status=404)


def test_delete_standard_class_is_400(client):
    resp = client.delete('/resource_classes/VCPU', status=400)
    assert ('Error in delete resource class: Cannot delete standard '
            'resource class VCPU.' in _detail(resp))


def _insert(db, table, **values):
    db.write(lambda conn: conn.execute(table.insert().values(**values)))


def test_delete_class_with_inventory_is_409(client, db):
    _create(client, 'CUSTOM_USED')
    _add_provider(client)
    class_id = db.read(resource_classes.id_for_name, 'CUSTOM_USED')
    provider_id = db.read(lambda conn: conn.scalar(
        tables.resource_providers.select()
        .with_only_columns(tables.resource_providers.c.id)))
    _insert(db, tables.inventories, resource_provider_id=provider_id,
            resource_class_id=class_id, total=1, reserved=0, min_unit=1,
            max_unit=1, step_size=1, allocation_ratio=1.0)
    resp = client.delete('/resource_classes/CUSTOM_USED', status=409)
    assert ('Cannot delete resource class CUSTOM_USED. Class is in use in '
            'inventory.' in _detail(resp))


def test_delete_class_with_allocations_is_409_not_500(client, db):
    _create(client, 'CUSTOM_ALLOCATED')
    _add_provider(client)
    class_id = db.read(resource_classes.id_for_name, 'CUSTOM_ALLOCATED')
    provider_id = db.read(lambda conn: conn.scalar(
        tables.resource_providers.select()
        .with_only_columns(tables.resource_providers.c.id)))
    _insert(db, tables.allocations, resource_provider_id=provider_id,
            consumer_id='c0ffee00-0000-4000-8000-000000000000',
            resource_class_id=class_id, used=1)
    client.delete('/resource_classes/CUSTOM_ALLOCATED', status=409)


@pytest.mark.parametrize('method, url, kwargs', [
    ('get', '/resource_classes', {}),
    ('post', '/resource_classes', {'json': {'name': 'bad name'}}),
    ('get', '/resource_classes/VCPU', {}),
    ('put', '/resource_classes/bad%20name', {}),
    ('delete', '/resource_classes/VCPU', {}),
])
def test_non_admin_is_refused_before_validation(client, method, url,
                                                 kwargs):
    client.token = 'user'
    resp = getattr(client, method)(url, status=403, **kwargs)
    assert resp.json['errors'][0]['title'] == 'Forbidden'


def test_id_lookups(db):
    assert db.read(resource_classes.id_for_name, 'VCPU') == (
        orc.STANDARDS.index('VCPU'))
    assert db.read(resource_classes.ids_by_name, ['VCPU', 'CUSTOM_NOPE']) \
        == {'VCPU': orc.STANDARDS.index('VCPU')}
    assert db.read(resource_classes.ids_by_name, []) == {}
    with pytest.raises(exceptions.NotFound) as caught:
        db.read(resource_classes.id_for_name, 'CUSTOM_NOPE')
    assert caught.value.message == 'No such resource class CUSTOM_NOPE.'

