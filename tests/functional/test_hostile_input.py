"""Hostile input gets a 400/413/414/431 in the OpenStack error format on
every backend, never a 500, and leaves the database as it was."""

import http.client
import json
import re
import socket
import uuid as uuidlib

import pytest

from placement import conf as placement_conf
from tests.functional.server import request
from tests.functional.server import running

JSON = {'Content-Type': 'application/json'}


def _detail(resp):
    errors = resp.json['errors']
    assert errors[0]['status'] == resp.status_int
    return errors[0]['detail']


def _post_raw(client, url, raw, status=400, headers=None):
    return client.app.post(url, raw, headers=dict(
        client._headers(None, headers), **JSON), status=status)


def _no_providers(client):
    assert client.get('/resource_providers').json[
        'resource_providers'] == []


@pytest.mark.parametrize('raw', [
    b'[' * 20000 + b']' * 20000,
    b'{"a":' * 5000 + b'1' + b'}' * 5000,
    b'{"name": ' + b'[' * 40 + b']' * 40 + b'}',
], ids=['arrays-20000', 'objects-5000', 'arrays-40'])
def test_deep_nesting_is_a_400(client, raw):
    resp = _post_raw(client, '/resource_providers', raw)
    assert 'nested more than 32 levels deep' in _detail(resp)
    _no_providers(client)


@pytest.mark.parametrize('name, problem', [
    ('\ud800x', 'lone UTF-16 surrogate (U+D800)'),
    ('x\udfff', 'lone UTF-16 surrogate (U+DFFF)'),
    ('a\x00b', 'NUL character'),
])
def test_unstorable_strings_in_bodies_are_a_400(client, name, problem):
    # json.dumps escapes both, as a client's encoder would.
    raw = json.dumps({'name': name}).encode()
    resp = _post_raw(client, '/resource_providers', raw)
    assert problem in _detail(resp)
    _no_providers(client)
    raw = json.dumps({name: 1}).encode()
    assert problem in _detail(_post_raw(client, '/resource_providers', raw))


@pytest.mark.parametrize('raw, problem', [
    ('{"name": "x\ud800"}'.encode('utf-8', 'surrogatepass'),
     'lone UTF-16 surrogate (U+D800)'),
    ('{"name": "a\\u0000b"}'.encode('utf-16'), 'NUL character'),
    ('{"name": "\\udfffx"}'.encode('utf-32'),
     'lone UTF-16 surrogate (U+DFFF)'),
], ids=['surrogate-as-utf8-bytes', 'nul-escaped-in-utf16',
        'surrogate-escaped-in-utf32'])
def test_unstorable_strings_not_escaped_or_not_in_utf8_are_a_400(
        client, raw, problem):
    """The decoder takes UTF-16 and UTF-32 too, and a surrogate's UTF-8
    bytes as they are."""
    assert problem in _detail(_post_raw(client, '/resource_providers', raw))
    _no_providers(client)


@pytest.mark.parametrize('number', [b'NaN', b'Infinity', b'-Infinity',
                                    b'1e400', b'9' * 5000])
def test_numbers_no_column_holds_are_a_400(client, number):
    provider = client.post('/resource_providers', json={'name': 'rp'}).json
    url = '/resource_providers/%s/inventories' % provider['uuid']
    raw = (b'{"resource_class": "VCPU", "total": 8, "allocation_ratio": %s}'
           % number)
    resp = _post_raw(client, url, raw)
    assert 'Malformed JSON: ' in _detail(resp)
    assert client.get(url).json['inventories'] == {}


def test_a_ratio_scaling_capacity_past_the_float_limit_is_a_400(client):
    provider = client.post('/resource_providers', json={'name': 'rp'}).json
    url = '/resource_providers/%s/inventories' % provider['uuid']
    resp = client.post(url, json={'resource_class': 'VCPU', 'total': 35102,
                                  'allocation_ratio': -1.8e307}, status=400)
    assert 'The reserved value is greater than' in _detail(resp)
    assert client.get(url).json['inventories'] == {}


def test_a_body_that_is_not_utf8_is_a_400(client):
    resp = _post_raw(client, '/resource_providers', b'{"name": "\xff\xfe"}')
    assert 'Malformed JSON: ' in _detail(resp)
    _no_providers(client)


@pytest.mark.parametrize('query', [
    '?name=a%00b', '?uuid=%00', '?member_of=%00', '?na%00me=x',
    '?in_tree=%ED%A0%80',
])
def test_unstorable_query_strings_are_a_400(client, query):
    client.post('/resource_providers', json={'name': 'ab'})
    resp = client.get('/resource_providers' + query, status=400)
    assert 'Invalid query string parameters' in _detail(resp)


@pytest.mark.parametrize('method, url', [
    ('GET', '/resource_providers/a%00b'),
    ('PUT', '/traits/CUSTOM_A%00B'),
    ('PUT', '/resource_classes/CUSTOM_A%00B'),
    ('DELETE', '/allocations/%00'),
    ('GET', '/resource_providers/%ED%A0%80'),
])
def test_unstorable_paths_are_a_400_or_404(client, method, url):
    resp = client.request(method, url, status='*')
    assert resp.status_int in (400, 404), resp
    _detail(resp)
    assert client.get('/traits?name=startswith:CUSTOM_').json[
        'traits'] == []
    names = [rc['name'] for rc in client.get(
        '/resource_classes').json['resource_classes']]
    assert not [name for name in names if name.startswith('CUSTOM_')]


def test_a_body_over_the_limit_is_a_413_before_it_is_read(conf, client):
    conf.set_override('max_request_body_size', 1000, group='oslo_middleware')
    body = json.dumps({'name': 'x' * 1200}).encode()
    resp = _post_raw(client, '/resource_providers', body, status=413)
    assert ('Request body is larger than the limit of 1000 bytes.'
            in _detail(resp))
    # Without a declared length (chunked), reading stops at the limit.
    resp = client.app.request(
        '/resource_providers', method='POST', body=body, status=413,
        headers=dict(client._headers(None, None), **JSON))
    _no_providers(client)


def test_default_limit_holds_a_reshape_of_a_1000_provider_tree():
    """Three inventories per provider and four consumers per provider,
    each holding two classes: about half the default."""
    providers = [str(uuidlib.uuid4()) for _ in range(1000)]
    record = {'total': 64, 'reserved': 0, 'min_unit': 1, 'max_unit': 64,
              'step_size': 1, 'allocation_ratio': 16.0}
    body = {
        'inventories': {uuid: {
            'resource_provider_generation': 12,
            'inventories': {rc: record for rc in (
                'VCPU', 'MEMORY_MB', 'CUSTOM_NUMA_MEMORY')}}
            for uuid in providers},
        'allocations': {str(uuidlib.uuid4()): {
            'allocations': {uuid: {'resources': {'VCPU': 2,
                                                 'MEMORY_MB': 2048}}},
            'project_id': str(uuidlib.uuid4()),
            'user_id': str(uuidlib.uuid4()),
            'consumer_generation': 3, 'consumer_type': 'INSTANCE'}
            for uuid in providers for _ in range(4)},
    }
    size = len(json.dumps(body))
    assert size < placement_conf.MAX_REQUEST_BODY_SIZE * 0.75, size


def _raw_request(port, path, headers=None):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    try:
        conn.request('GET', path, headers=dict(
            {'X-Auth-Token': 'admin', 'Accept': 'application/json',
             'OpenStack-API-Version': 'placement 1.39'},
            **(headers or {})))
        response = conn.getresponse()
        return response.status, response.getheader('Content-Type'), \
            json.loads(response.read())
    finally:
        conn.close()


def _member_of_path(count):
    members = ','.join(str(uuidlib.uuid4()) for _ in range(count))
    return '/resource_providers?member_of=in:' + members


@pytest.mark.backends('sqlite', 'postgresql')
def test_request_line_and_header_limits(database_url, tmp_path):
    """A nova-sized query (200 aggregates, ~7.5 KB) and twice that are
    answered; beyond 16 KiB the line is a 414 and beyond 64 KiB of
    headers a 431, as JSON errors."""
    with running(database_url, tmp_path) as port:
        for count in (200, 400):
            status, _, body = _raw_request(port, _member_of_path(count))
            assert (status, body) == (200, {'resource_providers': []}), body
        status, ctype, body = _raw_request(port, _member_of_path(460))
        assert (status, ctype) == (414, 'application/json')
        assert body['errors'][0]['status'] == 414
        status, _, _ = _raw_request(port, '/', {'X-Big': 'y' * 9000})
        assert status == 200
        status, ctype, body = _raw_request(port, '/', {'X-Big': 'y' * 66000})
        assert (status, ctype) == (431, 'application/json')
        assert body['errors'][0]['status'] == 431


@pytest.mark.backends('sqlite')
def test_request_limits_are_configurable(database_url, tmp_path):
    with running(database_url, tmp_path, extra_args=[
            '--max-request-line', '4096',
            '--max-header-size', '4096']) as port:
        status, _, _ = _raw_request(port, _member_of_path(200))
        assert status == 414
        status, _, _ = _raw_request(port, '/', {'X-Big': 'y' * 5000})
        assert status == 431


@pytest.mark.parametrize('query', [
    '/resource_providers?resources=VCPU:99999999999999999999',
    '/resource_providers?resources=VCPU:2147483648',
    '/allocation_candidates?resources=VCPU:99999999999999999999',
    '/allocation_candidates?resources=VCPU:1&limit=99999999999999999999',
    '/resource_providers?in_tree=' + '1' * 32,
    '/usages?project_id=' + 'p' * 300,
])
def test_out_of_range_values_in_queries_are_not_a_500(client, query):
    provider = client.post('/resource_providers', json={'name': 'rp'}).json
    client.put('/resource_providers/%s/inventories' % provider['uuid'],
               json={'resource_provider_generation': 0,
                     'inventories': {'VCPU': {'total': 8}}})
    resp = client.get(query, status='*')
    assert resp.status_int in (200, 400), resp.text


def _raw_exchange(port, payload):
    """Send ``payload`` as it is; (status, JSON body) of the answer."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=30)
    try:
        sock.sendall(payload)
        data = b''
        while b'\r\n\r\n' not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b'\r\n\r\n')
        length = int(re.search(rb'(?i)content-length: *(\d+)', head).group(1))
        while len(body) < length:
            body += sock.recv(65536)
    finally:
        sock.close()
    return int(head.split()[1]), json.loads(body)


def _post(body):
    return (b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
            b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
            b'Connection: close\r\nContent-Length: %d\r\n\r\n%s'
            % (len(body), body))


def test_the_probes_over_http(database_url, tmp_path):
    """The issue's probes against a live placement-api, on every backend:
    each a 4xx in the error format, nothing stored."""
    with running(database_url, tmp_path) as port:
        probes = [
            (_post(b'[' * 20000 + b']' * 20000), 400),
            (_post(b'{"a":' * 5000 + b'1' + b'}' * 5000), 400),
            (_post(b'{"name": "\\ud800x"}'), 400),
            (_post(b'{"name": "a\\u0000b"}'), 400),
            (b'GET /resource_providers?name=a%00b HTTP/1.1\r\nHost: x\r\n'
             b'X-Auth-Token: admin\r\nConnection: close\r\n\r\n', 400),
            (b'GET /resource_providers/a%00b HTTP/1.1\r\nHost: x\r\n'
             b'X-Auth-Token: admin\r\nConnection: close\r\n\r\n', 400),
            # 40 MB declared and none of it sent: refused at once.
            (b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
             b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
             b'Content-Length: 41943040\r\n\r\n', 413),
        ]
        for payload, expected in probes:
            status, body = _raw_exchange(port, payload)
            assert status == expected, (payload[:80], body)
            assert body['errors'][0]['status'] == expected
        status, body = request(port, 'GET', '/resource_providers')
        assert (status, body) == (200, {'resource_providers': []})


def _chunked_post(body, pieces):
    """A POST whose body is sent as ``pieces`` chunks of ``body``."""
    size = -(-len(body) // pieces)
    chunks = b''.join(b'%x\r\n%s\r\n' % (len(body[at:at + size]),
                                         body[at:at + size])
                      for at in range(0, len(body), size))
    return (b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
            b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
            b'OpenStack-API-Version: placement 1.20\r\n'
            b'Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n'
            + chunks + b'0\r\n\r\n')


@pytest.mark.backends('sqlite')
def test_a_chunked_body_is_read_whole(database_url, tmp_path):
    """A body sent in chunks (no Content-Length) is the request's body,
    not an empty one; past the size limit it is still a 413."""
    with running(database_url, tmp_path, extra_config=(
            '[oslo_middleware]\nmax_request_body_size = 1000\n')) as port:
        status, body = _raw_exchange(
            port, _chunked_post(b'{"name": "chunked-provider"}', 3))
        assert (status, body['name']) == (200, 'chunked-provider'), body
        status, body = _raw_exchange(
            port, _chunked_post(json.dumps({'name': 'x' * 1200}).encode(), 4))
        assert (status, body['errors'][0]['status']) == (413, 413)
        status, body = request(port, 'GET', '/resource_providers')
        assert [rp['name'] for rp in body['resource_providers']] == [
            'chunked-provider']
