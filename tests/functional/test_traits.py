"""The /traits API, a provider's traits, and the trait storage lookups."""


import os_traits
import pytest

from placement.storage import traits

JSON = {'Content-Type': 'application/json'}
INVALID_NAME = 'The trait is invalid.'


def _detail(resp):
    return resp.json['errors'][0]['detail']


def _names(client, query=''):
    return client.get('/traits' + query).json['traits']


def _provider(client, name='rp'):
    return client.post('/resource_providers', json={'name': name}).json


def _set(client, provider_uuid, names, generation, **kwargs):
    return client.put(
        '/resource_providers/%s/traits' % provider_uuid,
        json={'traits': names, 'resource_provider_generation': generation},
        **kwargs)


@pytest.mark.parametrize('method, url', [
    ('get', '/traits'), ('get', '/traits/CUSTOM_A'),
    ('put', '/traits/CUSTOM_A'), ('delete', '/traits/CUSTOM_A'),
    # Fixed uuids: parametrize ids must be identical in every xdist worker.
    ('get', '/resource_providers/9bd6e4a6-04ad-4c04-a3d6-4b49bd4b1f3b'
            '/traits'),
    ('delete', '/resource_providers/9bd6e4a6-04ad-4c04-a3d6-4b49bd4b1f3b'
               '/traits'),
])
def test_below_1_6_the_endpoints_do_not_exist(client, method, url):
    getattr(client, method)(url, version='1.5', status=404)


def test_put_creates_then_confirms(client):
    created = client.put('/traits/CUSTOM_A', version='1.6', status=201)
    assert created.headers['Location'].endswith('/traits/CUSTOM_A')
    assert 'Last-Modified' not in created.headers
    again = client.put('/traits/CUSTOM_A', version='1.15', status=204)
    assert again.headers['Location'].endswith('/traits/CUSTOM_A')
    assert again.headers['Cache-Control'] == 'no-cache'
    assert again.headers['Last-Modified'].endswith(' GMT')


@pytest.mark.parametrize('name', [
    'TRAIT_X', 'CUSTOM_ABC:1', 'CUSTOM_lower', 'CUSTOM_' + 'A' * 249])
def test_put_rejects_names_that_are_not_custom(client, name):
    resp = client.put('/traits/%s' % name, status=400)
    assert INVALID_NAME in _detail(resp)


def test_show(client):
    client.put('/traits/CUSTOM_A')
    old = client.get('/traits/CUSTOM_A', version='1.14', status=204)
    assert 'Last-Modified' not in old.headers
    new = client.get('/traits/CUSTOM_A', version='1.15', status=204)
    assert new.headers['Last-Modified'].endswith(' GMT')
    assert new.body == b''


def test_show_unknown_is_404(client):
    resp = client.get('/traits/CUSTOM_NOPE', status=404)
    assert 'No such trait(s): CUSTOM_NOPE.' in _detail(resp)


def test_delete(client):
    client.put('/traits/CUSTOM_A')
    client.delete('/traits/CUSTOM_A', status=204)
    client.get('/traits/CUSTOM_A', status=404)
    client.delete('/traits/CUSTOM_A', status=404)


def test_delete_standard_trait_is_400(client):
    resp = client.delete('/traits/HW_CPU_X86_SSE', status=400)
    assert 'Cannot delete standard trait HW_CPU_X86_SSE.' in _detail(resp)


def test_delete_trait_a_provider_has_is_409(client):
    client.put('/traits/CUSTOM_A')
    provider = _provider(client)
    _set(client, provider['uuid'], ['CUSTOM_A'], 0)
    resp = client.delete('/traits/CUSTOM_A', status=409)
    assert ('The trait CUSTOM_A is in use by a resource provider.'
            in _detail(resp))


def test_list_is_standard_traits_then_custom_in_creation_order(client):
    client.put('/traits/CUSTOM_Z')
    client.put('/traits/CUSTOM_B')
    names = _names(client)
    standard = set(os_traits.get_traits())
    assert set(names[:len(standard)]) == standard
    assert names[len(standard):] == ['CUSTOM_Z', 'CUSTOM_B']


def test_list_filters(client):
    for name in ('CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2', 'CUSTOM_OTHER'):
        client.put('/traits/%s' % name)
    provider = _provider(client)
    _set(client, provider['uuid'], ['CUSTOM_TRAIT_2', 'HW_CPU_X86_SSE'], 0)
    assert _names(client, '?name=in:CUSTOM_TRAIT_1,CUSTOM_OTHER,NOPE') == [
        'CUSTOM_TRAIT_1', 'CUSTOM_OTHER']
    assert _names(client, '?name=startswith:CUSTOM_TRAIT') == [
        'CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2']
    assert _names(client, '?associated=true') == [
        'HW_CPU_X86_SSE', 'CUSTOM_TRAIT_2']
    assert _names(client, '?name=startswith:CUSTOM&associated=FALSE') == [
        'CUSTOM_TRAIT_1', 'CUSTOM_OTHER']
    # The last of a repeated parameter wins; an unknown operator is no
    # filter at all.
    assert _names(client, '?name=in:CUSTOM_OTHER&name=in:CUSTOM_TRAIT_1') \
        == ['CUSTOM_TRAIT_1']
    assert len(_names(client, '?name=other:x')) == len(_names(client))
    assert _names(client, '?name=in:') == []


@pytest.mark.parametrize('query, message', [
    ('?name=in_abc', 'Badly formatted name parameter. Expected name query '
     'string parameter in form: ?name=[in|startswith]:[name1,name2|prefix].'
     ' Got: "in_abc"'),
    ('?name=', 'Badly formatted name parameter'),
    ('?associated=xyz',
     'The query parameter "associated" only accepts "true" or "false"'),
    ('?associated=', 'The query parameter "associated" only accepts'),
    ('?invalid=abc', 'Invalid query string parameters: Additional '
     'properties are not allowed'),
    ('?name=in:%FF', 'Invalid query string parameters'),
])
def test_list_rejects_bad_queries(client, query, message):
    resp = client.get('/traits' + query, status=400)
    assert message in _detail(resp)


def test_list_cache_headers_from_1_15(client):
    assert 'Last-Modified' not in client.get('/traits', version='1.14').headers
    resp = client.get('/traits?name=in:NOPE', version='1.15')
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert resp.headers['Last-Modified'].endswith(' GMT')


def test_provider_traits_start_empty(client):
    provider = _provider(client)
    resp = client.get('/resource_providers/%s/traits' % provider['uuid'],
                      version='1.6')
    assert resp.json == {'traits': [], 'resource_provider_generation': 0}
    assert 'Last-Modified' not in resp.headers


def test_replace_provider_traits(client):
    client.put('/traits/CUSTOM_A')
    provider = _provider(client)
    url = '/resource_providers/%s/traits' % provider['uuid']
    body = _set(client, provider['uuid'], ['CUSTOM_A', 'HW_CPU_X86_SSE'],
                0).json
    assert body == {'traits': ['HW_CPU_X86_SSE', 'CUSTOM_A'],
                    'resource_provider_generation': 1}
    assert client.get(url).json == body
    body = _set(client, provider['uuid'], ['CUSTOM_A'], 1).json
    assert body == {'traits': ['CUSTOM_A'], 'resource_provider_generation': 2}
    assert client.get('/resource_providers/%s' % provider['uuid']).json[
        'generation'] == 2


def test_replace_with_the_same_set_keeps_the_generation(client):
    provider = _provider(client)
    _set(client, provider['uuid'], ['HW_CPU_X86_SSE'], 0)
    body = _set(client, provider['uuid'], ['HW_CPU_X86_SSE'], 1).json
    assert body['resource_provider_generation'] == 1


def test_replace_with_stale_generation_is_409(client):
    provider = _provider(client)
    resp = _set(client, provider['uuid'], ['HW_CPU_X86_SSE'], 5, status=409)
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.concurrent_update'
    assert ("Resource provider's generation already changed. Please update "
            "the generation and try again." in error['detail'])


def test_replace_with_unknown_traits_is_400_and_changes_nothing(client):
    provider = _provider(client)
    resp = _set(client, provider['uuid'],
                ['NOPE_1', 'HW_CPU_X86_SSE', 'NOPE_2'], 0, status=400)
    assert 'No such trait NOPE_1, NOPE_2' in _detail(resp)
    body = client.get('/resource_providers/%s/traits'
                      % provider['uuid']).json
    assert body == {'traits': [], 'resource_provider_generation': 0}


@pytest.mark.parametrize('body, message', [
    ({'traits': ['HW_CPU_X86_SSE']},
     "'resource_provider_generation' is a required property"),
    ({'traits': 'x', 'resource_provider_generation': 0},
     "'x' is not of type 'array'"),
    ({'traits': [''], 'resource_provider_generation': 0},
     "Failed validating 'minLength'"),
    ({'traits': [], 'resource_provider_generation': 'x'},
     "'x' is not of type 'integer'"),
    ({'traits': [], 'resource_provider_generation': 0, 'extra': 1},
     'Additional properties are not allowed'),
])
def test_replace_validates_the_body(client, body, message):
    provider = _provider(client)
    resp = client.put('/resource_providers/%s/traits' % provider['uuid'],
                      json=body, status=400)
    assert message in _detail(resp)


def test_replace_needs_json(client):
    provider = _provider(client)
    client.put('/resource_providers/%s/traits' % provider['uuid'],
               params='x', headers={'Content-Type': 'text/plain'},
               status=415)


def test_clear_provider_traits_bumps_generation_only_on_change(client):
    provider = _provider(client)
    url = '/resource_providers/%s/traits' % provider['uuid']
    client.delete(url, status=204)
    assert client.get(url).json['resource_provider_generation'] == 0
    _set(client, provider['uuid'], ['HW_CPU_X86_SSE'], 0)
    resp = client.delete(url, status=204)
    assert 'Content-Type' not in resp.headers
    assert client.get(url).json == {'traits': [],
                                    'resource_provider_generation': 2}


def test_unknown_provider_is_404(client):
    missing = 'non_existed'
    url = '/resource_providers/%s/traits' % missing
    resp = client.get(url, status=404)
    assert ('No resource provider with uuid non_existed found: No resource '
            'provider with uuid non_existed found' in _detail(resp))
    assert resp.json['errors'][0]['code'] == 'placement.undefined_code'
    for resp in (client.delete(url, status=404),
                 _set(client, missing, [], 0, status=404)):
        assert 'No resource provider with uuid non_existed found' in (
            _detail(resp))


@pytest.mark.parametrize('method, url, kwargs', [
    ('get', '/traits', {}),
    ('put', '/traits/BAD', {}),
    ('get', '/traits/CUSTOM_A', {}),
    ('delete', '/traits/HW_CPU_X86_SSE', {}),
    ('get', '/resource_providers/x/traits', {}),
    ('put', '/resource_providers/x/traits', {'json': {}}),
    ('delete', '/resource_providers/x/traits', {}),
])
def test_non_admin_is_refused_first(client, method, url, kwargs):
    client.token = 'user'
    getattr(client, method)(url, status=403, **kwargs)


def test_trait_ids_by_name(db):
    ids = db.read(traits.trait_ids_by_name,
                  ['HW_CPU_X86_SSE', 'NOPE', 'HW_CPU_X86_SSE'])
    assert list(ids) == ['HW_CPU_X86_SSE']
    assert ids['HW_CPU_X86_SSE'] == db.read(
        traits.get_by_name, 'HW_CPU_X86_SSE')['id']
    assert db.read(traits.trait_ids_by_name, []) == {}
