"""A provider's traits, aggregates and usages answered from memory equal
a fresh read, always, and cost no question of the state once kept.

``placement.state.provider_reads`` keeps what the state answered until
the change log names a write to that provider.  Each test asks first (so
that the answers are kept), writes, and requires the next answers to
equal what SQL says at that moment.
"""

import uuid as uuidlib

import pytest

from placement.state import provider_reads
from placement.storage import aggregates as aggregate_storage
from placement.storage import providers_core
from placement.storage import traits as trait_storage
from placement.storage import usages as usage_storage

from tests.functional import kept_answers_cases
from tests.functional.kept_answers_cases import allocate
from tests.functional.kept_answers_cases import sql

NAMESPACE = uuidlib.UUID('0d7c56a4-2a61-4f0e-8f5e-3c1b2a9d8e70')
READS = ('traits', 'aggregates', 'usages')


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


hosts = kept_answers_cases.hosts     # the fixture
asked = kept_answers_cases.asked     # the fixture


@pytest.fixture
def dressed(client, hosts):
    """Each host with a trait, an aggregate of its own and a consumer."""
    for number, host in enumerate(hosts):
        generation = client.get('/resource_providers/' + host).json[
            'generation']
        generation = client.put('/resource_providers/%s/traits' % host, json={
            'resource_provider_generation': generation,
            'traits': ['HW_CPU_X86_AVX2']}, version='1.6').json[
                'resource_provider_generation']
        client.put('/resource_providers/%s/aggregates' % host, json={
            'resource_provider_generation': generation,
            'aggregates': [_uuid('aggregate-%d' % number)]}, version='1.19')
        allocate(client, _uuid('server-%d' % number), host, 2)
    return hosts


def _answers(client, hosts):
    return [client.get('/resource_providers/%s/%s' % (host, what),
                       version='1.19').json
            for host in hosts for what in READS]


def _fresh(db, hosts):
    """What the tables say, in ``_answers``' form."""
    found = []
    for host in hosts:
        provider = db.read(providers_core.get_by_uuid, host)
        _provider, traits = db.read(trait_storage.provider_traits, host)
        _provider, aggregates = db.read(
            aggregate_storage.get_provider_aggregates, host)
        usages = db.read(usage_storage.for_provider, provider['id'])
        generation = provider['generation']
        found += [
            {'traits': [trait['name'] for trait in traits],
             'resource_provider_generation': generation},
            {'aggregates': aggregates,
             'resource_provider_generation': generation},
            {'usages': usages, 'resource_provider_generation': generation}]
    return found


def _kept_of(db, asked, host):
    return sorted(question.__name__ for question, uuid
                  in kept_answers_cases.kept_keys(db, asked,
                                                  provider_reads.SHELF)
                  if uuid == host)


def test_kept_answers_ask_the_state_nothing(asked, client, db, dressed,
                                            monkeypatch):
    first = _answers(client, dressed)
    assert first == _fresh(db, dressed)
    for host in dressed:
        assert _kept_of(db, asked, host) == [
            'aggregates_in_state', 'traits_in_state', 'usages_in_state']
    kept_answers_cases.asking_the_state_fails(monkeypatch)
    assert _answers(client, dressed) == first


def test_a_write_drops_its_provider_answers_only(asked, client, db,
                                                 dressed):
    _answers(client, dressed)
    cn2 = _kept_of(db, asked, dressed[1])
    allocate(client, _uuid('server-0'), dressed[0], 3)
    client.get('/resource_providers/%s/traits' % dressed[1], version='1.6')
    assert _kept_of(db, asked, dressed[0]) == []
    assert _kept_of(db, asked, dressed[1]) == cn2
    assert _answers(client, dressed) == _fresh(db, dressed)


def _new_trait(client, hosts):
    client.put('/traits/CUSTOM_NEW', status=201, version='1.6')
    generation = client.get('/resource_providers/' + hosts[0]).json[
        'generation']
    client.put('/resource_providers/%s/traits' % hosts[0], json={
        'resource_provider_generation': generation,
        'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_NEW']}, version='1.6')


def _aggregates(client, hosts):
    generation = client.get('/resource_providers/' + hosts[1]).json[
        'generation']
    client.put('/resource_providers/%s/aggregates' % hosts[1], json={
        'resource_provider_generation': generation,
        'aggregates': [_uuid('aggregate-0')]}, version='1.19')


def _free(client, hosts):
    client.delete('/allocations/' + _uuid('server-1'))


def _sql_trait(foreign, hosts):
    with foreign.begin() as conn:
        sql(conn, 'DELETE FROM resource_provider_traits WHERE '
                  'resource_provider_id = (SELECT id FROM '
                  'resource_providers WHERE uuid = :uuid)', uuid=hosts[1])


WRITES = {
    'a trait named anew': _new_trait,
    'aggregates': _aggregates,
    'allocations freed': _free,
    'an inventory': kept_answers_cases.reserve_a_vcpu,
}


@pytest.mark.parametrize('write', sorted(WRITES))
def test_our_write_is_seen_by_the_next_answer(client, db, dressed, write):
    kept_answers_cases.seen_by_the_next_answers(
        lambda: _answers(client, dressed), lambda: _fresh(db, dressed),
        lambda: WRITES[write](client, dressed))


def test_a_foreign_write_is_seen_by_the_next_answer(client, db, foreign,
                                                    dressed):
    kept_answers_cases.seen_by_the_next_answers(
        lambda: _answers(client, dressed), lambda: _fresh(db, dressed),
        lambda: _sql_trait(foreign, dressed))
