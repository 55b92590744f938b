"""HTTP behaviour every endpoint shares, seen through the real routes.

Version discovery, microversion negotiation, the error document, request
ids, method handling, cache headers and CORS: what upstream Placement
clients rely on before any resource is involved.
"""

import datetime
import email.utils
import re

import pytest
import webtest

from placement import app as placement_app

REQUEST_ID = re.compile(r'^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-'
                        r'[0-9a-f]{4}-[0-9a-f]{12}$')
UNKNOWN_UUID = '7b7e2f4a-9c0f-4a8e-9a51-3bd2f0a1c0de'


def version_header(version):
    return {'OpenStack-API-Version': 'placement %s' % version}


def only_error(resp):
    """The single entry of an error document, checked for its shape."""
    assert resp.content_type == 'application/json'
    errors = resp.json['errors']
    assert len(errors) == 1
    return errors[0]


# -- version discovery -------------------------------------------------------

def test_root_lists_the_version_range_without_a_token(app):
    resp = app.get('/')
    assert resp.json == {'versions': [{
        'id': 'v1.0',
        'max_version': '1.39',
        'min_version': '1.0',
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }]}
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.0'


def test_root_ignores_accept_that_excludes_json(app):
    resp = app.get('/', headers={'Accept': 'text/plain'})
    assert resp.content_type == 'application/json'


def test_root_sends_cache_headers_from_1_15(app):
    before = app.get('/', headers=version_header('1.14'))
    assert 'Last-Modified' not in before.headers
    assert 'Cache-Control' not in before.headers

    resp = app.get('/', headers=version_header('1.15'))
    assert resp.headers['Cache-Control'] == 'no-cache'
    modified = email.utils.parsedate_to_datetime(resp.headers['Last-Modified'])
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs((now - modified).total_seconds()) < 60


# -- microversions -----------------------------------------------------------

def test_no_version_header_means_the_minimum(app):
    resp = app.get('/')
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.0'
    assert resp.headers['Vary'] == 'openstack-api-version'


def test_latest_means_the_maximum(app):
    resp = app.get('/', headers=version_header('latest'))
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.39'


@pytest.mark.parametrize('version', ['1.1', '1.23', '1.39'])
def test_requested_version_is_echoed(app, version):
    resp = app.get('/', headers=version_header(version))
    assert resp.headers['OpenStack-API-Version'] == 'placement %s' % version
    assert resp.headers['Vary'] == 'openstack-api-version'


def test_version_header_of_other_services_is_ignored(app):
    resp = app.get('/', headers={'OpenStack-API-Version': 'compute 2.1'})
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.0'


@pytest.mark.parametrize('version', ['1.40', '2.0', '0.9'])
def test_version_out_of_range_is_406_with_the_range(app, version):
    resp = app.get('/', headers=version_header(version), status=406)
    error = only_error(resp)
    assert error['title'] == 'Not Acceptable'
    assert error['min_version'] == '1.0'
    assert error['max_version'] == '1.39'
    assert error['detail'].endswith(
        'Invalid microversion: Unacceptable version header: %s' % version)
    # No version was agreed, so none is announced.
    assert 'OpenStack-API-Version' not in resp.headers


@pytest.mark.parametrize('version', ['1.a', 'one', '1.2.3', '1'])
def test_malformed_version_is_400(app, version):
    resp = app.get('/', headers=version_header(version), status=400)
    error = only_error(resp)
    assert error['title'] == 'Bad Request'
    assert 'Invalid microversion: invalid version string' in error['detail']
    assert 'min_version' not in error


def test_errors_carry_the_microversion_headers(client):
    resp = client.get('/no/such/thing', version='1.20', status=404)
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.20'
    assert resp.headers['Vary'] == 'openstack-api-version'


# -- the error document ------------------------------------------------------

def test_404_in_upstream_format(client):
    resp = client.get('/no/such/thing', version='1.0', status=404)
    error = only_error(resp)
    assert error == {
        'status': 404,
        'title': 'Not Found',
        'detail': 'The resource could not be found.\n\n   ',
        'request_id': resp.headers['x-openstack-request-id'],
    }


def test_error_code_appears_from_1_23(client):
    assert 'code' not in only_error(
        client.get('/no/such/thing', version='1.22', status=404))
    error = only_error(client.get('/no/such/thing', version='1.23',
                                  status=404))
    assert error['code'] == 'placement.undefined_code'


def test_405_names_allowed_methods(client):
    resp = client.delete('/', status=405)
    assert resp.headers['Allow'] == 'GET'
    error = only_error(resp)
    assert error['title'] == 'Method Not Allowed'
    assert error['detail'] == (
        'The method DELETE is not allowed for this resource. \n\n '
        'The method specified is not allowed for this resource.')
    assert error['code'] == 'placement.undefined_code'


U = '/resource_providers/%s' % UNKNOWN_UUID


@pytest.mark.parametrize('url, allowed', [
    ('/', 'GET'),
    ('/resource_classes', 'GET, POST'),
    ('/resource_classes/CUSTOM_A', 'GET, PUT, DELETE'),
    ('/resource_providers', 'GET, POST'),
    (U, 'GET, DELETE, PUT'),
    (U + '/inventories', 'GET, POST, PUT, DELETE'),
    (U + '/inventories/VCPU', 'GET, PUT, DELETE'),
    (U + '/usages', 'GET'),
    (U + '/aggregates', 'GET, PUT'),
    (U + '/allocations', 'GET'),
    (U + '/traits', 'GET, PUT, DELETE'),
    ('/allocations', 'POST'),
    ('/allocations/' + UNKNOWN_UUID, 'GET, PUT, DELETE'),
    ('/allocation_candidates', 'GET'),
    ('/traits', 'GET'),
    ('/traits/CUSTOM_A', 'GET, PUT, DELETE'),
    ('/usages', 'GET'),
    ('/reshaper', 'POST'),
])
def test_allow_lists_methods_in_upstreams_order(client, url, allowed):
    """Clients and tests compare the header as a string."""
    resp = client.request('PATCH', url, version='1.27', status=405)
    assert resp.headers['Allow'] == allowed


@pytest.mark.parametrize('method', ['FOO', 'PROPFIND'])
def test_a_method_no_route_serves_is_405_with_the_routes_allow(client,
                                                               method):
    """Known to falcon (PROPFIND, WebDAV's) or not (FOO), as upstream."""
    def send(url, status):
        return client.app.request(url, method=method, status=status,
                                  headers={'X-Auth-Token': 'admin'})
    resp = send('/resource_providers', 405)
    assert resp.headers['Allow'] == 'GET, POST'
    assert only_error(resp)['detail'].startswith(
        'The method %s is not allowed for this resource.' % method)
    send('/no/such/thing', 404)


@pytest.mark.parametrize('url', ['/', '/resource_providers',
                                 '/resource_providers/%s' % UNKNOWN_UUID])
def test_options_is_405_not_a_preflight(client, url):
    resp = client.request('OPTIONS', url, status=405)
    allowed = resp.headers['Allow'].split(', ')
    assert 'OPTIONS' not in allowed
    assert 'GET' in allowed
    assert only_error(resp)['status'] == 405


def test_error_rendered_as_text_when_client_wants_text(client):
    resp = client.get('/no/such/thing', version='1.0', status=404,
                      headers={'Accept': 'text/plain'})
    assert resp.content_type == 'text/plain'
    assert resp.text.startswith('404 Not Found\n\nThe resource could not '
                                'be found.')


@pytest.mark.parametrize('accept', ['application/xml',
                                    'application/json;q=0'])
def test_error_rendered_as_text_when_client_takes_neither_json_nor_html(
        client, accept):
    """As upstream (webob) falls back to plain text."""
    resp = client.get('/no/such/thing', status=404,
                      headers={'Accept': accept})
    assert resp.content_type == 'text/plain'
    assert resp.text.startswith('404 Not Found\n\n')
    resp = client.get('/resource_providers', status=406,
                      headers={'Accept': accept})
    assert resp.content_type == 'text/plain'
    assert resp.text.startswith('406 Not Acceptable\n\n')


# -- request ids -------------------------------------------------------------

def assert_request_id_headers(resp):
    first = resp.headers['x-openstack-request-id']
    assert REQUEST_ID.match(first)
    assert resp.headers['openstack-request-id'] == first
    return first


def test_request_id_on_success(app):
    first = assert_request_id_headers(app.get('/'))
    second = assert_request_id_headers(app.get('/'))
    assert first != second


def test_request_id_on_error_matches_the_body(client):
    resp = client.get('/no/such/thing', status=404)
    assert only_error(resp)['request_id'] == assert_request_id_headers(resp)


def test_request_id_on_microversion_error(app):
    resp = app.get('/', headers=version_header('9.9'), status=406)
    assert only_error(resp)['request_id'] == assert_request_id_headers(resp)


# -- authentication ----------------------------------------------------------

def test_no_token_is_401_except_for_root(app):
    resp = app.get('/resource_providers', status=401)
    error = only_error(resp)
    assert error['title'] == 'Unauthorized'
    assert error['request_id'] == assert_request_id_headers(resp)
    app.get('/', status=200)


def test_no_token_is_401_even_for_unknown_urls(app):
    only_error(app.get('/no/such/thing', status=401))


# -- request checks ----------------------------------------------------------

def test_body_without_content_type_is_400(client):
    resp = client.app.request('/resource_providers', method='POST',
                              body=b'{"name": "x"}',
                              headers={'X-Auth-Token': 'admin'}, status=400)
    assert 'CONTENT_TYPE' not in resp.request.environ
    assert only_error(resp)['detail'].endswith(
        'content-type header required when content-length > 0  ')


def test_wrong_content_type_is_415(client):
    resp = client.app.post(
        '/resource_providers', params=b'{"name": "x"}',
        headers={'X-Auth-Token': 'admin', 'Content-Type': 'text/plain'},
        status=415)
    error = only_error(resp)
    assert error['title'] == 'Unsupported Media Type'
    assert error['detail'] == (
        'The request media type text/plain is not supported by this '
        'server. \n\n The media type text/plain is not supported, use '
        'application/json')


def test_an_empty_content_type_is_named_none(client):
    rp = client.post('/resource_providers', json={'name': 'rp'}).json
    resp = client.app.post(
        '/resource_providers/%s/inventories' % rp['uuid'], params=b'',
        headers={'X-Auth-Token': 'admin', 'Content-Type': ''}, status=415)
    assert only_error(resp)['detail'] == (
        'The request media type None is not supported by this server. '
        '\n\n The media type None is not supported, use application/json')


def test_get_with_accept_excluding_json_is_406(client):
    resp = client.get('/resource_providers', headers={'Accept': 'text/plain'},
                      status=406)
    assert resp.content_type == 'text/plain'
    assert resp.text == (
        '406 Not Acceptable\n\nThe resource could not be generated that was '
        'acceptable to your browser (content of type text/plain. \n\n Only '
        'application/json is provided')


def test_get_with_accept_including_json_is_served(client):
    client.get('/resource_providers',
               headers={'Accept': 'text/html, application/json;q=0.5'})
    client.get('/resource_providers', headers={'Accept': '*/*'})


# -- CORS ----------------------------------------------------------------------

ORIGIN = 'http://valid.example.com'


@pytest.fixture
def cors_app(conf, db):
    conf.set_override('allowed_origin', [ORIGIN], group='cors')
    return webtest.TestApp(placement_app.build_app(conf, db, prepare=False))


def test_cors_preflight_for_allowed_origin(cors_app):
    resp = cors_app.options('/', headers={
        'Origin': ORIGIN,
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'openstack-api-version'})
    assert resp.status_int == 200
    assert resp.headers['Access-Control-Allow-Origin'] == ORIGIN
    assert resp.headers['Access-Control-Allow-Headers'].lower() == (
        'openstack-api-version')
    assert_request_id_headers(resp)


def test_cors_preflight_for_other_origin_is_not_allowed(cors_app):
    resp = cors_app.options('/', headers={
        'Origin': 'http://invalid.example.com',
        'Access-Control-Request-Method': 'GET'})
    assert 'Access-Control-Allow-Origin' not in resp.headers


def test_cors_simple_request_exposes_version_header(cors_app):
    resp = cors_app.get('/', headers={'Origin': ORIGIN})
    assert resp.headers['Access-Control-Allow-Origin'] == ORIGIN
    exposed = resp.headers['Access-Control-Expose-Headers'].lower()
    assert 'openstack-api-version' in exposed.split(',')


def test_cors_preflight_allows_upstream_default_headers(cors_app):
    resp = cors_app.options('/', headers={
        'Origin': ORIGIN,
        'Access-Control-Request-Method': 'PATCH',
        'Access-Control-Request-Headers': 'x-auth-token,x-roles'})
    assert resp.headers['Access-Control-Allow-Origin'] == ORIGIN
    assert resp.headers['Access-Control-Allow-Methods'] == 'PATCH'


def test_without_cors_config_options_is_405(app):
    resp = app.options('/', headers={'Origin': ORIGIN,
                                     'Access-Control-Request-Method': 'GET'},
                       status=405)
    assert 'Access-Control-Allow-Origin' not in resp.headers
