"""A consumer's allocations answered from memory equal a fresh read,
always.

``placement.state.consumer_allocations`` keeps each answer of ``GET
/allocations/{consumer}`` until the change log shows a write to one of
the providers it names.  Each test asks first (so that the answers are
kept), writes (through this service, through a second service on the
same database, or with SQL through an engine that is not this
service's), and requires the next answers to equal a fresh read of the
database at that moment, at every microversion shape.
"""

import uuid as uuidlib

import pytest
import webtest

from placement import app as placement_app
from placement.handlers import allocation as allocation_handler
from placement.state import consumer_allocations
from placement.storage import allocations as allocation_storage
from placement.storage import engine

from tests.conftest import Client
from tests.functional import kept_answers_cases
from tests.functional import test_provider_allocations_kept as provider_cases
from tests.functional.kept_answers_cases import allocate
from tests.functional.kept_answers_cases import sql

NAMESPACE = uuidlib.UUID('0d7c5a36-2f0e-4c55-9a43-6b1f2e8d9c10')
VERSIONS = ('1.0', '1.12', '1.28', '1.38', '1.39')

hosts = kept_answers_cases.hosts     # the fixtures
asked = kept_answers_cases.asked


def _uuid(name):
    return provider_cases._uuid(name)


CONSUMERS = [_uuid(name) for name in ('a', 'b', 'c', 'new', 'g')]


@pytest.fixture
def allocated(client, hosts):
    """a and b on cn1, c on cn2 (provider_cases' writes name these)."""
    allocate(client, _uuid('a'), hosts[0], 2)
    allocate(client, _uuid('b'), hosts[0], 4)
    allocate(client, _uuid('c'), hosts[1], 8, project='p2',
             consumer_type='MIGRATION')
    return hosts


def _answers(client):
    """Each consumer's answer at each version: (status, body,
    Last-Modified)."""
    found = []
    for consumer in CONSUMERS:
        for version in VERSIONS:
            response = client.get('/allocations/' + consumer,
                                  version=version)
            found.append((response.status_int, response.json,
                          response.headers.get('Last-Modified')))
    return found


def _fresh(db):
    """What a fresh read of the tables gives, in ``_answers``' form."""
    found = []
    for consumer in CONSUMERS:
        record, rows = db.read(allocation_storage.for_consumer, consumer)
        for version in VERSIONS:
            body = {}
            for row in rows:
                entry = body.setdefault(row['resource_provider_uuid'],
                                        {'resources': {}})
                entry['generation'] = row['resource_provider_generation']
                entry['resources'][row['resource_class']] = row['used']
            body = {'allocations': body}
            numbers = tuple(map(int, version.split('.')))
            if record is not None and numbers >= (1, 12):
                body.update(project_id=record['project_id'],
                            user_id=record['user_id'])
                if numbers >= (1, 28):
                    body['consumer_generation'] = record['generation']
                if numbers >= (1, 38):
                    body['consumer_type'] = record['consumer_type'] or 'UNKNOWN'
            found.append((200, body, rows))
    return found


def _assert_exact(client, db):
    answers = _answers(client)
    fresh = _fresh(db)
    assert [body for _, body, _ in answers] == [body for _, body, _ in fresh]
    for (_status, _body, modified), (_s, _b, rows), version in zip(
            answers, fresh, VERSIONS * len(CONSUMERS)):
        if version < '1.15':    # no cache headers before 1.15
            assert modified is None
        elif rows:
            newest = max(row['updated_at'] or row['created_at']
                         for row in rows)
            assert modified == newest.strftime('%a, %d %b %Y %H:%M:%S GMT')
        else:
            assert modified


def _kept(db, asked):
    return {key[0] for key in kept_answers_cases.kept_keys(
        db, asked, consumer_allocations.SHELF)}


def test_an_answer_is_kept_at_each_shape_and_given_again(client, db,
                                                          allocated, asked):
    first = _answers(client)
    assert _kept(db, asked) == {_uuid('a'), _uuid('b'), _uuid('c')}
    shapes = {key[1] for shelf, key in asked
              if shelf == consumer_allocations.SHELF}
    assert shapes == {shape for _, shape in allocation_handler.CONSUMER_BODIES}
    assert _stable(_answers(client)) == _stable(first)
    _assert_exact(client, db)


def _stable(answers):
    """``answers`` without the Last-Modified of those holding nothing
    (the time of the request)."""
    return [(status, body, modified if body['allocations'] else None)
            for status, body, modified in answers]


def test_a_consumer_holding_nothing_is_read_each_time(client, db,
                                                      allocated, asked):
    """Its answer names no provider that a write giving it allocations
    would log, so it is never kept."""
    nobody = _uuid('new')
    assert client.get('/allocations/' + nobody).json == {'allocations': {}}
    assert nobody not in _kept(db, asked)
    allocate(client, nobody, allocated[1], 1)
    assert client.get('/allocations/' + nobody).json['allocations']
    _assert_exact(client, db)


def _change_project(client, hosts):
    """The same allocations, in another project and of another type."""
    allocate(client, _uuid('a'), hosts[0], 2, project='p3',
             consumer_type='MIGRATION')


def _inventory_of_the_other_host(client, hosts):
    """c's provider's generation moves, shown in c's answer."""
    kept_answers_cases.reserve_a_vcpu(client, hosts[1:])


WRITES = dict(provider_cases.OWN_WRITES, **{
    'another project and type': _change_project,
    "the other host's inventory": _inventory_of_the_other_host,
})


@pytest.mark.parametrize('write', sorted(WRITES))
def test_our_own_write_is_seen_by_the_next_answer(client, db, allocated,
                                                  write, asked):
    before = _answers(client)
    assert _kept(db, asked)
    WRITES[write](client, allocated)
    _assert_exact(client, db)
    if write in ('refused write', 'delete the provider'):
        return
    assert _stable(_answers(client)) != _stable(before)


def test_a_write_through_another_service_is_seen(client, db, conf,
                                                 allocated):
    before = _answers(client)
    database = engine.Database.from_conf(conf)
    try:
        other = Client(webtest.TestApp(
            placement_app.build_app(conf, database, prepare=False)))
        allocate(other, _uuid('b'), allocated[1], 5)
    finally:
        database.dispose()
    _assert_exact(client, db)
    assert _stable(_answers(client)) != _stable(before)


FOREIGN_WRITES = dict(provider_cases.FOREIGN_WRITES, **{
    "change a consumer's project": lambda conn: sql(
        conn, 'UPDATE consumers SET project_id = (SELECT MAX(id) FROM '
        'projects) WHERE uuid = :consumer', consumer=_uuid('a')),
    "bump a provider's generation": lambda conn: sql(
        conn, 'UPDATE resource_providers SET generation = generation + 1'),
})


@pytest.mark.parametrize('write', sorted(FOREIGN_WRITES))
def test_a_foreign_write_is_seen_by_the_next_answer(client, db, foreign,
                                                    allocated, write):
    before = _answers(client)
    with foreign.begin() as conn:
        FOREIGN_WRITES[write](conn)
    _assert_exact(client, db)
    assert _stable(_answers(client)) != _stable(before)
