"""The claim path nova drives, statement by statement.

For every boot nova's scheduler PUTs the allocations of a new consumer
(consumer_generation null), a capacity 409 sends it to the next
candidate, and DELETE frees the claim.  Each SQL round trip of those
writes is paid by every claim (and a refused claim by each candidate
tried), so these tests pin how many there are, and check the shortcuts
that keep them few: a consumer new to the write is inserted only once the
write has passed its checks, and is neither read, deleted nor
compare-and-swapped (nothing else can see it yet); DELETE reads the
consumer with its allocations in one statement and removes the consumer
by compare-and-swap on the generation it read.
"""

import contextlib

import pytest
import sqlalchemy as sa

from placement.storage import allocations as storage
from placement.storage import changes
from placement.storage import consumers as consumer_storage
from placement.storage import exceptions
from placement.storage import prepared
from placement.storage import tables
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import consumer_generation
from tests.functional.allocation_helpers import consumer_rows
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import PROJECT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import USER

CLAIM = {'VCPU': 4, 'MEMORY_MB': 4096}
# The change log's statements belong to every write (changes.py), and
# transaction control to the driver; neither is counted here.
NOT_COUNTED = ('placement_change_stamp', 'placement_provider_changes')
TRANSACTION = ('BEGIN', 'COMMIT', 'ROLLBACK')


@pytest.fixture
def rp(client):
    return provider(client, 'compute', VCPU=8, MEMORY_MB=8192)


@contextlib.contextmanager
def statements(db):
    """The statements the block sends, change log and BEGIN/COMMIT
    left out: SQLAlchemy's, and on PostgreSQL the prepared ones, which
    go past SQLAlchemy (a statement's PREPARE, once per connection, not
    counted either)."""
    sent = []
    skipped = NOT_COUNTED + (changes._PG_ADVANCE_AND_LOG.name + ' ',)

    def record(conn, cursor, statement, *args):
        words = statement.split()
        if (words and words[0].upper() not in TRANSACTION + ('PREPARE',)
                and not any(name in statement for name in skipped)):
            sent.append(statement)

    def run(conn, sql, args):
        record(conn, None, sql)
        return original(conn, sql, args)

    original = prepared._run
    sa.event.listen(db.engine, 'before_cursor_execute', record)
    prepared._run = run
    try:
        yield sent
    finally:
        prepared._run = original
        sa.event.remove(db.engine, 'before_cursor_execute', record)


def savepoints(backend):
    """MySQL inserts a new consumer in a SAVEPOINT (and RELEASE)."""
    return 2 if backend == 'mysql' else 0


def test_a_new_consumers_claim_takes_six_statements(client, db, rp,
                                                    backend):
    """Project, user, type and consumer in one read; providers and
    classes in one; provider state; consumer insert; allocations insert;
    provider generation compare-and-swap."""
    put(client, C2, {rp['uuid']: {'VCPU': 1}})
    with statements(db) as sent:
        put(client, C1, {rp['uuid']: CLAIM})
    assert len(sent) == 6 + savepoints(backend), sent
    assert held(client, C1) == {rp['uuid']: CLAIM}
    assert consumer_generation(client, C1) == 1


def test_a_claim_refused_for_capacity_writes_nothing(client, db, rp):
    put(client, C2, {rp['uuid']: CLAIM})
    put(client, C1, {rp['uuid']: CLAIM})
    third = '33333333-3333-4333-8333-333333333333'
    with statements(db) as sent:
        resp = put(client, third, {rp['uuid']: CLAIM}, status=409)
    assert 'exceed the capacity' in error(resp)['detail']
    assert len(sent) == 3, sent
    assert not any(statement.split()[0].upper() in ('INSERT', 'UPDATE',
                                                    'DELETE', 'SAVEPOINT')
                   for statement in sent), sent
    assert consumer_rows(db, third) == 0


def test_freeing_a_claim_takes_three_statements(client, db, rp):
    put(client, C1, {rp['uuid']: CLAIM})
    with statements(db) as sent:
        client.delete('/allocations/' + C1, status=204)
    assert len(sent) == 3, sent
    assert consumer_rows(db, C1) == 0
    assert held(client, C1) == {}


def test_rewriting_an_existing_consumer_still_compares_its_generation(
        client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1}})
    put(client, C1, {rp['uuid']: {'VCPU': 2}}, consumer_generation=1)
    assert consumer_generation(client, C1) == 2
    resp = put(client, C1, {rp['uuid']: {'VCPU': 3}},
               consumer_generation=1, status=409)
    assert error(resp)['code'] == 'placement.concurrent_update'


def test_a_new_consumer_without_allocations_is_recorded_at_generation_0(
        client, db, rp):
    """As upstream: the consumer row exists, holding nothing."""
    client.put('/allocations/' + C1, version='1.38', json={
        'allocations': {}, 'consumer_generation': None,
        'project_id': PROJECT, 'user_id': USER,
        'consumer_type': 'INSTANCE'}, status=204)
    assert consumer_rows(db, C1) == 1
    row = db.read(lambda conn: conn.execute(
        sa.select(tables.consumers.c.generation)
        .where(tables.consumers.c.uuid == C1)).one())
    assert row.generation == 0


def _write(uuid, rp_uuid):
    return storage.ConsumerWrite(uuid=uuid, project_id=PROJECT,
                                 user_id=USER,
                                 allocations={rp_uuid: {'VCPU': 1}},
                                 consumer_type='INSTANCE')


def test_a_consumer_created_meanwhile_sends_the_write_back_to_the_start(
        db, rp):
    """Another transaction inserting the same new consumer between this
    write's read and its insert: the insert skips the duplicate (no
    error, no second row) and the attempt is retried, where the consumer
    is no longer new."""
    write = _write(C1, rp['uuid'])

    def racing_write(conn):
        prepared = storage.prepare(conn, [write])
        rival = dict(prepared[0][C1])
        assert consumer_storage.create_fresh(conn, rival)
        storage.apply(conn, [write], prepared)

    with pytest.raises(exceptions.ConcurrentUpdate) as caught:
        db.write(racing_write)
    assert type(caught.value).__name__ == '_LostRace'
    assert db.read(storage.for_consumer, C1) == (None, [])
    assert db.read(lambda conn: conn.scalar(
        sa.select(sa.func.count()).select_from(tables.consumers))) == 0


def test_delete_loses_to_a_rewrite_between_its_read_and_its_delete(
        client, db, rp, monkeypatch):
    """The consumer row goes by compare-and-swap on the generation read
    with the allocations: a rewrite in between (here, its generation
    bump made right after the read) rolls the delete back."""
    put(client, C1, {rp['uuid']: CLAIM})
    touch = changes.touch

    def bump_after_read(conn, *provider_ids):
        touch(conn, *provider_ids)
        conn.execute(tables.consumers.update()
                     .where(tables.consumers.c.uuid == C1)
                     .values(generation=tables.consumers.c.generation + 1))

    monkeypatch.setattr(storage.changes, 'touch', bump_after_read)
    with pytest.raises(exceptions.ConcurrentUpdate):
        db.write(storage.delete_for_consumer, C1)
    monkeypatch.undo()
    assert held(client, C1) == {rp['uuid']: CLAIM}
    assert consumer_generation(client, C1) == 1
