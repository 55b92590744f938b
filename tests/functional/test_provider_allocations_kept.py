"""A provider's allocations answered from memory equal a fresh read,
always.

``placement.state.provider_allocations`` keeps each answer of ``GET
/resource_providers/{uuid}/allocations`` until the change log shows a
write to that provider.  Each test here asks first (so that the answers
are kept), writes (through this service, through a second service on
the same database, or with SQL through an engine that is not this
service's), and requires the next answers to equal a fresh read of the
database at that moment, at every microversion shape.
"""

import json
import random
import threading
import uuid as uuidlib

import pytest
import webtest

from placement import app as placement_app
from placement.handlers import allocation as allocation_handler
from placement.state import answer_store
from placement.state import kept_answers
from placement.state import provider_allocations
from placement.storage import allocations as allocation_storage
from placement.storage import engine

from tests.conftest import Client
from tests.functional import kept_answers_cases
from tests.functional.kept_answers_cases import allocate
from tests.functional.kept_answers_cases import sql

NAMESPACE = uuidlib.UUID('5b0c7d1e-6f2a-4e3b-9c8d-1a2b3c4d5e6f')
VERSIONS = ('1.0', '1.27', '1.28', '1.39')


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


hosts = kept_answers_cases.hosts     # the fixture


@pytest.fixture
def allocated(client, hosts):
    """a and b on cn1, c on cn2."""
    allocate(client, _uuid('a'), hosts[0], 2)
    allocate(client, _uuid('b'), hosts[0], 4)
    allocate(client, _uuid('c'), hosts[1], 8)
    return hosts


def _answers(client, hosts):
    """Each host's answer at each version: (status, body,
    Last-Modified)."""
    found = []
    for host in hosts:
        for version in VERSIONS:
            response = client.get('/resource_providers/%s/allocations'
                                  % host, version=version, status='*')
            found.append((response.status_int, response.json,
                          response.headers.get('Last-Modified')))
    return found


def _fresh(client, db, hosts):
    """What a fresh read of the tables gives, in ``_answers``' form."""
    found = []
    for host in hosts:
        try:
            _id, generation, rows = db.read(
                allocation_storage.for_provider, host)
        except Exception:   # noqa: BLE001 (NotFound, as the API says)
            found.extend((404, None, None) for _ in VERSIONS)
            continue
        for version in VERSIONS:
            body = {}
            for row in rows:
                entry = body.setdefault(row['consumer_uuid'],
                                        {'resources': {}})
                entry['resources'][row['resource_class']] = row['used']
                if version in ('1.28', '1.39'):
                    entry['consumer_generation'] = row['consumer_generation']
            found.append((200, {'allocations': body,
                                'resource_provider_generation': generation},
                          rows))
    return found


def _assert_exact(client, db, hosts):
    answers = _answers(client, hosts)
    fresh = _fresh(client, db, hosts)
    assert [(status, body if status == 200 else None)
            for status, body, _ in answers] == \
        [(status, body) for status, body, _ in fresh]
    for (status, _body, modified), (_s, _b, rows), version in zip(
            answers, fresh, VERSIONS * len(hosts)):
        if status == 200 and rows and version in ('1.28', '1.39'):
            newest = max(row['updated_at'] or row['created_at']
                         for row in rows)
            assert modified == newest.strftime('%a, %d %b %Y %H:%M:%S GMT')


def _kept(db, uuids):
    """The (uuid, shape) of ``uuids`` whose answers are kept and given."""
    kept = kept_answers.of(db)
    return {(uuid, shape) for uuid in uuids
            for shape in allocation_handler.PROVIDER_BODIES.values()
            if kept.holds(provider_allocations.SHELF, (uuid, shape))}


def test_an_answer_is_kept_and_given_again(client, db, allocated):
    first = _answers(client, allocated)
    assert {key[0] for key in _kept(db, allocated)} == set(allocated)
    assert _answers(client, allocated) == first
    _assert_exact(client, db, allocated)


def test_an_unknown_provider_is_404_and_not_kept(client, db):
    missing = _uuid('missing')
    response = client.get('/resource_providers/%s/allocations' % missing,
                          status=404)
    assert 'not found' in response.json['errors'][0]['detail']
    assert not _kept(db, [missing])


def test_a_provider_without_allocations_is_modified_now(client, db, hosts):
    client.get('/resource_providers/%s/allocations' % hosts[0],
               version='1.15')
    response = client.get('/resource_providers/%s/allocations' % hosts[0],
                          version='1.15')
    assert response.json == {'allocations': {},
                             'resource_provider_generation': 1}
    assert response.headers['Last-Modified']


def test_only_the_changed_provider_is_read_again(client, db, allocated):
    _answers(client, allocated)
    cn2 = _kept(db, allocated[1:2])
    assert cn2
    allocate(client, _uuid('a'), allocated[0], 3)
    client.get('/resource_providers/%s/allocations' % allocated[1])
    assert _kept(db, allocated[:1]) == set()
    assert _kept(db, allocated[1:2]) == cn2
    _assert_exact(client, db, allocated)


# Writes through this service's API: (name, write(client, hosts)).
def _resize(client, hosts):
    allocate(client, _uuid('a'), hosts[0], 6)


def _move_to_another_host(client, hosts):
    allocate(client, _uuid('a'), hosts[1], 2)


def _same_amounts_again(client, hosts):
    """Nothing but the consumer's generation and the rows' times move."""
    allocate(client, _uuid('a'), hosts[0], 2)


def _delete(client, hosts):
    client.delete('/allocations/' + _uuid('b'))


def _post_many(client, hosts):
    client.post('/allocations', status=204, json={
        _uuid('c'): {
            'allocations': {hosts[0]: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE',
            'consumer_generation': 1},
        _uuid('new'): {
            'allocations': {hosts[1]: {'resources': {'DISK_GB': 5}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE',
            'consumer_generation': None}})


def _patch(client, hosts):
    body = {'allocations': {hosts[1]: {'resources': {'DISK_GB': 10}}},
            'consumer_generation': 1}
    client.app.patch(
        '/allocations/' + _uuid('a'), json.dumps(body),
        headers=dict(client._headers(None, None), **{
            'Content-Type': 'application/merge-patch+json'}))


def _traits(client, hosts):
    generation = client.get('/resource_providers/' + hosts[1]).json[
        'generation']
    client.put('/resource_providers/%s/traits' % hosts[1], json={
        'resource_provider_generation': generation,
        'traits': ['HW_CPU_X86_AVX2']}, version='1.6')


def _delete_the_provider(client, hosts):
    client.delete('/allocations/' + _uuid('c'))
    client.get('/resource_providers/%s/allocations' % hosts[1])
    client.delete('/resource_providers/' + hosts[1], status=204)


def _reshape(client, hosts):
    """cn1's VCPU moves to a child, with a's and b's allocations."""
    child = client.post('/resource_providers', json={
        'name': 'numa0', 'parent_provider_uuid': hosts[0]},
        version='1.20').json['uuid']
    inventories = client.get(
        '/resource_providers/%s/inventories' % hosts[0]).json
    del inventories['inventories']['VCPU']
    consumers = {}
    for name, vcpu in (('a', 2), ('b', 4)):
        consumers[_uuid(name)] = {
            'allocations': {hosts[0]: {'resources': {'MEMORY_MB': 512 * vcpu}},
                            child: {'resources': {'VCPU': vcpu}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE',
            'consumer_generation': 1}
    # The reshaper's default policy is service-only.
    client.post('/reshaper', version='1.38', status=204,
                headers={'X-Roles': 'admin,service'}, json={
        'inventories': {
            hosts[0]: inventories,
            child: {'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': 64}}}},
        'allocations': consumers})
    hosts.append(child)


def _rename_class(client, hosts):
    """A class in an answer, renamed (microversions 1.2 to 1.6)."""
    client.put('/resource_classes/CUSTOM_GOLD', status=201)
    inventories = client.get(
        '/resource_providers/%s/inventories' % hosts[1]).json
    inventories['inventories']['CUSTOM_GOLD'] = {'total': 10}
    client.put('/resource_providers/%s/inventories' % hosts[1],
               json=inventories)
    client.post('/allocations', status=204, json={_uuid('g'): {
        'allocations': {hosts[1]: {'resources': {'CUSTOM_GOLD': 1}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE',
        'consumer_generation': None}})
    _answers(client, hosts)
    client.put('/resource_classes/CUSTOM_GOLD',
               json={'name': 'CUSTOM_SILVER'}, version='1.6')


def _refused_write(client, hosts):
    """Over capacity: refused, nothing changes (and nothing need)."""
    allocate(client, _uuid('a'), hosts[0], 1000, status=409)


OWN_WRITES = {
    'resize': _resize,
    'move to another host': _move_to_another_host,
    'the same amounts again': _same_amounts_again,
    'delete a consumer': _delete,
    'POST /allocations': _post_many,
    'PATCH': _patch,
    'an inventory': kept_answers_cases.reserve_a_vcpu,
    'traits': _traits,
    'delete the provider': _delete_the_provider,
    'reshape': _reshape,
    'rename a class in use': _rename_class,
    'refused write': _refused_write,
}


@pytest.mark.parametrize('write', sorted(OWN_WRITES))
def test_our_own_write_is_seen_by_the_next_answer(client, db, allocated,
                                                  write):
    before = _answers(client, allocated)
    OWN_WRITES[write](client, allocated)
    _assert_exact(client, db, allocated)
    if write != 'refused write':
        assert _answers(client, allocated) != before


def test_a_write_through_another_service_is_seen(client, db, conf,
                                                 allocated):
    """Another process (or host) on the same database: its writes log
    what they changed, as ours do."""
    before = _answers(client, allocated)
    database = engine.Database.from_conf(conf)
    try:
        other = Client(webtest.TestApp(
            placement_app.build_app(conf, database, prepare=False)))
        allocate(other, _uuid('a'), allocated[1], 5)
    finally:
        database.dispose()
    _assert_exact(client, db, allocated)
    assert _answers(client, allocated) != before


# Writes made with SQL by something that is not this service.
FOREIGN_WRITES = {
    'allocate': lambda conn: sql(
        conn, 'UPDATE allocations SET used = used + 1 WHERE consumer_id = '
        ':consumer AND resource_class_id = 0', consumer=_uuid('a')),
    'free': lambda conn: sql(
        conn, 'DELETE FROM allocations WHERE consumer_id = :consumer',
        consumer=_uuid('b')),
    "bump a consumer's generation": lambda conn: sql(
        conn, 'UPDATE consumers SET generation = generation + 1 '
        'WHERE uuid = :consumer', consumer=_uuid('a')),
    'rename a resource class': lambda conn: sql(
        conn, "UPDATE resource_classes SET name = 'CUSTOM_CPU' "
        'WHERE id = 0'),
}


@pytest.mark.parametrize('write', sorted(FOREIGN_WRITES))
def test_a_foreign_write_is_seen_by_the_next_answer(client, db, foreign,
                                                    allocated, write):
    before = _answers(client, allocated)
    with foreign.begin() as conn:
        FOREIGN_WRITES[write](conn)
    _assert_exact(client, db, allocated)
    assert _answers(client, allocated) != before


@pytest.mark.backends('postgresql', 'mysql')
def test_an_answer_read_across_a_write_is_not_kept(client, db, allocated):
    """A reader reads cn1 as of before a write to cn1, and before it can
    keep that answer another reader has already caught up past the
    write: the stale answer must not be kept."""
    kept = kept_answers.KeptAnswers(answer_store.private())
    shelf = kept_answers.Shelf('raw rows')
    before = []

    def fresh(uuid):
        def read():
            found = db.read(allocation_storage.for_provider, uuid)
            if not before:
                before.append(found[1:])
                allocate(client, _uuid('a'), allocated[0], 6)
                kept.answer(db, shelf, allocated[1], fresh(allocated[1]))
            return [(kept_answers.PROVIDER, found[0])], found[1:]
        return read

    def answer(uuid):
        return kept.answer(db, shelf, uuid, fresh(uuid))

    assert answer(allocated[0]) == before[0]
    now = db.read(allocation_storage.for_provider, allocated[0])[1:]
    assert now != before[0]
    assert answer(allocated[0]) == now


def test_answers_the_store_has_no_room_for_are_read_not_kept(
        client, db, allocated, monkeypatch):
    """Answers that do not fit in the store are not kept, the kept ones
    stay, and every answer is still exact."""
    kept = kept_answers.of(db)
    monkeypatch.setattr(kept, 'store', answer_store.private(size=40960))
    _answers(client, allocated[:1])
    assert _kept(db, allocated[:1])
    used, room = kept.store.used()
    filler = b'x' * (room - used - 24)  # 8 bytes left after its key
    kept.store.put(b'filler', filler)
    assert kept.store.get(b'filler') == filler
    _assert_exact(client, db, allocated)
    assert _kept(db, allocated[1:]) == set()
    assert {key[0] for key in _kept(db, allocated)} == {allocated[0]}


def test_readers_racing_writers_keep_nothing_stale(client, db, app, hosts):
    """Readers in several threads of one process, while writers move
    consumers between the hosts and resize them: once the writes stop,
    every answer equals a fresh read."""
    consumers = [_uuid('race-%d' % number) for number in range(4)]
    for consumer in consumers:
        allocate(client, consumer, hosts[0], 1)
    stop = threading.Event()
    failures = []

    def read():
        reader = Client(webtest.TestApp(app.app))
        while not stop.is_set():
            try:
                _answers(reader, hosts)
            except Exception as error:  # noqa: BLE001
                failures.append(error)
                return

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    chooser = random.Random(46)
    try:
        for _ in range(30):
            allocate(client, chooser.choice(consumers),
                      chooser.choice(hosts), chooser.randint(1, 4))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures
    _assert_exact(client, db, hosts)
