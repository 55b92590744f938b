"""nova-compute's periodic reads of its own provider, answered from memory.

``GET /resource_providers/{uuid}/usages``, ``.../traits``,
``.../aggregates`` and ``GET /resource_providers?in_tree=`` come from the
in-memory state (``candidates.provider_reads``, ``candidates.listing``).
Each answer must equal what SQL answers at that moment, whoever wrote
last: this process, another one, or SQL run by hand.
"""

import uuid as uuidlib

import pytest
import sqlalchemy as sa
import webtest

from placement import app as placement_app
from placement.state import kept_answers
from placement.state import listing
from placement.state import snapshot
from placement.storage import engine
from placement.storage import resource_providers
from placement.storage import traits
from placement.storage import usages
from placement.storage import aggregates
from tests.conftest import Client

NAMESPACE = uuidlib.UUID('8f3a3f8e-2b1c-4a86-9a57-4f1d2c7e9b10')
AGG1 = str(uuidlib.uuid5(NAMESPACE, 'aggregate 1'))
AGG2 = str(uuidlib.uuid5(NAMESPACE, 'aggregate 2'))
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))


def _uuid(*parts):
    return str(uuidlib.uuid5(NAMESPACE, '/'.join(parts)))


@pytest.fixture
def host(client):
    """A compute node with a child, inventory, traits, two aggregates
    (added in the order that is not their uuids' order) and a server."""
    root = client.post('/resource_providers', json={
        'name': 'cn', 'uuid': _uuid('cn')}).json['uuid']
    client.post('/resource_providers', json={
        'name': 'numa', 'uuid': _uuid('numa'),
        'parent_provider_uuid': root})
    client.put('/resource_providers/%s/inventories' % root, json={
        'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096},
            'DISK_GB': {'total': 100}}})
    client.put('/traits/CUSTOM_Z')
    client.put('/resource_providers/%s/traits' % root, json={
        'resource_provider_generation': 1,
        'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_Z']})
    client.put('/resource_providers/%s/aggregates' % root, json={
        'resource_provider_generation': 2,
        'aggregates': sorted([AGG1, AGG2], reverse=True)})
    client.put('/allocations/' + _uuid('server'), json={
        'allocations': {root: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    return root


def _from_sql(db, uuid):
    """What SQL says, shaped as the API answers."""
    def read(conn):
        provider = resource_providers.providers_core.get_by_uuid(conn, uuid)
        tree = resource_providers.list_providers(
            conn, resource_providers.Filters(in_tree=uuid))
        return {
            'usages': {'resource_provider_generation': provider['generation'],
                       'usages': usages.for_provider(conn, provider['id'])},
            'traits': {'resource_provider_generation': provider['generation'],
                       'traits': [t['name'] for t in
                                  traits.provider_traits(conn, uuid)[1]]},
            'aggregates': {
                'resource_provider_generation': provider['generation'],
                'aggregates': aggregates.get_aggregate_uuids(
                    conn, provider['id'])},
            'in_tree': sorted((p['uuid'], p['name'], p['generation'])
                              for p in tree),
        }
    return db.read(read)


def _from_api(client, uuid):
    path = '/resource_providers/%s/' % uuid
    listed = client.get('/resource_providers?in_tree=' + uuid).json
    return {
        'usages': client.get(path + 'usages').json,
        'traits': client.get(path + 'traits').json,
        'aggregates': client.get(path + 'aggregates').json,
        'in_tree': sorted((p['uuid'], p['name'], p['generation'])
                          for p in listed['resource_providers']),
    }


def test_answers_equal_sql_and_need_no_query_of_their_own(
        client, db, host, monkeypatch):
    expected = _from_sql(db, host)
    assert _from_api(client, host) == expected
    assert expected['usages']['usages'] == {
        'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 0}
    reads = []
    original = engine.Database.run
    monkeypatch.setattr(engine.Database, 'run', lambda self, fn, *a, **k: (
        reads.append(fn), original(self, fn, *a, **k))[1])
    _from_api(client, host)
    # Only the change log's checks (the state's, the kept answers'),
    # where they are not one statement outside a transaction already
    # (PostgreSQL): never a query per answer.
    log_checks = (snapshot.refresh, kept_answers.KeptAnswers._catch_up)
    assert all(getattr(fn, '__func__', fn) in log_checks
               for fn in reads), reads


def test_writes_of_another_process_are_seen_at_once(
        client, db, conf, database_url, host):
    other_db = engine.Database(engine.create_engine(database_url))
    other = Client(webtest.TestApp(
        placement_app.build_app(conf, other_db, prepare=False)))
    _from_api(client, host)     # the state is read
    generation = other.get(
        '/resource_providers/%s' % host).json['generation']
    other.put('/resource_providers/%s/traits' % host, json={
        'resource_provider_generation': generation, 'traits': []})
    other.put('/resource_providers/%s/aggregates' % host, json={
        'resource_provider_generation': generation + 1,
        'aggregates': [AGG1]})
    other.delete('/allocations/' + _uuid('server'))
    other.post('/resource_providers', json={
        'name': 'numa2', 'parent_provider_uuid': host})
    assert _from_api(client, host) == _from_sql(db, host)
    other_db.dispose()


def test_sql_run_by_hand_is_seen_at_once(client, db, database_url, host):
    _from_api(client, host)     # the state is read
    foreign = sa.create_engine(database_url)
    with foreign.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE resource_providers SET generation = generation + 5, "
            "name = 'renamed' WHERE uuid = '%s'" % host)
        conn.exec_driver_sql('UPDATE allocations SET used = used + 1')
        conn.exec_driver_sql('DELETE FROM resource_provider_traits')
    foreign.dispose()
    answered = _from_api(client, host)
    assert answered == _from_sql(db, host)
    assert answered['traits']['traits'] == []
    assert answered['usages']['usages']['VCPU'] == 3


def test_an_unknown_provider_is_answered_as_sql_does(client, host):
    missing = _uuid('missing')
    for relation in ('usages', 'traits', 'aggregates'):
        response = client.get('/resource_providers/%s/%s'
                              % (missing, relation), status=404)
        assert missing in response.json['errors'][0]['detail']
    assert client.get('/resource_providers?in_tree=' + missing).json == {
        'resource_providers': []}


@pytest.mark.backends('mysql')
def test_mysql_finds_a_provider_whatever_the_case_of_its_uuid(client, host):
    """MySQL compares uuids case-insensitively, and so upstream there:
    a uuid the state does not know is asked of SQL."""
    shouted = host.upper()
    assert client.get('/resource_providers/%s/usages' % shouted).json[
        'usages']['VCPU'] == 2
    assert len(client.get('/resource_providers?in_tree=' + shouted).json[
        'resource_providers']) == 2


def test_traits_last_modified_is_the_newest_traits(client, db, host):
    answered = client.get('/resource_providers/%s/traits' % host,
                          version='1.15')
    rows = db.read(lambda conn: traits.provider_traits(conn, host)[1])
    newest = max(row['updated_at'] or row['created_at'] for row in rows)
    assert answered.headers['Last-Modified'] == newest.strftime(
        '%a, %d %b %Y %H:%M:%S GMT')


# -- listings with filters ---------------------------------------------------

LISTINGS = [
    ('1.18', 'member_of=in:{agg1},{agg2}&required=MISC_SHARES_VIA_AGGREGATE'),
    ('1.18', 'member_of={agg1}&required=HW_CPU_X86_AVX2'),
    ('1.22', 'required=!CUSTOM_Z'),
    ('1.32', 'member_of=!{agg1}'),
    ('1.39', 'required=in:HW_CPU_X86_AVX2,CUSTOM_Z&resources=VCPU:1'),
    ('1.14', 'in_tree={cn}&resources=VCPU:15'),
    ('1.14', 'in_tree={cn}&resources=VCPU:1,MEMORY_MB:1024'),
    ('1.18', 'required=CUSTOM_UNKNOWN'),
    ('1.22', 'required=HW_CPU_X86_AVX2,!CUSTOM_UNKNOWN'),
    ('1.18', 'member_of=in:{unknown}'),
    ('1.18', 'resources=CUSTOM_UNKNOWN:1&required=HW_CPU_X86_AVX2'),
    ('1.14', 'resources=CUSTOM_UNKNOWN:1&in_tree={unknown}'),
]


@pytest.fixture
def sharing(client, host):
    """Besides the host, a storage pool sharing through the first
    aggregate and a bare provider."""
    pool = client.post('/resource_providers', json={
        'name': 'pool', 'uuid': _uuid('pool')}).json['uuid']
    client.put('/resource_providers/%s/inventories' % pool, json={
        'resource_provider_generation': 0,
        'inventories': {'DISK_GB': {'total': 1000}}})
    client.put('/resource_providers/%s/traits' % pool, json={
        'resource_provider_generation': 1,
        'traits': ['MISC_SHARES_VIA_AGGREGATE']})
    client.put('/resource_providers/%s/aggregates' % pool, json={
        'resource_provider_generation': 2, 'aggregates': [AGG1]})
    client.post('/resource_providers', json={'name': 'bare'})
    return pool


def _listings(client):
    found = []
    for version, query in LISTINGS:
        query = query.format(agg1=AGG1, agg2=AGG2, cn=_uuid('cn'),
                             unknown=_uuid('unknown'))
        response = client.get('/resource_providers?' + query,
                              version=version, status='*')
        body = response.json
        for error in body.get('errors', ()):
            error.pop('request_id')     # one per request
        found.append((query, response.status_int, body))
    return found


def test_filtered_listings_answer_as_sql_does(
        client, conf, database_url, host, sharing, monkeypatch):
    """Each listing from the state equals the SQL listing's answer (the
    same handler with the state turned off), errors included, before and
    after another process's writes."""
    sql_listings = []
    original = resource_providers.list_providers
    monkeypatch.setattr(resource_providers, 'list_providers',
                        lambda conn, filters: sql_listings.append(filters)
                        or original(conn, filters))

    def both():
        del sql_listings[:]
        from_state = _listings(client)
        # SQL only where a name is unknown to the state.
        assert len(sql_listings) == sum(
            'unknown' in query.lower() for _, query in LISTINGS)
        with monkeypatch.context() as patch:
            patch.setattr(listing, 'answers_from_state', lambda f: False)
            from_sql = _listings(client)
        assert from_state == from_sql
        return from_state

    answers = dict((query, (status, body))
                   for query, status, body in both())
    shared = answers['member_of=in:%s,%s&required=MISC_SHARES_VIA_AGGREGATE'
                     % (AGG1, AGG2)]
    assert [rp['uuid'] for rp in shared[1]['resource_providers']] == [sharing]
    assert answers['required=CUSTOM_UNKNOWN'][0] == 400
    other_db = engine.Database(engine.create_engine(database_url))
    other = Client(webtest.TestApp(
        placement_app.build_app(conf, other_db, prepare=False)))
    generation = other.get(
        '/resource_providers/%s' % sharing).json['generation']
    other.put('/resource_providers/%s/aggregates' % sharing, json={
        'resource_provider_generation': generation, 'aggregates': [AGG2]})
    other.put('/allocations/' + _uuid('big'), json={
        'allocations': {host: {'resources': {'VCPU': 14}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_type': 'INSTANCE',
        'consumer_generation': None})
    assert both() != list(answers.items())
    other_db.dispose()
