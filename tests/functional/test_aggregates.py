"""GET/PUT /resource_providers/{uuid}/aggregates and aggregate storage."""

import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from placement.storage import aggregates as storage
from placement.storage import exceptions
from placement.storage import tables

AGG_1 = 'f918801a-5e54-4bee-9095-09a9d0c786b8'
AGG_2 = 'a893eb5c-e2a0-4251-ab26-f71d3b0cfc0b'
AGG_3 = '5f1d2e3c-0b5a-4b5e-9a3c-6d1f0e2b7c44'


def _new_provider(client, name='cn1'):
    return client.post('/resource_providers', json={'name': name}).json


def _url(provider):
    return '/resource_providers/%s/aggregates' % provider['uuid']


def _generation(client, provider):
    return client.get('/resource_providers/' + provider['uuid']).json[
        'generation']


def _put_1_19(client, provider, aggregates, generation, **kwargs):
    return client.put(_url(provider), json={
        'aggregates': aggregates,
        'resource_provider_generation': generation}, **kwargs)


# Microversion gate, content type, methods

@pytest.mark.parametrize('method', ['get', 'put'])
def test_not_found_before_1_1(client, method):
    rp = _new_provider(client)
    kwargs = {'json': []} if method == 'put' else {}
    resp = getattr(client, method)(_url(rp), version='1.0', status=404,
                                   **kwargs)
    assert resp.json['errors'][0]['title'] == 'Not Found'


def test_put_needs_a_json_body(client):
    rp = _new_provider(client)
    resp = client.put(_url(rp), params='[]', status=415,
                      headers={'Content-Type': 'text/plain'})
    assert 'use application/json' in resp.json['errors'][0]['detail']


def test_only_get_and_put_are_allowed(client):
    rp = _new_provider(client)
    resp = client.delete(_url(rp), status=405)
    assert resp.headers['Allow'] == 'GET, PUT'


# GET

def test_get_empty_list_with_generation_from_1_19(client):
    rp = _new_provider(client)
    assert client.get(_url(rp)).json == {
        'aggregates': [], 'resource_provider_generation': 0}
    assert client.get(_url(rp), version='1.18').json == {'aggregates': []}


def test_get_unknown_provider_is_404(client):
    resp = client.get('/resource_providers/%s/aggregates' % uuid.uuid4(),
                      status=404)
    assert 'No resource provider with uuid' in resp.json['errors'][0][
        'detail']


def test_cache_headers_from_1_15(client):
    rp = _new_provider(client)
    new = client.get(_url(rp), version='1.15')
    assert new.headers['Cache-Control'] == 'no-cache'
    assert new.headers['Last-Modified'].endswith(' GMT')
    old = client.get(_url(rp), version='1.14')
    assert 'Cache-Control' not in old.headers
    assert 'Last-Modified' not in old.headers


# PUT before 1.19: bare list, generation untouched

def test_put_list_form_replaces_without_bumping_generation(client):
    rp = _new_provider(client)
    resp = client.put(_url(rp), json=[AGG_1, AGG_2], version='1.1')
    assert resp.json == {'aggregates': [AGG_1, AGG_2]}
    assert 'Last-Modified' not in resp.headers
    resp = client.put(_url(rp), json=[AGG_2, AGG_3], version='1.18')
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers
    assert client.get(_url(rp), version='1.18').json == {
        'aggregates': [AGG_2, AGG_3]}
    assert _generation(client, rp) == 0


def test_put_object_form_is_rejected_before_1_19(client):
    rp = _new_provider(client)
    resp = _put_1_19(client, rp, [AGG_1], 0, version='1.18', status=400)
    assert 'JSON does not validate' in resp.json['errors'][0]['detail']


# PUT from 1.19: generation checked and bumped

def test_put_with_generation_bumps_it(client):
    rp = _new_provider(client)
    resp = _put_1_19(client, rp, [AGG_1, AGG_2], 0)
    assert resp.json == {'aggregates': [AGG_1, AGG_2],
                         'resource_provider_generation': 1}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert client.get(_url(rp)).json == {
        'aggregates': [AGG_1, AGG_2], 'resource_provider_generation': 1}
    # Even an unchanged list is a new view of the provider.
    assert _put_1_19(client, rp, [AGG_1, AGG_2], 1).json[
        'resource_provider_generation'] == 2
    assert _generation(client, rp) == 2


def test_stale_generation_is_409_and_changes_nothing(client):
    rp = _new_provider(client)
    _put_1_19(client, rp, [AGG_1], 0)
    resp = _put_1_19(client, rp, [], 0, status=409)
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.concurrent_update'
    assert "generation already changed" in error['detail']
    assert client.get(_url(rp)).json == {
        'aggregates': [AGG_1], 'resource_provider_generation': 1}


def test_generation_written_as_float_still_answers_an_integer(client):
    rp = _new_provider(client)
    resp = client.put(
        _url(rp), params='{"aggregates": [], '
        '"resource_provider_generation": 0.0}',
        headers={'Content-Type': 'application/json'})
    # Parsed, 1.0 == 1: the type is what a strict client would trip on.
    assert type(resp.json['resource_provider_generation']) is int


def test_list_form_is_rejected_from_1_19(client):
    rp = _new_provider(client)
    resp = client.put(_url(rp), json=[AGG_1], status=400)
    assert 'JSON does not validate' in resp.json['errors'][0]['detail']


@pytest.mark.parametrize('body, message', [
    ({'aggregates': [AGG_1]}, "'resource_provider_generation' is a required"),
    ({'resource_provider_generation': 0}, "'aggregates' is a required"),
    ({'aggregates': ['harry'], 'resource_provider_generation': 0},
     "'harry' is not a 'uuid'"),
    ({'aggregates': [AGG_1, AGG_1], 'resource_provider_generation': 0},
     'has non-unique elements'),
    ({'aggregates': [], 'resource_provider_generation': '0'},
     "'0' is not of type 'integer'"),
    ({'aggregates': [], 'resource_provider_generation': 0, 'x': 1},
     'Additional properties are not allowed'),
])
def test_invalid_bodies_are_400(client, body, message):
    rp = _new_provider(client)
    resp = client.put(_url(rp), json=body, status=400)
    detail = resp.json['errors'][0]['detail']
    assert 'JSON does not validate' in detail
    assert message in detail
    assert client.get(_url(rp)).json['resource_provider_generation'] == 0


def test_malformed_json_is_400(client):
    rp = _new_provider(client)
    resp = client.put(_url(rp), params='{"bad", "not json"}', status=400,
                      headers={'Content-Type': 'application/json'})
    assert 'Malformed JSON' in resp.json['errors'][0]['detail']


def test_unknown_provider_is_404_even_with_a_bad_body(client):
    url = '/resource_providers/%s/aggregates' % uuid.uuid4()
    client.put(url, json=[], status=404)
    client.put(url, json=['not-a-uuid'], version='1.1', status=404)


# What is stored

def test_replacing_keeps_shared_aggregates_and_drops_stale_ones(client, db):
    rp1 = _new_provider(client, 'rp1')
    rp2 = _new_provider(client, 'rp2')
    _put_1_19(client, rp1, [AGG_1, AGG_2], 0)
    _put_1_19(client, rp2, [AGG_2], 0)
    _put_1_19(client, rp1, [AGG_3, AGG_2], 1)
    assert client.get(_url(rp1)).json['aggregates'] == [AGG_2, AGG_3]
    assert client.get(_url(rp2)).json['aggregates'] == [AGG_2]
    with db.engine.connect() as conn:
        # One row per aggregate ever seen; an emptied one is kept.
        uuids = conn.execute(
            sa.select(tables.placement_aggregates.c.uuid)).scalars().all()
    assert sorted(uuids) == sorted([AGG_1, AGG_2, AGG_3])


def test_list_is_in_the_order_aggregates_were_first_seen(client):
    rp = _new_provider(client)
    _put_1_19(client, rp, [AGG_3, AGG_1, AGG_2], 0)
    assert client.get(_url(rp)).json['aggregates'] == [AGG_3, AGG_1, AGG_2]


def test_uuids_are_stored_as_written_unless_too_long(client):
    rp = _new_provider(client)
    upper = AGG_1.upper()
    braced = '{%s}' % AGG_2
    resp = client.put(_url(rp), json=[upper, braced], version='1.1')
    assert resp.json == {'aggregates': [upper, braced]}
    assert client.get(_url(rp), version='1.1').json == {
        'aggregates': [upper, AGG_2]}


# Policy

@pytest.mark.parametrize('method', ['get', 'put'])
def test_non_admin_is_forbidden_before_the_provider_is_looked_up(
        client, method):
    kwargs = {'json': {'aggregates': []}} if method == 'put' else {}
    client.token = 'user'
    resp = getattr(client, method)(
        '/resource_providers/%s/aggregates' % uuid.uuid4(), status=403,
        **kwargs)
    assert ('placement:resource_providers:aggregates:%s'
            % ('list' if method == 'get' else 'update')
            in resp.json['errors'][0]['detail'])


def test_service_role_may_read_and_write(client):
    rp = _new_provider(client)
    client.token = 'user:service_project'
    headers = {'X-Roles': 'service'}
    _put_1_19(client, rp, [AGG_1], 0, headers=headers)
    assert client.get(_url(rp), headers=headers).json['aggregates'] == [
        AGG_1]


# Storage functions shared with member_of filtering

def test_aggregate_ids_by_uuid_omits_unknown(client, db):
    rp = _new_provider(client)
    _put_1_19(client, rp, [AGG_1, AGG_2], 0)
    found = db.read(storage.aggregate_ids_by_uuid, [AGG_1, AGG_3, AGG_2])
    assert set(found) == {AGG_1, AGG_2}
    assert found[AGG_1] != found[AGG_2]
    assert db.read(storage.aggregate_ids_by_uuid, []) == {}


def test_get_aggregate_uuids_by_provider_id(client, db):
    rp = _new_provider(client)
    _put_1_19(client, rp, [AGG_2, AGG_1], 0)
    provider, uuids = db.read(storage.get_provider_aggregates, rp['uuid'])
    assert uuids == [AGG_2, AGG_1]
    assert db.read(storage.get_aggregate_uuids, provider['id']) == uuids


def test_set_for_unknown_provider_is_not_found(db):
    with pytest.raises(exceptions.NotFound):
        db.write(storage.set_provider_aggregates, str(uuid.uuid4()), [])


def test_losing_the_race_to_create_an_aggregate_reuses_the_winners(
        client, db, monkeypatch):
    """The aggregate appears between our lookup and our INSERT."""
    winner = _new_provider(client, 'winner')
    loser = _new_provider(client, 'loser')
    _put_1_19(client, winner, [AGG_1], 0)
    real_lookup = storage.aggregate_ids_by_uuid
    misses = []

    def lookup_that_misses_once(conn, uuids):
        if not misses:
            misses.append(uuids)
            return {}
        return real_lookup(conn, uuids)

    monkeypatch.setattr(storage, 'aggregate_ids_by_uuid',
                        lookup_that_misses_once)
    generation = db.write(storage.set_provider_aggregates, loser['uuid'],
                          [AGG_1, AGG_2], 0)
    monkeypatch.undo()
    assert misses == [[AGG_1]]
    assert generation == 1
    assert client.get(_url(loser)).json['aggregates'] == [AGG_1, AGG_2]
    assert len(db.read(storage.aggregate_ids_by_uuid, [AGG_1])) == 1


def _write_while_another_transaction_is_open(db, first_write, second_write):
    """Run ``first_write`` in a transaction left open while
    ``second_write`` runs in a thread, then commit the first.

    Returns what ``second_write`` returned or raised, as a dict.
    """
    outcome = {}

    def write():
        try:
            outcome['result'] = db.write(second_write)
        except Exception as exc:  # the caller asserts on it
            outcome['error'] = exc

    with db.engine.connect() as other:
        other = other.execution_options(placement_write=True)
        other.begin()
        first_write(other)
        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.5)
        other.commit()
        writer.join(30)
    return outcome


def test_concurrent_creation_of_the_same_aggregate(client, db):
    """Another transaction inserts the aggregate and commits while our
    write is under way (or waiting for it); ours still succeeds."""
    rp = _new_provider(client)
    outcome = _write_while_another_transaction_is_open(
        db,
        lambda conn: conn.execute(tables.placement_aggregates.insert().values(
            uuid=AGG_1, created_at=tables.utcnow())),
        lambda conn: storage.set_provider_aggregates(
            conn, rp['uuid'], [AGG_1], 0))
    assert outcome == {'result': 1}
    assert client.get(_url(rp)).json['aggregates'] == [AGG_1]


def test_concurrent_list_writes_to_one_provider_serialise(client, db):
    """Without a generation two writers may race on the same provider; the
    second waits for the first and then finds its memberships."""
    rp = _new_provider(client)
    outcome = _write_while_another_transaction_is_open(
        db,
        lambda conn: storage.set_provider_aggregates(
            conn, rp['uuid'], [AGG_1]),
        lambda conn: storage.set_provider_aggregates(
            conn, rp['uuid'], [AGG_1, AGG_2]))
    assert outcome == {'result': 0}
    assert client.get(_url(rp)).json == {
        'aggregates': [AGG_1, AGG_2], 'resource_provider_generation': 0}


def test_concurrent_writes_with_one_generation_let_one_win(client, db):
    rp = _new_provider(client)
    outcome = _write_while_another_transaction_is_open(
        db,
        lambda conn: storage.set_provider_aggregates(
            conn, rp['uuid'], [AGG_1], 0),
        lambda conn: storage.set_provider_aggregates(
            conn, rp['uuid'], [AGG_2], 0))
    assert isinstance(outcome['error'], exceptions.ConcurrentUpdate)
    assert client.get(_url(rp)).json == {
        'aggregates': [AGG_1], 'resource_provider_generation': 1}
