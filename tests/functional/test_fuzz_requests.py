"""Random requests for every write and read endpoint (hypothesis):
bodies that are random JSON or a valid body with one part replaced by
something hostile (lone surrogates, NUL, deep nesting, huge or non-finite
numbers, wrong types), random path segments and random query strings.
Never a 5xx, and a refused write leaves the database exactly as it was."""

import json
import urllib.parse
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from placement.storage import tables

SETTINGS = hypothesis.settings(
    max_examples=60, deadline=None, derandomize=True,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture,
                           hypothesis.HealthCheck.too_slow])

# Text from the whole of Unicode, surrogates and NUL included, half the
# time one of the known troublemakers.
TEXT = st.sampled_from(
    ['\x00', 'a\x00b', '\ud800', 'x\udfff', 'CUSTOM_\x00', '', ' ' * 300,
     'VCPU', 'CUSTOM_A\x00']) | st.text(st.characters(codec=None),
                                      max_size=12)
NUMBERS = (st.integers() | st.floats() | st.sampled_from(
    [2 ** 31, -2 ** 31 - 1, 2 ** 63, 10 ** 30, 1e308, -1e308]))
LEAVES = st.none() | st.booleans() | NUMBERS | TEXT
JSON_VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
DEEP = st.integers(30, 900).map(lambda n: json.loads('[' * n + ']' * n))
HOSTILE = JSON_VALUES | DEEP
# What replaces one part of a valid body: mostly a single bad value.
REPLACEMENT = st.one_of(TEXT, TEXT, NUMBERS, HOSTILE)


def _snapshot(db):
    """Every row of every table, comparable."""
    with db.engine.connect() as conn:
        return {table.name: sorted(
            repr(tuple(row)) for row in conn.execute(sa.select(table)))
            for table in tables.metadata.sorted_tables}


@pytest.fixture
def world(client):
    """A small tree with inventory, a trait, an aggregate, a custom class
    and a consumer: what the valid bodies name."""
    root = client.post('/resource_providers', json={'name': 'root'}).json
    child = client.post('/resource_providers', json={
        'name': 'child', 'parent_provider_uuid': root['uuid']}).json
    client.put('/resource_providers/%s/inventories' % root['uuid'], json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}}})
    client.put('/resource_classes/CUSTOM_GOLD')
    client.put('/traits/CUSTOM_FAST')
    consumer = str(uuidlib.uuid4())
    client.put('/allocations/' + consumer, json={
        'allocations': {root['uuid']: {'resources': {'VCPU': 1}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    return {'root': root['uuid'], 'child': child['uuid'],
            'consumer': consumer}


def _writes(world):
    """(method, path, a valid body) for every write endpoint."""
    root, consumer = world['root'], world['consumer']
    allocation = {'allocations': {root: {'resources': {'VCPU': 1}}},
                  'project_id': 'p', 'user_id': 'u',
                  'consumer_generation': 1, 'consumer_type': 'INSTANCE'}
    inventories = {'resource_provider_generation': 2, 'inventories': {
        'VCPU': {'total': 8, 'reserved': 0, 'allocation_ratio': 2.0}}}
    rp = '/resource_providers/' + root
    return [
        ('POST', '/resource_providers', {'name': 'n', 'uuid': str(
            uuidlib.uuid4()), 'parent_provider_uuid': root}),
        ('PUT', rp, {'name': 'renamed', 'parent_provider_uuid': None}),
        ('POST', rp + '/inventories', {'resource_class': 'DISK_GB',
                                       'total': 10, 'max_unit': 5}),
        ('PUT', rp + '/inventories', inventories),
        ('PUT', rp + '/inventories/VCPU', dict(
            inventories['inventories']['VCPU'],
            resource_provider_generation=2)),
        ('PUT', rp + '/traits', {'traits': ['CUSTOM_FAST'],
                                 'resource_provider_generation': 2}),
        ('PUT', rp + '/aggregates', {'aggregates': [str(uuidlib.uuid4())],
                                     'resource_provider_generation': 2}),
        ('PUT', '/allocations/' + consumer, allocation),
        ('POST', '/allocations', {consumer: allocation}),
        ('POST', '/reshaper', {'inventories': {root: inventories},
                               'allocations': {consumer: allocation}}),
        ('POST', '/resource_classes', {'name': 'CUSTOM_NEW'}),
    ]


def _paths(value):
    """Every path to a part of ``value``."""
    yield ()
    if isinstance(value, dict):
        for key, item in value.items():
            for path in _paths(item):
                yield (key,) + path
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for path in _paths(item):
                yield (index,) + path


def _replace(value, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return copy


@st.composite
def _body(draw, valid):
    choice = draw(st.sampled_from([0, 1, 2, 2, 2, 3, 3]))
    if choice == 0:
        return json.dumps(draw(HOSTILE)).encode()
    if choice == 1:
        return draw(st.binary(max_size=64))
    paths = list(_paths(valid))
    path = draw(st.sampled_from(paths))
    replaced = _replace(valid, path, draw(REPLACEMENT))
    if choice == 3 and isinstance(replaced, dict):
        # A hostile key instead of (or beside) a known one.
        replaced[draw(TEXT)] = draw(REPLACEMENT)
    return json.dumps(replaced).encode()


def _check(client, db, method, path, body=None, query=''):
    before = _snapshot(db) if method != 'GET' else None
    headers = client._headers('1.39', None)
    if body is not None:
        headers['Content-Type'] = 'application/json'
    resp = client.app.request(path + query, method=method, body=body or b'',
                              headers=headers, expect_errors=True)
    assert resp.status_int < 500, (method, path, query, body, resp.text)
    if resp.status_int >= 400:
        assert json.loads(resp.text)['errors'][0]['status'] == \
            resp.status_int
        if before is not None:
            assert _snapshot(db) == before, (method, path, body, resp.text)
    return resp


@pytest.mark.parametrize('endpoint', range(11))
@pytest.mark.backends('sqlite', 'postgresql')
def test_random_bodies_for_every_write(client, db, world, endpoint):
    method, path, valid = _writes(world)[endpoint]

    @SETTINGS
    @hypothesis.given(_body(valid))
    def run(body):
        _check(client, db, method, path, body)

    run()


SEGMENT = TEXT.map(lambda text: urllib.parse.quote(
    text.encode('utf-8', 'surrogatepass'), safe=''))


@pytest.mark.backends('sqlite', 'postgresql')
def test_random_path_segments(client, db, world):
    templates = [
        ('GET', '/resource_providers/%s'),
        ('DELETE', '/resource_providers/%s'),
        ('GET', '/resource_providers/%s/inventories/VCPU'),
        ('PUT', '/resource_providers/' + world['root'] + '/inventories/%s'),
        ('GET', '/resource_providers/%s/traits'),
        ('GET', '/resource_providers/%s/usages'),
        ('GET', '/allocations/%s'), ('DELETE', '/allocations/%s'),
        ('GET', '/resource_classes/%s'), ('PUT', '/resource_classes/%s'),
        ('DELETE', '/resource_classes/%s'), ('GET', '/traits/%s'),
        ('PUT', '/traits/%s'), ('DELETE', '/traits/%s'),
    ]

    @SETTINGS
    @hypothesis.given(st.sampled_from(templates), SEGMENT | st.sampled_from(
        ['%00', '%ED%A0%80', '%FF', 'CUSTOM_%00X']))
    def run(template, segment):
        method, path = template
        body = (b'{"total": 1, "resource_provider_generation": 2}'
                if method == 'PUT' and 'inventories' in path else None)
        _check(client, db, method, path % segment, body)

    run()


READS = ['/resource_providers', '/allocation_candidates', '/usages',
         '/traits', '/resource_classes']
QUERY_NAMES = st.sampled_from(
    ['name', 'uuid', 'member_of', 'resources', 'in_tree', 'required',
     'limit', 'group_policy', 'root_required', 'same_subtree', 'project_id',
     'user_id', 'consumer_type', 'associated', 'resources1', 'required_X',
     'member_of2', 'in_tree3']) | TEXT


@pytest.mark.backends('sqlite', 'postgresql')
def test_random_query_strings_for_every_read(client, db, world):
    values = TEXT | st.sampled_from(
        ['VCPU:1', 'VCPU:99999999999999999999', 'in:' + world['root'],
         '!CUSTOM_FAST', 'in:CUSTOM_FAST,\x00', '1', '-1', 'none',
         'isolate', world['root'], '%s,%s' % (world['root'], world['child']),
         'p', 'true', 'startswith:CUSTOM'])
    pairs = st.lists(st.tuples(QUERY_NAMES, values), max_size=5)

    @SETTINGS
    @hypothesis.given(st.sampled_from(READS), pairs)
    def run(path, query):
        encoded = '&'.join(
            '%s=%s' % (urllib.parse.quote(
                name.encode('utf-8', 'surrogatepass'), safe=''),
                urllib.parse.quote(value.encode('utf-8', 'surrogatepass'),
                                   safe=':,!'))
            for name, value in query)
        _check(client, db, 'GET', path, query='?' + encoded)

    run()
