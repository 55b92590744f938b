"""Creating and showing resource providers."""

import uuid


def test_create_at_1_0_answers_201_with_location(client):
    rp_uuid = str(uuid.uuid4())
    resp = client.post('/resource_providers', version='1.0',
                       json={'name': 'cn1', 'uuid': rp_uuid}, status=201)
    assert resp.headers['Location'].endswith('/resource_providers/' + rp_uuid)
    assert resp.body == b''
    assert 'Content-Type' not in resp.headers


def test_create_at_1_20_returns_the_provider(client):
    resp = client.post('/resource_providers', version='1.20',
                       json={'name': 'cn1'}, status=200)
    body = resp.json
    assert body['generation'] == 0
    assert body['root_provider_uuid'] == body['uuid']
    assert body['parent_provider_uuid'] is None
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers


def test_child_gets_parent_and_root(client):
    root = client.post('/resource_providers', json={'name': 'root'}).json
    child = client.post('/resource_providers', json={
        'name': 'child', 'parent_provider_uuid': root['uuid']}).json
    grandchild = client.post('/resource_providers', json={
        'name': 'grandchild', 'parent_provider_uuid': child['uuid']}).json
    assert grandchild['parent_provider_uuid'] == child['uuid']
    assert grandchild['root_provider_uuid'] == root['uuid']


def test_unknown_parent_is_400(client):
    rp_uuid = str(uuid.uuid4())
    resp = client.post('/resource_providers', status=400, json={
        'name': 'orphan', 'uuid': rp_uuid,
        'parent_provider_uuid': str(uuid.uuid4())})
    assert ('Unable to create resource provider "orphan", %s: Object action '
            'create failed because: parent provider UUID does not exist.'
            % rp_uuid) in resp.json['errors'][0]['detail']


def test_an_empty_name_is_400_on_create_only(client):
    rp_uuid = str(uuid.uuid4())
    resp = client.post('/resource_providers', status=400, json={
        'name': '', 'uuid': rp_uuid})
    assert ('Unable to create resource provider "", %s: Object action '
            'create failed because: name is required' % rp_uuid) in (
        resp.json['errors'][0]['detail'])
    assert client.get('/resource_providers').json == {
        'resource_providers': []}
    # A rename to "" is accepted, as upstream accepts it.
    client.post('/resource_providers', json={'name': 'a', 'uuid': rp_uuid})
    renamed = client.put('/resource_providers/' + rp_uuid,
                         json={'name': ''}).json
    assert renamed['name'] == ''


def test_duplicate_uuid_is_409_naming_it(client):
    first = client.post('/resource_providers', json={'name': 'dup'}).json
    resp = client.post('/resource_providers', status=409, json={
        'name': 'other', 'uuid': first['uuid']})
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.duplicate_name'
    assert ('Conflicting resource provider uuid: %s already exists.'
            % first['uuid']) in error['detail']


def test_duplicate_name_is_409_naming_it(client):
    client.post('/resource_providers', json={'name': 'dup'})
    resp = client.post('/resource_providers', status=409,
                       json={'name': 'dup'})
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.duplicate_name'
    assert ('Conflicting resource provider name: dup already exists.'
            in error['detail'])


def test_duplicate_name_and_uuid_is_409(client):
    """Both clash: the database reports one of them, as with upstream."""
    first = client.post('/resource_providers', json={'name': 'dup'}).json
    resp = client.post('/resource_providers', status=409, json={
        'name': 'dup', 'uuid': first['uuid']})
    assert 'Conflicting resource provider' in resp.json['errors'][0][
        'detail']


def test_failed_create_leaves_nothing_behind(client):
    client.post('/resource_providers', json={'name': 'dup'})
    client.post('/resource_providers', status=409, json={'name': 'dup'})
    names = [rp['name'] for rp in
             client.get('/resource_providers').json['resource_providers']]
    assert names == ['dup']


def test_created_provider_reads_back_as_returned(client):
    root = client.post('/resource_providers', json={'name': 'r'}).json
    child = client.post('/resource_providers', json={
        'name': 'c', 'parent_provider_uuid': root['uuid']}).json
    for created in (root, child):
        shown = client.get('/resource_providers/' + created['uuid']).json
        assert shown == created


def test_uuid_without_dashes_is_normalised(client):
    raw = uuid.uuid4()
    body = client.post('/resource_providers',
                       json={'name': 'n', 'uuid': raw.hex}).json
    assert body['uuid'] == str(raw)


def test_show_links_grow_with_microversion(client):
    rp = client.post('/resource_providers', json={'name': 'cn'}).json
    old = client.get('/resource_providers/' + rp['uuid'], version='1.0').json
    new = client.get('/resource_providers/' + rp['uuid'],
                     version='1.11').json
    assert {link['rel'] for link in old['links']} == {
        'self', 'inventories', 'usages'}
    assert {link['rel'] for link in new['links']} == {
        'self', 'inventories', 'usages', 'aggregates', 'traits',
        'allocations'}
    assert 'root_provider_uuid' not in old


def test_show_unknown_is_404(client):
    client.get('/resource_providers/%s' % uuid.uuid4(), status=404)
