"""What the tests of answers kept in memory (``state.kept_answers``:
``test_project_usages_kept``, ``test_provider_allocations_kept``,
``test_provider_reads_kept``) set up and write with: two compute nodes,
an allocation and an inventory write through the API, SQL run by
something that is not this service."""

import pytest
import sqlalchemy as sa

from placement.state import kept_answers
from placement.state import snapshot


@pytest.fixture
def hosts(client):
    """Two compute nodes with room for everything the tests allocate."""
    found = []
    for name in ('cn1', 'cn2'):
        uuid = client.post('/resource_providers',
                           json={'name': name}).json['uuid']
        client.put('/resource_providers/%s/inventories' % uuid, json={
            'resource_provider_generation': 0, 'inventories': {
                'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536},
                'DISK_GB': {'total': 1000}}})
        found.append(uuid)
    return found


@pytest.fixture
def asked(monkeypatch):
    """Every (shelf, key) asked of the kept answers while the test runs,
    in the order first asked (the store keeps digests of keys only)."""
    seen = []
    answer = kept_answers.KeptAnswers.answer

    def recording(self, db, shelf, key, read):
        if (shelf, key) not in seen:
            seen.append((shelf, key))
        return answer(self, db, shelf, key, read)
    monkeypatch.setattr(kept_answers.KeptAnswers, 'answer', recording)
    return seen


def kept_keys(db, asked, shelf):
    """The keys of ``shelf`` among those ``asked`` whose answers are
    kept and would be given now."""
    kept = kept_answers.of(db)
    return [key for each, key in asked
            if each == shelf and kept.holds(shelf, key)]


def allocate(client, consumer, host, vcpu, project='p1', user='u1',
             consumer_type='INSTANCE', status=None):
    """``consumer``'s allocations made ``vcpu`` VCPU and 512 MB each on
    ``host`` alone, at the consumer's generation."""
    generation = client.get('/allocations/' + consumer).json.get(
        'consumer_generation')
    return client.put('/allocations/' + consumer, status=status, json={
        'allocations': {host: {'resources': {
            'VCPU': vcpu, 'MEMORY_MB': 512 * vcpu}}},
        'project_id': project, 'user_id': user,
        'consumer_type': consumer_type,
        'consumer_generation': generation})


def reserve_a_vcpu(client, hosts):
    """An inventory write to the first host: its generation moves, its
    allocations do not (reserved VCPU 1)."""
    inventories = client.get(
        '/resource_providers/%s/inventories' % hosts[0]).json
    inventories['inventories']['VCPU']['reserved'] = 1
    client.put('/resource_providers/%s/inventories' % hosts[0],
               json=inventories)


def sql(conn, statement, **params):
    conn.execute(sa.text(statement), params)


def asking_the_state_fails(monkeypatch):
    """From here on, any question of the state fails the test: what is
    answered must be kept."""
    def no_question(*_args):
        raise AssertionError('a kept answer asked the state')
    monkeypatch.setattr(snapshot, 'answer', no_question)


def seen_by_the_next_answers(answers, fresh, write):
    """``write()`` between two ``answers()``: the second equals what the
    tables say (``fresh()``) and differs from the first, so the write
    was seen rather than the kept answers merely matching."""
    before = answers()
    write()
    after = answers()
    assert after == fresh()
    assert after != before
