"""A provider's inventories: the API and the storage behind it."""

import logging
import uuid

import pytest
import sqlalchemy as sa

from placement.storage import exceptions as storage_exc
from placement.storage import inventories
from placement.storage import providers_core
from placement.storage import tables

MAX_INT = 2147483647
CONCURRENT = 'placement.concurrent_update'
IN_USE = 'placement.inventory.inuse'
UNDEFINED = 'placement.undefined_code'


def _error(resp):
    return resp.json['errors'][0]


def _provider(client, name='rp'):
    return client.post('/resource_providers', json={'name': name}).json


def _url(provider, resource_class=None):
    url = '/resource_providers/%s/inventories' % provider['uuid']
    return '%s/%s' % (url, resource_class) if resource_class else url


def _generation(client, provider):
    return client.get(_url(provider)).json['resource_provider_generation']


def _post(client, provider, resource_class='VCPU', total=8, **fields):
    fields.update(resource_class=resource_class, total=total)
    return client.post(_url(provider), json=fields, **_status(fields))


def _status(fields):
    return {'status': fields.pop('status')} if 'status' in fields else {}


def _put_all(client, provider, records, generation=None, **kwargs):
    if generation is None:
        generation = _generation(client, provider)
    return client.put(_url(provider), json={
        'resource_provider_generation': generation,
        'inventories': records}, **kwargs)


def _allocate(db, provider, resource_class, used):
    """Write an allocation row directly (the allocations API is not ours)."""
    def write(conn):
        rp_id = providers_core.get_by_uuid(conn, provider['uuid'])['id']
        class_id = conn.scalar(
            sa.select(tables.resource_classes.c.id)
            .where(tables.resource_classes.c.name == resource_class))
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=rp_id, consumer_id=str(uuid.uuid4()),
            resource_class_id=class_id, used=used))
    db.write(write)


def _inventories(client, provider):
    return client.get(_url(provider)).json['inventories']


# -- reading ---------------------------------------------------------------

def test_empty_inventories_have_no_last_modified(client):
    rp = _provider(client)
    resp = client.get(_url(rp), version='1.15')
    assert resp.json == {'resource_provider_generation': 0,
                         'inventories': {}}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' not in resp.headers


def test_cache_headers_only_from_1_15(client):
    rp = _provider(client)
    _post(client, rp)
    for url in (_url(rp), _url(rp, 'VCPU')):
        old = client.get(url, version='1.14')
        assert 'Cache-Control' not in old.headers
        assert 'Last-Modified' not in old.headers
        new = client.get(url, version='1.15')
        assert new.headers['Cache-Control'] == 'no-cache'
        assert new.headers['Last-Modified'].endswith(' GMT')


@pytest.mark.parametrize('suffix', ['', '/VCPU'])
def test_get_for_missing_provider_repeats_the_reason(client, suffix):
    missing = str(uuid.uuid4())
    resp = client.get('/resource_providers/%s/inventories%s'
                      % (missing, suffix), status=404)
    reason = 'No resource provider with uuid %s found' % missing
    assert '%s : %s' % (reason, reason) in _error(resp)['detail']


def test_get_one_class_without_inventory_is_404(client):
    rp = _provider(client)
    for name in ('VCPU', 'HOUSE'):
        resp = client.get(_url(rp, name), status=404)
        assert ('No inventory of class %s for %s' % (name, rp['uuid'])
                in _error(resp)['detail'])


def test_get_reads_stored_values(client):
    rp = _provider(client)
    _post(client, rp, 'DISK_GB', 2048, reserved=512, min_unit=10,
          max_unit=1024, step_size=10, allocation_ratio=2)
    one = client.get(_url(rp, 'DISK_GB')).json
    assert one == {'total': 2048, 'reserved': 512, 'min_unit': 10,
                   'max_unit': 1024, 'step_size': 10,
                   'allocation_ratio': 2.0,
                   'resource_provider_generation': 1}
    assert isinstance(one['allocation_ratio'], float)
    del one['resource_provider_generation']
    assert _inventories(client, rp) == {'DISK_GB': one}


@pytest.mark.parametrize('method, suffix', [
    ('get', ''), ('post', ''), ('put', ''), ('delete', ''),
    ('get', '/VCPU'), ('put', '/VCPU'), ('delete', '/VCPU')])
def test_missing_provider_is_404_for_every_method(client, method, suffix):
    missing = str(uuid.uuid4())
    kwargs = {'json': {}} if method in ('post', 'put') else {}
    resp = getattr(client, method)(
        '/resource_providers/%s/inventories%s' % (missing, suffix),
        status=404, **kwargs)
    assert _error(resp)['code'] == UNDEFINED


@pytest.mark.parametrize('method, suffix', [
    ('get', ''), ('post', ''), ('put', ''), ('delete', ''),
    ('get', '/VCPU'), ('put', '/VCPU'), ('delete', '/VCPU')])
def test_policy_refuses_a_plain_user(client, method, suffix):
    rp = _provider(client)
    client.token = 'user'
    kwargs = {'json': {}} if method in ('post', 'put') else {}
    resp = getattr(client, method)(_url(rp) + suffix, status=403, **kwargs)
    assert 'placement:resource_providers:inventories:' in (
        _error(resp)['detail'])


# -- POST ------------------------------------------------------------------

def test_post_creates_with_defaults_and_location(client):
    rp = _provider(client)
    resp = _post(client, rp, 'VCPU', 8, status=201)
    assert resp.headers['Location'] == (
        'http://localhost/resource_providers/%s/inventories/VCPU'
        % rp['uuid'])
    assert resp.json == {'total': 8, 'reserved': 0, 'min_unit': 1,
                         'max_unit': MAX_INT, 'step_size': 1,
                         'allocation_ratio': 1.0,
                         'resource_provider_generation': 1}
    assert resp.headers['Last-Modified'].endswith(' GMT')
    assert _generation(client, rp) == 1


def test_post_echoes_values_as_sent_and_ignores_generation(client):
    rp = _provider(client)
    body = _post(client, rp, 'VCPU', 8, allocation_ratio=2,
                 resource_provider_generation=99, status=201).json
    assert body['allocation_ratio'] == 2
    assert isinstance(body['allocation_ratio'], int)
    assert body['resource_provider_generation'] == 1


def test_post_accepts_min_unit_above_max_unit_as_upstream(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU', 8, min_unit=5, max_unit=2, status=201)


@pytest.mark.parametrize('fields, message', [
    ({'resource_class': 'VCPU'}, "'total' is a required property"),
    ({'total': 8}, "'resource_class' is a required property"),
    ({'resource_class': 'VCPU', 'total': 0},
     "Failed validating 'minimum' in schema['properties']['total']"),
    ({'resource_class': 'VCPU', 'total': MAX_INT + 1},
     "Failed validating 'maximum' in schema['properties']['total']"),
    ({'resource_class': 'VCPU', 'total': True}, 'is not of type'),
    ({'resource_class': 'VCPU', 'total': 8, 'reserved': -1},
     "Failed validating 'minimum' in schema['properties']['reserved']"),
    ({'resource_class': 'VCPU', 'total': 8, 'reserved': MAX_INT + 1},
     "Failed validating 'maximum' in schema['properties']['reserved']"),
    ({'resource_class': 'VCPU', 'total': 8, 'min_unit': 0},
     "Failed validating 'minimum' in schema['properties']['min_unit']"),
    ({'resource_class': 'VCPU', 'total': 8, 'max_unit': 0},
     "Failed validating 'minimum' in schema['properties']['max_unit']"),
    ({'resource_class': 'VCPU', 'total': 8, 'step_size': 0},
     "Failed validating 'minimum' in schema['properties']['step_size']"),
    ({'resource_class': 'VCPU', 'total': 8, 'step_size': MAX_INT + 1},
     "Failed validating 'maximum' in schema['properties']['step_size']"),
    ({'resource_class': 'VCPU', 'total': 8, 'allocation_ratio': 3.5e+38},
     "Failed validating 'maximum' in "
     "schema['properties']['allocation_ratio']"),
    ({'resource_class': 'VCPU', 'total': 8, 'allocation_ratio': '1'},
     'is not of type'),
    ({'resource_class': 'bad_class', 'total': 8}, 'does not match'),
    ({'resource_class': 'VCPU', 'total': 8, 'house': 'red'},
     'Additional properties are not allowed'),
])
def test_post_schema_errors(client, fields, message):
    rp = _provider(client)
    resp = client.post(_url(rp), json=fields, status=400)
    detail = _error(resp)['detail']
    assert 'JSON does not validate' in detail
    assert message in detail


def test_post_malformed_json_and_wrong_media_type(client):
    rp = _provider(client)
    resp = client.post(_url(rp), params='{"foo": }', status=400,
                       headers={'Content-Type': 'application/json'})
    assert 'Malformed JSON' in _error(resp)['detail']
    client.post(_url(rp), params='total=1', status=415,
                headers={'Content-Type': 'text/plain'})


@pytest.mark.parametrize('version, fields, status, wording', [
    ('1.25', {'reserved': 9}, 400, 'greater than or equal to total'),
    ('1.25', {'reserved': 8}, 400, 'greater than or equal to total'),
    ('1.26', {'reserved': 9}, 400, 'The reserved value is greater than '
                                   'total.'),
    ('1.26', {'reserved': 8}, 201, None),
    ('1.25', {'allocation_ratio': 0.1}, 400, 'greater than or equal to'),
    ('1.26', {'allocation_ratio': 0}, 201, None),
    ('1.26', {'allocation_ratio': -1}, 400, 'greater than total'),
])
def test_post_capacity_depends_on_microversion(client, version, fields,
                                                 status, wording):
    rp = _provider(client)
    resp = client.post(_url(rp), version=version, status=status,
                       json=dict(resource_class='VCPU', total=8, **fields))
    if wording:
        detail = _error(resp)['detail']
        assert ('Unable to create inventory for resource provider %s: '
                "Invalid inventory for 'VCPU' on resource provider '%s'."
                % (rp['uuid'], rp['uuid'])) in detail
        assert wording in detail
        assert _generation(client, rp) == 0


def test_post_non_finite_ratio_is_400(client):
    rp = _provider(client)
    resp = client.post(
        _url(rp), status=400, headers={'Content-Type': 'application/json'},
        params='{"resource_class": "VCPU", "total": 8, '
               '"allocation_ratio": NaN}')
    assert 'Malformed JSON: NaN is not a JSON number' in (
        _error(resp)['detail'])


def test_post_unknown_class_is_400(client):
    rp = _provider(client)
    resp = _post(client, rp, 'NO_CLASS_14', status=400)
    assert ('Unable to create inventory for resource provider %s: '
            'No such resource class NO_CLASS_14.' % rp['uuid']
            in _error(resp)['detail'])


def test_post_existing_class_is_409(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = _post(client, rp, 'VCPU', status=409)
    error = _error(resp)
    assert 'Update conflict' in error['detail']
    assert error['code'] == CONCURRENT
    assert _generation(client, rp) == 1


# -- PUT one ---------------------------------------------------------------

def test_put_one_updates_and_bumps_generation(client):
    rp = _provider(client)
    _post(client, rp, 'DISK_GB', 2048)
    resp = client.put(_url(rp, 'DISK_GB'), json={
        'resource_provider_generation': 1, 'total': 2048, 'reserved': 1024})
    assert resp.json['reserved'] == 1024
    assert resp.json['resource_provider_generation'] == 2
    assert resp.json['max_unit'] == MAX_INT
    assert client.get(_url(rp, 'DISK_GB')).json['reserved'] == 1024


def test_put_one_generation_mismatch_is_409(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = client.put(_url(rp, 'VCPU'), status=409, json={
        'resource_provider_generation': 5, 'total': 4})
    error = _error(resp)
    assert 'resource provider generation conflict' in error['detail']
    assert error['code'] == CONCURRENT


def test_put_one_requires_generation_and_total(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    for body, missing in (({'total': 4}, 'resource_provider_generation'),
                          ({'resource_provider_generation': 1}, 'total')):
        resp = client.put(_url(rp, 'VCPU'), json=body, status=400)
        assert "'%s' is a required property" % missing in (
            _error(resp)['detail'])


def test_put_one_class_without_inventory_is_400(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = client.put(_url(rp, 'MEMORY_MB'), status=400, json={
        'resource_provider_generation': 1, 'total': 4})
    assert ('No inventory record with resource class for resource '
            'provider %s: No inventory of class MEMORY_MB found.'
            % rp['uuid'] in _error(resp)['detail'])
    assert _generation(client, rp) == 1


def test_put_one_unknown_class_is_404(client):
    rp = _provider(client)
    resp = client.put(_url(rp, 'HOUSE'), status=404, json={
        'resource_provider_generation': 0, 'total': 4})
    assert 'No such resource class HOUSE.' in _error(resp)['detail']


@pytest.mark.parametrize('version, reserved, status', [
    ('1.25', 8, 400), ('1.26', 8, 200), ('1.26', 9, 400)])
def test_put_one_capacity(client, version, reserved, status):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = client.put(_url(rp, 'VCPU'), version=version, status=status,
                      json={'resource_provider_generation': 1, 'total': 8,
                            'reserved': reserved})
    if status == 400:
        assert ('Unable to update inventory for resource provider %s'
                % rp['uuid'] in _error(resp)['detail'])


def test_put_one_below_usage_is_allowed_with_a_warning(client, db, caplog):
    rp = _provider(client)
    _post(client, rp, 'VCPU', 8)
    _allocate(db, rp, 'VCPU', 6)
    with caplog.at_level(logging.WARNING):
        resp = client.put(_url(rp, 'VCPU'), json={
            'resource_provider_generation': 1, 'total': 4})
    assert resp.json['total'] == 4
    assert 'over-capacity for VCPU' in caplog.text


# -- PUT all ---------------------------------------------------------------

def test_put_all_adds_updates_and_removes(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU', 8)
    _post(client, rp, 'MEMORY_MB', 1024)
    resp = _put_all(client, rp, {'VCPU': {'total': 16},
                                 'DISK_GB': {'total': 100, 'reserved': 5}},
                    version='1.15')
    assert resp.json['resource_provider_generation'] == 3
    assert resp.headers['Last-Modified'].endswith(' GMT')
    stored = _inventories(client, rp)
    assert sorted(stored) == ['DISK_GB', 'VCPU']
    assert stored['VCPU']['total'] == 16
    assert stored['DISK_GB']['reserved'] == 5
    assert stored['DISK_GB']['allocation_ratio'] == 1.0


def test_put_all_empty_clears_even_before_1_5(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = _put_all(client, rp, {}, version='1.4')
    assert resp.json == {'resource_provider_generation': 2,
                         'inventories': {}}
    assert _inventories(client, rp) == {}


def test_put_all_generation_mismatch_is_409(client):
    rp = _provider(client)
    resp = _put_all(client, rp, {'VCPU': {'total': 1}}, generation=99,
                    status=409)
    assert _error(resp)['code'] == CONCURRENT
    assert _inventories(client, rp) == {}


@pytest.mark.parametrize('generation', [2 ** 31, -2 ** 31 - 1, 2 ** 70])
def test_put_all_generation_no_column_holds_is_409(client, generation):
    """A generation past the column's range cannot match the provider's
    (PostgreSQL refused it as a statement's parameter)."""
    rp = _provider(client)
    resp = _put_all(client, rp, {'VCPU': {'total': 1}},
                    generation=generation, status=409)
    assert _error(resp)['code'] == CONCURRENT
    assert _inventories(client, rp) == {}


def test_put_all_generation_mismatch_detail_is_upstreams(client):
    rp = _provider(client)
    resp = _put_all(client, rp, {'VCPU': {'total': 1}}, generation=99,
                    status=409)
    assert _error(resp)['detail'].strip().endswith(
        'resource provider generation conflict')
    assert 'update conflict' not in _error(resp)['detail']


def test_put_all_that_succeeds_takes_one_connection(client, db):
    """nova's PUT: the provider is read in the write, not before it."""
    rp = _provider(client)
    generation = _generation(client, rp)
    checkouts = []

    def count(*_args):
        checkouts.append(1)
    sa.event.listen(db.engine, 'checkout', count)
    try:
        _put_all(client, rp, {'VCPU': {'total': 4}}, generation=generation)
    finally:
        sa.event.remove(db.engine, 'checkout', count)
    assert len(checkouts) == 1
    assert _inventories(client, rp)['VCPU']['total'] == 4


MISSING = {'uuid': str(uuid.UUID(int=7))}


@pytest.mark.parametrize('provider, body, status, wording', [
    # A missing provider comes first, whatever the body.
    (MISSING, {'inventories': {}}, 404, 'No resource provider'),
    (MISSING, {'resource_provider_generation': 0,
               'inventories': {'VCPU': {'total': 0}}}, 404,
     'No resource provider'),
    (MISSING, {'resource_provider_generation': 0,
               'inventories': {'VCPU': {'total': 1, 'reserved': 2}}}, 404,
     'No resource provider'),
    # Then the body's form, then the generation.
    (None, {'resource_provider_generation': 99}, 400,
     'JSON does not validate'),
    (None, {'resource_provider_generation': 99,
            'inventories': {'bad': {'total': 0}}}, 409,
     'generation conflict'),
    (None, {'resource_provider_generation': 99,
            'inventories': {'VCPU': {'total': 1, 'reserved': 2}}}, 409,
     'generation conflict'),
    # Then each record.
    (None, {'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 1, 'reserved': 2}}}, 400,
     'greater than'),
], ids=['no-provider-bad-form', 'no-provider-bad-record',
        'no-provider-bad-capacity', 'bad-form-before-generation',
        'generation-before-bad-record', 'generation-before-bad-capacity',
        'bad-capacity'])
def test_put_all_answers_errors_in_upstreams_order(
        client, provider, body, status, wording):
    rp = provider or _provider(client)
    resp = client.put(_url(rp), json=body, status=status)
    assert wording in _error(resp)['detail']


@pytest.mark.parametrize('name', ['HOUSE', 'bad'])
def test_put_all_unknown_class_is_400_and_writes_nothing(client, name):
    rp = _provider(client)
    resp = _put_all(client, rp, {'VCPU': {'total': 1}, name: {'total': 1}},
                    status=400)
    assert ('Unknown resource class in inventory for resource provider '
            '%s: No such resource class %s.' % (rp['uuid'], name)
            in _error(resp)['detail'])
    assert _generation(client, rp) == 0
    assert _inventories(client, rp) == {}


@pytest.mark.parametrize('records', [
    {'VCPU': {'total': 0}},
    {'VCPU': {'total': 1, 'foo': 1}},
    {'VCPU': {'reserved': 1}},
    {'bad': 5},
])
def test_put_all_record_schema_errors(client, records):
    rp = _provider(client)
    resp = _put_all(client, rp, records, status=400)
    assert 'JSON does not validate' in _error(resp)['detail']


def test_put_all_requires_generation_and_inventories(client):
    rp = _provider(client)
    for body in ({'inventories': {}}, {'resource_provider_generation': 0},
                 {'resource_provider_generation': 0, 'inventories': {},
                  'extra': 1}):
        client.put(_url(rp), json=body, status=400)


@pytest.mark.parametrize('version, reserved, status, wording', [
    ('1.25', 253, 400, 'greater than or equal to total'),
    ('1.26', 253, 200, None),
    ('1.26', 512, 400, 'greater than total'),
])
def test_put_all_capacity(client, version, reserved, status, wording):
    rp = _provider(client)
    resp = _put_all(client, rp, {'IPV4_ADDRESS': {
        'total': 253, 'reserved': reserved}}, version=version,
        status=status)
    if wording:
        detail = _error(resp)['detail']
        assert 'Unable to update inventory' in detail
        assert wording in detail


def test_put_all_removing_allocated_classes_is_409(client, db):
    rp = _provider(client)
    _put_all(client, rp, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 64},
                          'DISK_GB': {'total': 10}})
    for name in ('DISK_GB', 'VCPU', 'MEMORY_MB'):
        _allocate(db, rp, name, 1)
    resp = _put_all(client, rp, {'VCPU': {'total': 8}}, status=409)
    error = _error(resp)
    assert error['code'] == IN_USE
    assert ("update conflict: Inventory for 'MEMORY_MB, DISK_GB' on "
            "resource provider '%s' in use." % rp['uuid'] in error['detail'])
    assert sorted(_inventories(client, rp)) == [
        'DISK_GB', 'MEMORY_MB', 'VCPU']
    assert _generation(client, rp) == 1


def test_put_all_below_usage_is_allowed(client, db, caplog):
    rp = _provider(client)
    _put_all(client, rp, {'VCPU': {'total': 8}})
    _allocate(db, rp, 'VCPU', 6)
    with caplog.at_level(logging.WARNING):
        _put_all(client, rp, {'VCPU': {'total': 2}})
    assert _inventories(client, rp)['VCPU']['total'] == 2
    assert 'over-capacity for VCPU' in caplog.text


def test_put_all_rewrites_only_the_records_that_change(client, db):
    """nova sends the whole inventory when one class changed: the others
    are left as stored (one UPDATE instead of three), though the
    generation moves as always."""
    rp = _provider(client)
    _put_all(client, rp, {'VCPU': {'total': 8},
                          'MEMORY_MB': {'total': 1024, 'reserved': 512},
                          'DISK_GB': {'total': 100}})
    _put_all(client, rp, {'VCPU': {'total': 8},
                          'MEMORY_MB': {'total': 1024, 'reserved': 256},
                          'DISK_GB': {'total': 100}})
    with db.engine.connect() as conn:
        updated = {row.name: row.updated_at for row in conn.execute(
            sa.select(tables.resource_classes.c.name,
                      tables.inventories.c.updated_at)
            .join_from(tables.inventories, tables.resource_classes))}
    assert updated['VCPU'] is None and updated['DISK_GB'] is None
    assert updated['MEMORY_MB'] is not None
    assert _inventories(client, rp)['MEMORY_MB']['reserved'] == 256
    assert _generation(client, rp) == 2


# -- DELETE ----------------------------------------------------------------

def test_delete_all_before_1_5_is_405(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = client.delete(_url(rp), version='1.4', status=405)
    # As upstream: a method its version lacks names no others.
    assert 'Allow' not in resp.headers
    assert resp.json['errors'][0]['detail'] == (
        'The method DELETE is not allowed for this resource. \n\n ')
    assert 'VCPU' in _inventories(client, rp)


def test_delete_all_always_bumps_generation(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    client.delete(_url(rp), version='1.5', status=204)
    client.delete(_url(rp), version='1.5', status=204)
    assert _inventories(client, rp) == {}
    assert _generation(client, rp) == 3


def test_delete_all_with_allocations_is_409(client, db):
    rp = _provider(client)
    _put_all(client, rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 10}})
    _allocate(db, rp, 'DISK_GB', 1)
    _allocate(db, rp, 'VCPU', 1)
    resp = client.delete(_url(rp), status=409)
    error = _error(resp)
    assert error['code'] == IN_USE
    assert ("Inventory for 'VCPU, DISK_GB' on resource provider '%s' in "
            "use." % rp['uuid'] in error['detail'])
    assert sorted(_inventories(client, rp)) == ['DISK_GB', 'VCPU']


def test_delete_one(client):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    resp = client.delete(_url(rp, 'VCPU'), status=204)
    assert 'Content-Type' not in resp.headers
    assert _generation(client, rp) == 2
    resp = client.delete(_url(rp, 'VCPU'), status=404)
    assert ('No inventory of class VCPU found for delete: No inventory of '
            'class VCPU found for delete' in _error(resp)['detail'])


def test_delete_one_unknown_class_is_404(client):
    rp = _provider(client)
    resp = client.delete(_url(rp, 'HOUSE'), status=404)
    assert ('No inventory of class HOUSE found for delete: No such '
            'resource class HOUSE.' in _error(resp)['detail'])


def test_delete_one_allocated_is_409_with_upstreams_code(client, db):
    rp = _provider(client)
    _post(client, rp, 'VCPU')
    _allocate(db, rp, 'VCPU', 2)
    resp = client.delete(_url(rp, 'VCPU'), status=409)
    error = _error(resp)
    assert error['code'] == CONCURRENT
    assert ("Unable to delete inventory of class VCPU: Inventory for 'VCPU'"
            " on resource provider '%s' in use." % rp['uuid']
            in error['detail'])
    assert 'VCPU' in _inventories(client, rp)


# -- storage: the generation compare-and-swap ------------------------------

def _stale_provider(client, db, rp):
    """The provider as read before someone else bumped its generation."""
    provider = db.read(providers_core.get_by_uuid, rp['uuid'])
    _post(client, rp, 'DISK_GB')
    return provider


RECORD = {'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
          'step_size': 1, 'allocation_ratio': 1.0}


@pytest.mark.parametrize('change', [
    lambda conn, p: inventories.create(conn, p, 'MEMORY_MB', RECORD),
    lambda conn, p: inventories.update(conn, p, 'VCPU', RECORD),
    lambda conn, p: inventories.delete(conn, p, 'VCPU'),
    lambda conn, p: inventories.replace_all(conn, p, {'IPV4_ADDRESS': RECORD}),
])
def test_stale_generation_changes_nothing(client, db, change):
    rp = _provider(client)
    _post(client, rp, 'VCPU', 8)
    stale = _stale_provider(client, db, rp)
    before = _inventories(client, rp)
    with pytest.raises(storage_exc.ConcurrentUpdate):
        db.write(change, stale)
    assert _inventories(client, rp) == before
    assert _generation(client, rp) == 2
