"""A project's usages answered from memory equal a fresh read, always.

``placement.state.project_usages`` keeps each answer of
``GET /usages?project_id=`` until the change log shows a write that
moved that project's usage.  Each test here asks first (so that an
answer is kept), writes (through this service, through a second
service on the same database, or with SQL through an engine that is not
this service's), and requires the next answer to equal a fresh read of
the database at that moment.
"""

import json
import random
import threading
import uuid as uuidlib

import pytest
import webtest

from placement import app as placement_app
from placement.storage import engine
from placement.state import answer_store
from placement.state import kept_answers
from placement.state import project_usages
from placement.storage import usages

from tests.conftest import Client
from tests.functional import kept_answers_cases
from tests.functional.kept_answers_cases import allocate
from tests.functional.kept_answers_cases import sql

NAMESPACE = uuidlib.UUID('0f8d2c1e-3a5b-4c6d-8e9f-a0b1c2d3e4f5')
PROJECTS = ('p1', 'p2')
USERS = ('u1', 'u2')


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


hosts = kept_answers_cases.hosts     # the fixture
asked = kept_answers_cases.asked     # the fixture


# Every shape of the question, as (query, the fresh read that answers it).
QUESTIONS = [
    ('project_id=p1', '1.9',
     lambda conn: usages.for_project(conn, 'p1')),
    ('project_id=p1&user_id=u1', '1.9',
     lambda conn: usages.for_project(conn, 'p1', 'u1')),
    ('project_id=p2', '1.9',
     lambda conn: usages.for_project(conn, 'p2')),
    ('project_id=p1', '1.38',
     lambda conn: usages.for_project_by_type(conn, 'p1')),
    ('project_id=p1&user_id=u2', '1.38',
     lambda conn: usages.for_project_by_type(conn, 'p1', 'u2')),
    ('project_id=p1&consumer_type=INSTANCE', '1.38',
     lambda conn: usages.for_project_by_type(conn, 'p1', None, 'INSTANCE')),
    ('project_id=p1&consumer_type=MIGRATION', '1.38',
     lambda conn: usages.for_project_by_type(conn, 'p1', None,
                                             'MIGRATION')),
    ('project_id=p1&consumer_type=all', '1.38',
     lambda conn: usages.for_project_by_type(conn, 'p1', None, 'all')),
]


def _answers(client):
    return [client.get('/usages?' + query, version=version).json['usages']
            for query, version, _ in QUESTIONS]


def _fresh(db):
    return [db.read(read) for _, _, read in QUESTIONS]


def _assert_exact(client, db):
    assert _answers(client) == _fresh(db)


@pytest.fixture
def allocated(client, hosts):
    """p1/u1 and p1/u2 instances, a p1 migration, a p2 instance."""
    allocate(client, _uuid('a'), hosts[0], 2)
    allocate(client, _uuid('b'), hosts[1], 4, user='u2')
    allocate(client, _uuid('m'), hosts[1], 1, consumer_type='MIGRATION')
    allocate(client, _uuid('c'), hosts[0], 8, project='p2')
    return hosts


def test_an_answer_is_kept_and_given_again(asked, client, db, allocated):
    expected = {'usages': {'VCPU': 7, 'MEMORY_MB': 3584}}
    assert client.get('/usages?project_id=p1', version='1.9').json == \
        expected
    kept = kept_answers_cases.kept_keys(db, asked, project_usages.SHELF)
    assert [key[1:] for key in kept] == [('p1', None)]
    assert client.get('/usages?project_id=p1', version='1.9').json == \
        expected


def test_an_unknown_project_is_not_kept(asked, client, db, allocated):
    assert client.get('/usages?project_id=nobody').json == {'usages': {}}
    assert not kept_answers_cases.kept_keys(db, asked,
                                            project_usages.SHELF)


# Writes through this service's API: (name, write(client, hosts)).
def _new_consumer(client, hosts):
    allocate(client, _uuid('new'), hosts[0], 3)


def _resize(client, hosts):
    allocate(client, _uuid('a'), hosts[0], 6)


def _move_to_another_host(client, hosts):
    allocate(client, _uuid('a'), hosts[1], 2)


def _move_to_another_project(client, hosts):
    allocate(client, _uuid('a'), hosts[0], 2, project='p2')


def _move_to_another_user(client, hosts):
    allocate(client, _uuid('a'), hosts[0], 2, user='u2')


def _change_type(client, hosts):
    allocate(client, _uuid('a'), hosts[0], 2, consumer_type='MIGRATION')


def _delete(client, hosts):
    client.delete('/allocations/' + _uuid('b'))


def _empty_by_put(client, hosts):
    generation = client.get('/allocations/' + _uuid('m')).json[
        'consumer_generation']
    client.put('/allocations/' + _uuid('m'), json={
        'allocations': {}, 'project_id': 'p1', 'user_id': 'u1',
        'consumer_type': 'MIGRATION', 'consumer_generation': generation})


def _post_many(client, hosts):
    consumers = {}
    for name, project in (('a', 'p2'), ('post', 'p1')):
        consumers[_uuid(name)] = {
            'allocations': {hosts[1]: {'resources': {'VCPU': 1}}},
            'project_id': project, 'user_id': 'u1',
            'consumer_type': 'INSTANCE',
            'consumer_generation': client.get(
                '/allocations/' + _uuid(name)).json.get(
                    'consumer_generation')}
    client.post('/allocations', json=consumers, status=204)


def _patch(client, hosts):
    generation = client.get('/allocations/' + _uuid('a')).json[
        'consumer_generation']
    body = {'allocations': {hosts[0]: {'resources': {'DISK_GB': 10}}},
            'consumer_generation': generation}
    client.app.patch(
        '/allocations/' + _uuid('a'), json.dumps(body),
        headers=dict(client._headers(None, None), **{
            'Content-Type': 'application/merge-patch+json'}))


def _rename_class(client, hosts):
    """A class the project uses, renamed (microversions 1.2 to 1.6)."""
    client.put('/resource_classes/CUSTOM_GOLD', status=201)
    inventories = client.get(
        '/resource_providers/%s/inventories' % hosts[0]).json
    inventories['inventories']['CUSTOM_GOLD'] = {'total': 10}
    client.put('/resource_providers/%s/inventories' % hosts[0],
               json=inventories)
    allocate(client, _uuid('g'), hosts[0], 1)
    client.post('/allocations', status=204, json={_uuid('g'): {
        'allocations': {hosts[0]: {'resources': {'CUSTOM_GOLD': 1}}},
        'project_id': 'p1', 'user_id': 'u1', 'consumer_type': 'INSTANCE',
        'consumer_generation': 1}})
    _answers(client)
    client.put('/resource_classes/CUSTOM_GOLD',
               json={'name': 'CUSTOM_SILVER'}, version='1.6')


def _refused_write(client, hosts):
    """Over capacity: refused, nothing changes (and nothing need)."""
    allocate(client, _uuid('a'), hosts[0], 1000, status=409)


OWN_WRITES = {
    'new consumer': _new_consumer,
    'resize': _resize,
    'move to another host': _move_to_another_host,
    'move to another project': _move_to_another_project,
    'move to another user': _move_to_another_user,
    'change the consumer type': _change_type,
    'delete': _delete,
    'empty by PUT': _empty_by_put,
    'POST /allocations': _post_many,
    'PATCH': _patch,
    'rename a class in use': _rename_class,
    'refused write': _refused_write,
}


# The writes after which every project uses what it did.
SAME_USAGE = {'move to another host', 'refused write'}


@pytest.mark.parametrize('write', sorted(OWN_WRITES))
def test_our_own_write_is_seen_by_the_next_answer(client, db, allocated,
                                                  write):
    before = _answers(client)
    OWN_WRITES[write](client, allocated)
    _assert_exact(client, db)
    if write not in SAME_USAGE:
        assert _answers(client) != before


def test_a_write_through_another_service_is_seen(client, db, conf,
                                                 database_url, allocated):
    """Another process (or host) on the same database: its writes log
    what they changed, as ours do."""
    before = _answers(client)
    database = engine.Database.from_conf(conf)
    try:
        other = Client(webtest.TestApp(
            placement_app.build_app(conf, database, prepare=False)))
        allocate(other, _uuid('a'), allocated[1], 5, project='p2')
        allocate(other, _uuid('n'), allocated[0], 1, user='u2')
    finally:
        database.dispose()
    _assert_exact(client, db)
    assert _answers(client) != before


# Writes made with SQL by something that is not this service.
FOREIGN_WRITES = {
    'allocate': lambda conn: sql(
        conn, "UPDATE allocations SET used = used + 1 WHERE consumer_id = "
        ":consumer AND resource_class_id = 0", consumer=_uuid('a')),
    'free': lambda conn: sql(
        conn, 'DELETE FROM allocations WHERE consumer_id = :consumer',
        consumer=_uuid('b')),
    'move a consumer to another project': lambda conn: sql(
        conn, "UPDATE consumers SET project_id = (SELECT id FROM projects "
        "WHERE external_id = 'p2') WHERE uuid = :consumer",
        consumer=_uuid('a')),
    'move a consumer to another user': lambda conn: sql(
        conn, "UPDATE consumers SET user_id = (SELECT id FROM users "
        "WHERE external_id = 'u2') WHERE uuid = :consumer",
        consumer=_uuid('a')),
    'retype a consumer': lambda conn: sql(
        conn, "UPDATE consumers SET consumer_type_id = NULL "
        "WHERE uuid = :consumer", consumer=_uuid('m')),
    'rename a project': lambda conn: sql(
        conn, "UPDATE projects SET external_id = 'p9' "
        "WHERE external_id = 'p2'"),
    'swap two projects': lambda conn: [sql(conn, statement) for statement in (
        "UPDATE projects SET external_id = 'px' WHERE external_id = 'p1'",
        "UPDATE projects SET external_id = 'p1' WHERE external_id = 'p2'",
        "UPDATE projects SET external_id = 'p2' WHERE external_id = 'px'")],
    'rename a user': lambda conn: sql(
        conn, "UPDATE users SET external_id = 'u9' "
        "WHERE external_id = 'u2'"),
    'rename a consumer type': lambda conn: sql(
        conn, "UPDATE consumer_types SET name = 'RENAMED' "
        "WHERE name = 'MIGRATION'"),
    'rename a resource class': lambda conn: sql(
        conn, "UPDATE resource_classes SET name = 'CUSTOM_CPU' "
        "WHERE id = 0"),
}


@pytest.mark.parametrize('write', sorted(FOREIGN_WRITES))
def test_a_foreign_write_is_seen_by_the_next_answer(client, db, foreign,
                                                    allocated, write):
    before = _answers(client)
    with foreign.begin() as conn:
        FOREIGN_WRITES[write](conn)
    _assert_exact(client, db)
    assert _answers(client) != before


def test_random_writes_never_leave_an_answer_stale(client, db, foreign,
                                                   hosts):
    """Random writes of every kind above, ours and foreign, each followed
    by every question: each answer equals a fresh read."""
    chooser = random.Random(25)
    consumers = [_uuid('random-%d' % number) for number in range(6)]
    for _ in range(40):
        consumer = chooser.choice(consumers)
        kind = chooser.randrange(4)
        if kind == 0:
            allocate(client, consumer, chooser.choice(hosts),
                      chooser.randint(1, 4), chooser.choice(PROJECTS),
                      chooser.choice(USERS),
                      chooser.choice(('INSTANCE', 'MIGRATION')))
        elif kind == 1:
            client.delete('/allocations/' + consumer, status='*')
        elif kind == 2:
            with foreign.begin() as conn:
                sql(conn, 'UPDATE allocations SET used = used + 1 '
                     'WHERE consumer_id = :consumer', consumer=consumer)
        else:
            with foreign.begin() as conn:
                sql(conn, 'UPDATE consumers SET project_id = (SELECT id '
                     'FROM projects WHERE external_id = :project) WHERE '
                     'uuid = :consumer', consumer=consumer,
                     project=chooser.choice(PROJECTS))
        _assert_exact(client, db)


def test_only_the_changed_project_is_read_again(asked, client, db,
                                                allocated):
    """A write drops the answers of the projects it changed, and keeps
    the others'."""
    _answers(client)

    def kept():
        return kept_answers_cases.kept_keys(db, asked, project_usages.SHELF)
    p2_before = [key for key in kept() if key[1] == 'p2']
    assert p2_before and any(key[1] == 'p1' for key in kept())
    allocate(client, _uuid('a'), allocated[0], 3)
    client.get('/usages?project_id=p2', version='1.9')  # reads the log
    assert [key for key in kept() if key[1] == 'p1'] == []
    assert [key for key in kept() if key[1] == 'p2'] == p2_before
    _assert_exact(client, db)


@pytest.mark.backends('postgresql', 'mysql')
def test_an_answer_read_across_a_write_is_not_kept(client, db, allocated):
    """The race the threads below may or may not hit, made to happen: a
    reader sums p1 as of before a write to p1, and before it can keep
    that answer another reader has already caught up past the write.
    The stale answer must not be kept."""
    kept = kept_answers.KeptAnswers(answer_store.private())
    shelf = project_usages.SHELF
    before = []

    def fresh(project_id):
        def read():
            answer = db.read(usages.for_project, project_id)
            if not before:
                before.append(answer)
                allocate(client, _uuid('a'), allocated[0], 6)
                kept.answer(db, shelf, 'p2', fresh('p2'))
            owner = db.read(usages.project_id, project_id)
            return [(kept_answers.PROJECT, owner)], answer
        return read

    assert kept.answer(db, shelf, 'p1', fresh('p1')) == before[0]
    now = db.read(usages.for_project, 'p1')
    assert now != before[0]
    assert kept.answer(db, shelf, 'p1', fresh('p1')) == now


def test_readers_racing_writers_keep_nothing_stale(client, db, app, hosts):
    """Readers in several threads of one process, while writers move
    consumers between projects and resize them: once the writes stop,
    every answer equals a fresh read (no answer kept from before a write
    its reader had not yet seen)."""
    consumers = [_uuid('race-%d' % number) for number in range(4)]
    for consumer in consumers:
        allocate(client, consumer, hosts[0], 1)
    stop = threading.Event()
    failures = []

    def read():
        reader = Client(webtest.TestApp(app.app))
        while not stop.is_set():
            try:
                _answers(reader)
            except Exception as error:  # noqa: BLE001 - reported below
                failures.append(error)
                return

    def write(offset):
        writer = Client(webtest.TestApp(app.app))
        chooser = random.Random(offset)
        for _ in range(25):
            consumer = consumers[offset + 2 * chooser.randrange(2)]
            allocate(writer, consumer, chooser.choice(hosts),
                      chooser.randint(1, 4), chooser.choice(PROJECTS),
                      chooser.choice(USERS), status='*')

    readers = [threading.Thread(target=read) for _ in range(3)]
    writers = [threading.Thread(target=write, args=(offset,))
               for offset in range(2)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert failures == []
    _assert_exact(client, db)
