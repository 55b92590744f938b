"""GET /resource_providers: filters, their microversions and their errors.

Traits, aggregates, inventories and allocations are written straight into
the tables, so these tests depend on no other endpoint.
"""

import uuid

import pytest
import sqlalchemy as sa

from placement.storage import providers_core
from placement.storage import tables

AGG_A = 'a0a0a0a0-0000-4000-8000-00000000000a'
AGG_B = 'b0b0b0b0-0000-4000-8000-00000000000b'
AGG_C = 'c0c0c0c0-0000-4000-8000-00000000000c'
UNKNOWN_UUID = 'd67370b5-4dc0-470d-a4fa-85e8e89abc6c'


# -- seeding ---------------------------------------------------------------

def new_provider(client, name, parent=None):
    body = {'name': name}
    if parent is not None:
        body['parent_provider_uuid'] = parent['uuid']
    return client.post('/resource_providers', json=body).json


def _provider_id(conn, provider):
    return providers_core.get_by_uuid(conn, provider['uuid'])['id']


def _id_of(conn, table, name):
    return conn.scalar(sa.select(table.c.id).where(table.c.name == name))


def give_traits(db, provider, *names):
    def write(conn):
        for name in names:
            trait_id = _id_of(conn, tables.traits, name)
            if trait_id is None:
                trait_id = conn.execute(tables.traits.insert().values(
                    name=name)).inserted_primary_key[0]
            conn.execute(tables.resource_provider_traits.insert().values(
                trait_id=trait_id,
                resource_provider_id=_provider_id(conn, provider)))
    db.write(write)


def join_aggregates(db, provider, *aggregate_uuids):
    aggs = tables.placement_aggregates

    def write(conn):
        for aggregate_uuid in aggregate_uuids:
            agg_id = conn.scalar(sa.select(aggs.c.id).where(
                aggs.c.uuid == aggregate_uuid))
            if agg_id is None:
                agg_id = conn.execute(aggs.insert().values(
                    uuid=aggregate_uuid)).inserted_primary_key[0]
            conn.execute(tables.resource_provider_aggregates.insert().values(
                resource_provider_id=_provider_id(conn, provider),
                aggregate_id=agg_id))
    db.write(write)


def add_inventory(db, provider, resource_class, total, reserved=0,
                  min_unit=1, max_unit=None, step_size=1,
                  allocation_ratio=1.0):
    def write(conn):
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=_provider_id(conn, provider),
            resource_class_id=_id_of(conn, tables.resource_classes,
                                     resource_class),
            total=total, reserved=reserved, min_unit=min_unit,
            max_unit=total if max_unit is None else max_unit,
            step_size=step_size, allocation_ratio=allocation_ratio))
    db.write(write)


def allocate(db, provider, resource_class, used):
    def write(conn):
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=_provider_id(conn, provider),
            consumer_id=str(uuid.uuid4()),
            resource_class_id=_id_of(conn, tables.resource_classes,
                                     resource_class),
            used=used))
    db.write(write)


def names(client, query, version='1.39', **kwargs):
    resp = client.get('/resource_providers' + query, version=version,
                      **kwargs)
    return [rp['name'] for rp in resp.json['resource_providers']]


def error(client, query, version='1.39', status=400):
    resp = client.get('/resource_providers' + query, version=version,
                      status=status)
    return resp.json['errors'][0]['detail']


# -- plain listing ---------------------------------------------------------

def test_empty_list_has_cache_headers_from_1_15(client):
    resp = client.get('/resource_providers', version='1.15')
    assert resp.json == {'resource_providers': []}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert resp.headers['Last-Modified'].endswith(' GMT')
    old = client.get('/resource_providers', version='1.14')
    assert 'Cache-Control' not in old.headers
    assert 'Last-Modified' not in old.headers


def test_list_is_in_creation_order_and_serialized_per_version(client):
    for name in ('zeta', 'alpha', 'mu'):
        new_provider(client, name)
    assert names(client, '') == ['zeta', 'alpha', 'mu']
    old = client.get('/resource_providers', version='1.10').json
    first = old['resource_providers'][0]
    assert 'root_provider_uuid' not in first
    assert len(first['links']) == 5


@pytest.mark.parametrize('query', ['', '?resources=VCPU:1'])
def test_a_listing_encoded_in_batches_and_streamed_is_the_same(
        client, monkeypatch, query):
    """A listing from the state is encoded a batch at a time, and a large
    one sent in pieces: with batches of two and everything streamed, the
    body is the one encoded in one go."""
    from placement import json_encoding
    from placement.handlers import json_pieces
    for n in range(5):
        rp = new_provider(client, 'rp%d' % n)
        client.put('/resource_providers/%s/inventories' % rp['uuid'],
                   json={'resource_provider_generation': 0,
                         'inventories': {'VCPU': {'total': 4}}})
    whole = client.get('/resource_providers' + query)
    monkeypatch.setattr(json_encoding, 'ENCODE_BATCH', 2)
    monkeypatch.setattr(json_pieces, '_JOINED_AT_MOST', 10)
    batched = client.get('/resource_providers' + query)
    assert len(whole.json['resource_providers']) == 5
    assert batched.json == whole.json
    assert int(batched.headers['Content-Length']) == len(batched.body)
    assert batched.headers['Last-Modified'] == whole.headers['Last-Modified']


def test_a_large_listing_from_sql_is_streamed_then_the_heap_trimmed(
        client, monkeypatch):
    """A listing SQL answers (a name filter here; any listing when no
    state reader answers in time) goes out as the state's do: a large
    one in pieces, after which the heap's free pages go back to the
    system (at 100,000 providers its rows left a worker 34 MB larger)."""
    from placement.handlers import json_pieces
    new_provider(client, 'one')
    whole = client.get('/resource_providers?name=one')
    trims = []
    monkeypatch.setattr(json_pieces, '_JOINED_AT_MOST', 10)
    monkeypatch.setattr(json_pieces.allocator, 'give_back_free_memory',
                        lambda: trims.append(1))
    streamed = client.get('/resource_providers?name=one')
    assert streamed.json == whole.json
    assert [p['name'] for p in streamed.json['resource_providers']] == ['one']
    assert int(streamed.headers['Content-Length']) == len(streamed.body)
    assert trims == [1]


def test_last_modified_is_the_newest_change(client):
    new_provider(client, 'one')
    two = new_provider(client, 'two')
    resp = client.get('/resource_providers', version='1.15')
    shown = client.get('/resource_providers/' + two['uuid'], version='1.15')
    assert resp.headers['Last-Modified'] == shown.headers['Last-Modified']


def test_name_and_uuid_filters(client):
    one = new_provider(client, 'one')
    new_provider(client, 'two')
    assert names(client, '?name=two') == ['two']
    assert names(client, '?uuid=' + one['uuid']) == ['one']
    assert names(client, '?name=nope') == []
    assert names(client, '?uuid=' + UNKNOWN_UUID) == []
    # An empty name filters nothing, as upstream.
    assert names(client, '?name=') == ['one', 'two']


def test_repeated_plain_parameter_uses_the_last(client):
    new_provider(client, 'one')
    new_provider(client, 'two')
    assert names(client, '?name=one&name=two') == ['two']


def test_query_decoding_plus_percent_and_semicolon(client):
    new_provider(client, 'a b\u2603')
    new_provider(client, 'other')
    assert names(client, '?name=a+b%E2%98%83') == ['a b\u2603']
    assert names(client, '?name=x;name=other') == ['other']


def test_invalid_utf8_in_query_is_400(client):
    assert "Invalid query string parameters: 'utf-8' codec can't decode" in (
        error(client, '?name=%ff'))


@pytest.mark.parametrize('value', [
    'spameggs', '', 'd67370b54dc0470da4fa85e8e89abc6c'])
def test_uuid_filter_must_be_a_dashed_uuid(client, value):
    detail = error(client, '?uuid=' + value)
    assert 'Invalid query string parameters' in detail
    assert "Failed validating 'format'" in detail


def test_unknown_parameter_is_400(client):
    detail = error(client, '?spam=eggs')
    assert 'Invalid query string parameters' in detail
    assert "Additional properties are not allowed ('spam' was unexpected)" \
        in detail


@pytest.mark.parametrize('query,first_version', [
    ('?member_of=' + AGG_A, '1.3'),
    ('?resources=VCPU:1', '1.4'),
    ('?in_tree=' + UNKNOWN_UUID, '1.14'),
    ('?required=HW_CPU_X86_SGX', '1.18'),
])
def test_filters_appear_with_their_microversion(client, query, first_version):
    major, minor = first_version.split('.')
    before = '%s.%d' % (major, int(minor) - 1)
    assert 'Additional properties are not allowed' in error(
        client, query, version=before)
    client.get('/resource_providers' + query, version=first_version)


def test_list_needs_policy_before_query_validation(client):
    client.token = 'user'
    resp = client.get('/resource_providers?spam=eggs', status=403)
    assert resp.json['errors'][0]['title'] == 'Forbidden'


# -- in_tree ---------------------------------------------------------------

def test_in_tree_lists_the_whole_tree_from_any_member(client):
    root = new_provider(client, 'root')
    child = new_provider(client, 'child', parent=root)
    new_provider(client, 'grandchild', parent=child)
    new_provider(client, 'elsewhere')
    tree = ['root', 'child', 'grandchild']
    assert names(client, '?in_tree=' + child['uuid']) == tree
    assert names(client, '?in_tree=' + root['uuid']) == tree
    assert names(client, '?in_tree=%s&name=child' % root['uuid']) == [
        'child']


def test_in_tree_unknown_is_empty_even_with_unknown_names(client):
    new_provider(client, 'root')
    assert names(client, '?in_tree=%s&required=CUSTOM_NOPE'
                 '&resources=NOPE:1' % UNKNOWN_UUID) == []


def test_in_tree_must_be_a_uuid(client):
    assert 'Invalid query string parameters' in error(
        client, '?in_tree=not-a-uuid')


# -- member_of -------------------------------------------------------------

@pytest.fixture
def aggregated(client, db):
    """one: A, C; two: A, B; three: none."""
    one = new_provider(client, 'one')
    two = new_provider(client, 'two')
    new_provider(client, 'three')
    join_aggregates(db, one, AGG_A, AGG_C)
    join_aggregates(db, two, AGG_A, AGG_B)


@pytest.mark.parametrize('query,expected', [
    ('?member_of=' + AGG_B, ['two']),
    ('?member_of=in:%s,%s' % (AGG_B, AGG_C), ['one', 'two']),
    ('?member_of=' + UNKNOWN_UUID, []),
    ('?member_of=in:%s,%s' % (UNKNOWN_UUID, AGG_C), ['one']),
    ('?member_of=%s&member_of=%s' % (AGG_A, AGG_B), ['two']),
    ('?member_of=%s&member_of=in:%s,%s' % (AGG_A, AGG_B, AGG_C),
     ['one', 'two']),
    ('?member_of=%s&member_of=%s' % (AGG_B, AGG_C), []),
    ('?member_of=!' + AGG_B, ['one', 'three']),
    ('?member_of=!in:%s,%s' % (AGG_B, AGG_C), ['three']),
    ('?member_of=!%s&member_of=!%s' % (AGG_B, AGG_C), ['three']),
    ('?member_of=!%s&member_of=%s' % (AGG_B, AGG_A), ['one']),
    ('?member_of=!%s&member_of=%s' % (AGG_C, AGG_C), []),
    ('?member_of=!' + UNKNOWN_UUID, ['one', 'two', 'three']),
])
def test_member_of(client, aggregated, query, expected):
    assert names(client, query) == expected


def test_member_of_any_spelling_of_a_uuid_is_valid(client, aggregated):
    # Only canonical uuids are stored, so other spellings match nothing.
    assert names(client, '?member_of=' + AGG_B.replace('-', '')) == []


def test_repeated_member_of_needs_1_24(client, aggregated):
    query = '?member_of=%s&member_of=%s' % (AGG_A, AGG_B)
    assert 'Multiple member_of parameters are not supported' in error(
        client, query, version='1.23')
    # One parameter is fine at 1.3, and so is in:.
    assert names(client, '?member_of=in:%s,%s' % (AGG_B, AGG_C),
                 version='1.3') == ['one', 'two']


@pytest.mark.parametrize('value', ['!' + AGG_B, '!in:%s,%s' % (AGG_B, AGG_C)])
def test_forbidden_member_of_needs_1_32(client, aggregated, value):
    assert ('Forbidden member_of parameters are not supported in the '
            'specified microversion') in error(
        client, '?member_of=' + value, version='1.31')


@pytest.mark.parametrize('value,bad', [
    ('not+a+uuid', 'not a uuid'),
    ('!(^o^)', '(^o^)'),
    ('in:%s,!%s' % (AGG_A, AGG_B), '!' + AGG_B),
    ('in:', ''),
])
def test_member_of_needs_uuids(client, value, bad):
    assert ("Invalid query string parameters: Expected 'member_of' "
            "parameter to contain valid UUID(s). Got: %s" % bad) in error(
        client, '?member_of=' + value)


def test_member_of_list_needs_in_prefix(client):
    value = '%s,%s' % (AGG_A, AGG_B)
    assert ("Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. Got: %s"
            % value) in error(client, '?member_of=' + value)


# -- required traits -------------------------------------------------------

@pytest.fixture
def traited(client, db):
    """left: FOO, SGX; middle: SGX, SSD; right: SSD; bare: nothing."""
    for name, traits in (('left', ['CUSTOM_FOO', 'HW_CPU_X86_SGX']),
                         ('middle', ['HW_CPU_X86_SGX', 'STORAGE_DISK_SSD']),
                         ('right', ['STORAGE_DISK_SSD']),
                         ('bare', [])):
        give_traits(db, new_provider(client, name), *traits)


@pytest.mark.parametrize('query,expected', [
    ('?required=HW_CPU_X86_SGX', ['left', 'middle']),
    ('?required=HW_CPU_X86_SGX,STORAGE_DISK_SSD', ['middle']),
    ('?required=CUSTOM_FOO,STORAGE_DISK_SSD', []),
    ('?required=HW_CPU_X86_VMX', []),
    ('?required=!HW_CPU_X86_SGX', ['right', 'bare']),
    ('?required=!HW_CPU_X86_SGX,!STORAGE_DISK_SSD', ['bare']),
    ('?required=STORAGE_DISK_SSD,!HW_CPU_X86_SGX', ['right']),
    ('?required=!!!CUSTOM_FOO', ['middle', 'right', 'bare']),
    ('?required=in:CUSTOM_FOO,STORAGE_DISK_SSD', ['left', 'middle', 'right']),
    ('?required=in:CUSTOM_FOO,STORAGE_DISK_SSD&required=HW_CPU_X86_SGX',
     ['left', 'middle']),
    ('?required=in:CUSTOM_FOO,STORAGE_DISK_SSD&required=!CUSTOM_FOO',
     ['middle', 'right']),
    ('?required=in:CUSTOM_FOO,HW_CPU_X86_SGX'
     '&required=in:STORAGE_DISK_SSD,HW_CPU_X86_VMX', ['middle']),
])
def test_required(client, traited, query, expected):
    assert names(client, query) == expected


def test_before_1_39_the_last_required_counts(client, traited):
    query = '?required=CUSTOM_FOO&required=STORAGE_DISK_SSD'
    assert names(client, query, version='1.38') == ['middle', 'right']
    assert names(client, query) == []


def test_required_combines_with_other_filters(client, db, traited):
    assert names(client, '?required=STORAGE_DISK_SSD&name=right') == [
        'right']


def test_forbidden_traits_need_1_22(client, traited):
    assert ("Invalid query string parameters: Expected 'required' parameter "
            "value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
            "Got: !STORAGE_DISK_SSD") in error(
        client, '?required=!STORAGE_DISK_SSD', version='1.21')


def test_any_traits_need_1_39(client, traited):
    assert ("The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
            "since microversion 1.39. Got: in:CUSTOM_FOO") in error(
        client, '?required=in:CUSTOM_FOO', version='1.38')


@pytest.mark.parametrize('value,version,expected', [
    ('', '1.39', 'HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: '),
    ('', '1.21', 'HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: '),
    ('STORAGE_DISK_SSD,,CUSTOM_FOO', '1.39',
     'HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: '
     'STORAGE_DISK_SSD,,CUSTOM_FOO'),
    ('!', '1.22', 'HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: !'),
    ('in:CUSTOM_FOO,', '1.39',
     'in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: '
     'in:CUSTOM_FOO,'),
])
def test_required_empty_trait(client, value, version, expected):
    assert ("Invalid query string parameters: Expected 'required' "
            "parameter value of the form: " + expected) in error(
        client, '?required=' + value, version=version)


def test_any_traits_cannot_be_forbidden(client):
    assert ("Invalid query string parameters: The format "
            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
            "traits. Got: in:CUSTOM_FOO,!CUSTOM_BAR") in error(
        client, '?required=in:CUSTOM_FOO,!CUSTOM_BAR')


@pytest.mark.parametrize('value', [
    'STORAGE_DISK_SSD,CUSTOM_BOGUS', '!CUSTOM_BOGUS',
    'in:CUSTOM_BOGUS,STORAGE_DISK_SSD'])
def test_unknown_trait_is_400(client, traited, value):
    assert ('Invalid trait(s) in "required" parameter: '
            'No such trait(s): CUSTOM_BOGUS.') in error(
        client, '?required=' + value)


def test_unknown_forbidden_trait_after_empty_required_match(client, traited):
    # Upstream stops at "no provider has these traits" before it looks
    # the forbidden ones up.
    assert names(client, '?required=CUSTOM_FOO,STORAGE_DISK_SSD,'
                 '!CUSTOM_BOGUS') == []
    assert 'No such trait(s): CUSTOM_BOGUS.' in error(
        client, '?required=CUSTOM_FOO,!CUSTOM_BOGUS')


# -- resources -------------------------------------------------------------

@pytest.fixture
def stocked(client, db):
    """Inventories shaped to exercise every part of the capacity check."""
    disk = new_provider(client, 'disk')
    add_inventory(db, disk, 'DISK_GB', total=2048, reserved=48,
                  min_unit=10, max_unit=1000, step_size=10)
    allocate(db, disk, 'DISK_GB', 500)
    allocate(db, disk, 'DISK_GB', 500)
    cpu = new_provider(client, 'cpu')
    add_inventory(db, cpu, 'VCPU', total=8, reserved=2, max_unit=8,
                  allocation_ratio=2.0)
    add_inventory(db, cpu, 'MEMORY_MB', total=1024)
    allocate(db, cpu, 'VCPU', 3)
    new_provider(client, 'empty')
    return disk, cpu


@pytest.mark.parametrize('query,expected', [
    # disk: (2048 - 48) * 1.0 - 1000 used = 1000 left; units 10..1000 by 10
    ('?resources=DISK_GB:1000', ['disk']),
    ('?resources=DISK_GB:10', ['disk']),
    ('?resources=DISK_GB:5', []),         # below min_unit
    ('?resources=DISK_GB:1010', []),      # above max_unit and capacity
    ('?resources=DISK_GB:15', []),        # not a multiple of step_size
    # cpu: (8 - 2) * 2.0 - 3 used = 9 left, max_unit 8
    ('?resources=VCPU:8', ['cpu']),
    ('?resources=VCPU:9', []),
    ('?resources=VCPU:8,MEMORY_MB:1024', ['cpu']),
    ('?resources=VCPU:1,DISK_GB:10', []),
    ('?resources=SRIOV_NET_VF:1', []),    # known class, no inventory
    ('?resources=VCPU:99999999999999999999', []),
])
def test_resources_capacity(client, stocked, query, expected):
    assert names(client, query) == expected


def test_usage_counts_only_for_its_class_and_provider(client, db, stocked):
    disk, cpu = stocked
    allocate(db, cpu, 'MEMORY_MB', 1000)
    assert names(client, '?resources=MEMORY_MB:24') == ['cpu']
    assert names(client, '?resources=MEMORY_MB:25') == []
    assert names(client, '?resources=DISK_GB:1000') == ['disk']


def test_resources_combine_with_aggregates_and_traits(client, db, stocked):
    disk, cpu = stocked
    join_aggregates(db, cpu, AGG_A)
    give_traits(db, disk, 'STORAGE_DISK_SSD')
    assert names(client, '?resources=VCPU:1&member_of=' + AGG_A) == ['cpu']
    assert names(client, '?resources=DISK_GB:10&member_of=' + AGG_A) == []
    assert names(client, '?resources=DISK_GB:10'
                 '&required=STORAGE_DISK_SSD') == ['disk']


@pytest.mark.parametrize('value,expected', [
    ('', 'Badly formed resources parameter. Expected resources query '
         'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. '
         'Got: empty string.'),
    ('VCPU:1,', 'Got: .'),
    ('VCPU', 'Got: VCPU.'),
    ('VCPU:1:2', 'Got: VCPU:1:2.'),
    ('VCPU:one', 'Requested resource VCPU expected positive integer '
                 'amount. Got: one.'),
    ('VCPU:-1', 'Requested resource VCPU requires amount >= 1. Got: -1.'),
    ('VCPU:0', 'Requested resource VCPU requires amount >= 1. Got: 0.'),
])
def test_resources_format_errors(client, value, expected):
    assert expected in error(client, '?resources=' + value)


def test_unknown_resource_class_is_400(client, stocked):
    assert ('Invalid resource class in resources parameter: '
            'No such resource class CUSTOM_NOPE.') in error(
        client, '?resources=VCPU:1,CUSTOM_NOPE:1')


def test_empty_resource_class_name_is_unknown(client, stocked):
    assert ('Invalid resource class in resources parameter: '
            'No such resource class .') in error(client, '?resources=:1')


@pytest.mark.parametrize('query', [
    '&member_of=' + UNKNOWN_UUID,
    '&required=HW_CPU_X86_VMX',
])
def test_unknown_resource_class_behind_an_empty_filter(client, stocked,
                                                       query):
    assert names(client, '?resources=CUSTOM_NOPE:1' + query) == []


def test_unknown_resource_class_behind_a_matching_filter(client, db,
                                                         stocked):
    disk, _ = stocked
    join_aggregates(db, disk, AGG_A)
    assert 'No such resource class CUSTOM_NOPE.' in error(
        client, '?resources=CUSTOM_NOPE:1&member_of=' + AGG_A)
