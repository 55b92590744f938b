"""PUT /resource_providers/{uuid}: renaming and re-parenting."""

import time
import uuid

import pytest

from tests.functional.test_resource_providers_list import new_provider

UNKNOWN_UUID = 'd67370b5-4dc0-470d-a4fa-85e8e89abc6c'


def url(provider):
    return '/resource_providers/' + provider['uuid']


def show(client, provider):
    return client.get(url(provider)).json


def put(client, provider, version='1.39', status=200, **body):
    return client.put(url(provider), json=body, version=version,
                      status=status)


def detail(resp):
    return resp.json['errors'][0]['detail']


@pytest.fixture
def tree(client):
    """root -> child -> grandchild, and a separate root 'other'."""
    root = new_provider(client, 'root')
    child = new_provider(client, 'child', parent=root)
    grandchild = new_provider(client, 'grandchild', parent=child)
    other = new_provider(client, 'other')
    return root, child, grandchild, other


def test_rename_returns_the_provider_and_keeps_the_generation(client):
    rp = new_provider(client, 'old')
    body = put(client, rp, name='new').json
    assert body['name'] == 'new'
    assert body['uuid'] == rp['uuid']
    assert body['generation'] == 0
    assert body['root_provider_uuid'] == rp['uuid']
    assert show(client, rp)['name'] == 'new'


def test_rename_before_1_14_shows_no_tree(client):
    rp = new_provider(client, 'old')
    body = put(client, rp, version='1.0', name='new').json
    assert 'root_provider_uuid' not in body
    assert len(body['links']) == 3


def test_rename_keeps_the_parent(client, tree):
    _, child, _, _ = tree
    body = put(client, child, version='1.13', name='renamed').json
    assert body['name'] == 'renamed'
    assert show(client, child)['parent_provider_uuid'] == tree[0]['uuid']


def test_duplicate_name_is_409(client, tree):
    resp = put(client, tree[3], name='child', status=409)
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.duplicate_name'
    assert 'Conflicting resource provider child already exists.' in (
        error['detail'])
    assert show(client, tree[3])['name'] == 'other'


def test_same_name_is_no_conflict(client, tree):
    assert put(client, tree[1], name='child').json['name'] == 'child'


@pytest.mark.parametrize('body,version,message', [
    ({'name': 'x', 'uuid': UNKNOWN_UUID}, '1.39',
     "Additional properties are not allowed ('uuid' was unexpected)"),
    ({'parent_provider_uuid': None}, '1.39', "'name' is a required"),
    ({'name': 'x', 'parent_provider_uuid': UNKNOWN_UUID}, '1.13',
     "Additional properties are not allowed"),
    ({'name': 'x' * 201}, '1.39', "Failed validating 'maxLength'"),
    ({'name': 'x', 'parent_provider_uuid': 'nope'}, '1.39',
     "'nope' is not a 'uuid'"),
])
def test_invalid_body_is_400(client, body, version, message):
    rp = new_provider(client, 'rp')
    resp = client.put(url(rp), json=body, version=version, status=400)
    assert 'JSON does not validate' in detail(resp)
    assert message in detail(resp)


def test_malformed_json_is_400(client):
    rp = new_provider(client, 'rp')
    resp = client.app.put(url(rp), '{"name": }', status=400, headers={
        'X-Auth-Token': 'admin', 'Content-Type': 'application/json'})
    assert 'Malformed JSON' in resp.json['errors'][0]['detail']


def test_unknown_provider_is_404_even_with_a_bad_body(client):
    resp = client.put('/resource_providers/' + UNKNOWN_UUID,
                      json={'bad': 'body'}, status=404)
    assert ('No resource provider with uuid %s found' % UNKNOWN_UUID) in (
        detail(resp))


def test_body_must_be_json(client):
    rp = new_provider(client, 'rp')
    client.app.put(url(rp), 'name=x', status=415, headers={
        'X-Auth-Token': 'admin', 'Content-Type': 'text/plain'})


def test_update_needs_policy_before_lookup(client):
    client.token = 'user'
    client.put('/resource_providers/' + UNKNOWN_UUID, json={'name': 'x'},
               status=403)


# -- parents ---------------------------------------------------------------

def test_a_root_can_gain_a_parent_before_1_37(client, tree):
    root, _, grandchild, other = tree
    body = put(client, root, version='1.14', name='root',
               parent_provider_uuid=other['uuid']).json
    assert body['parent_provider_uuid'] == other['uuid']
    assert body['root_provider_uuid'] == other['uuid']
    # The whole subtree now hangs below the new root.
    assert show(client, grandchild)['root_provider_uuid'] == other['uuid']


def test_setting_the_same_parent_is_allowed_before_1_37(client, tree):
    root, child, _, _ = tree
    body = put(client, child, version='1.36', name='child',
               parent_provider_uuid=root['uuid']).json
    assert body['parent_provider_uuid'] == root['uuid']


def test_reparenting_needs_1_37(client, tree):
    _, child, _, other = tree
    resp = put(client, child, version='1.36', status=400, name='child',
               parent_provider_uuid=other['uuid'])
    assert ('Unable to save resource provider %s: Object action update '
            'failed because: re-parenting a provider is not currently '
            'allowed.' % child['uuid']) in detail(resp)


def test_unparenting_needs_1_37(client, tree):
    _, child, _, _ = tree
    resp = put(client, child, version='1.36', status=400, name='child',
               parent_provider_uuid=None)
    assert ('Object action update failed because: un-parenting a provider '
            'is not currently allowed.') in detail(resp)


def test_reparent_moves_the_subtree(client, tree):
    root, child, grandchild, other = tree
    body = put(client, child, name='child',
               parent_provider_uuid=other['uuid']).json
    assert body['parent_provider_uuid'] == other['uuid']
    assert body['root_provider_uuid'] == other['uuid']
    moved = show(client, grandchild)
    assert moved['root_provider_uuid'] == other['uuid']
    assert moved['parent_provider_uuid'] == child['uuid']
    assert show(client, root)['root_provider_uuid'] == root['uuid']
    in_other = client.get('/resource_providers?in_tree=' + other['uuid'])
    assert [rp['name'] for rp in in_other.json['resource_providers']] == [
        'child', 'grandchild', 'other']


def test_reparent_within_the_tree(client, tree):
    root, child, grandchild, _ = tree
    body = put(client, grandchild, name='grandchild',
               parent_provider_uuid=root['uuid']).json
    assert body['parent_provider_uuid'] == root['uuid']
    assert body['root_provider_uuid'] == root['uuid']


def test_unparent_makes_a_new_root_of_the_subtree(client, tree):
    root, child, grandchild, _ = tree
    body = put(client, child, name='child', parent_provider_uuid=None).json
    assert body['parent_provider_uuid'] is None
    assert body['root_provider_uuid'] == child['uuid']
    assert show(client, grandchild)['root_provider_uuid'] == child['uuid']
    assert show(client, root)['root_provider_uuid'] == root['uuid']


def test_unparenting_a_root_is_a_no_op_at_any_version(client, tree):
    body = put(client, tree[0], version='1.14', name='root',
               parent_provider_uuid=None).json
    assert body['parent_provider_uuid'] is None


def test_unknown_parent_is_400(client, tree):
    resp = put(client, tree[3], status=400, name='other',
               parent_provider_uuid=UNKNOWN_UUID)
    assert ('Unable to save resource provider %s: Object action create '
            'failed because: parent provider UUID does not exist.'
            % tree[3]['uuid']) in detail(resp)


@pytest.mark.parametrize('new_parent', [0, 1, 2])
def test_no_loops(client, tree, new_parent):
    root = tree[0]
    resp = put(client, root, status=400, name='root',
               parent_provider_uuid=tree[new_parent]['uuid'])
    assert ('Object action update failed because: creating loop in the '
            'provider tree is not allowed.') in detail(resp)


def test_reparenting_check_comes_before_the_loop_check(client, tree):
    _, child, grandchild, _ = tree
    resp = put(client, child, version='1.36', status=400, name='child',
               parent_provider_uuid=grandchild['uuid'])
    assert 're-parenting a provider is not currently allowed' in (
        detail(resp))


def test_parent_errors_come_before_the_name_conflict(client, tree):
    resp = put(client, tree[3], status=400, name='child',
               parent_provider_uuid=UNKNOWN_UUID)
    assert 'parent provider UUID does not exist' in detail(resp)


def test_failed_update_changes_nothing(client, tree):
    root, child, _, other = tree
    put(client, other, status=409, name='root',
        parent_provider_uuid=child['uuid'])
    after = show(client, other)
    assert after['name'] == 'other'
    assert after['parent_provider_uuid'] is None


# -- cache headers ---------------------------------------------------------

def test_last_modified_is_that_of_the_previous_change(client, tree):
    _, child, _, _ = tree
    # A child never changed since its creation has no updated_at, and
    # upstream then sends no Last-Modified at all.
    first = put(client, child, version='1.15', name='first')
    assert first.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' not in first.headers
    changed_at = client.get(url(child), version='1.15').headers[
        'Last-Modified']
    time.sleep(1.1)
    second = put(client, child, version='1.15', name='second')
    assert second.headers['Last-Modified'] == changed_at
    assert client.get(url(child), version='1.15').headers[
        'Last-Modified'] != changed_at


def test_no_cache_headers_before_1_15(client, tree):
    resp = put(client, tree[0], version='1.14', name='root')
    assert 'Cache-Control' not in resp.headers
    assert 'Last-Modified' not in resp.headers


# -- storage directly ------------------------------------------------------

def test_update_of_a_provider_deleted_meanwhile_is_not_found(db):
    from placement.storage import exceptions
    from placement.storage import resource_providers as storage
    with pytest.raises(exceptions.NotFound):
        db.write(storage.update, str(uuid.uuid4()), 'x')
