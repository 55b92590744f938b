"""Racing allocation writers never overcommit, lose or half-apply a write.

Schedulers and computes claim resources concurrently, and Placement's only
defence against two claims both fitting into the last free space is the
provider generation: every allocation write checks and bumps the
generations of the providers it allocates from, in the same transaction as
its capacity check.  This test races clients for tight inventory through a
real two-worker server, on SQLite and on PostgreSQL, and audits the result.

How the bookkeeping stays exact: each client thread owns a few consumers
and is the only one ever to write them, so the expected final state of a
consumer follows from the answers its owner got, while the providers are
shared and the threads race for their capacity.  Every write is one of

* PUT /allocations/{consumer} (1.38, with the consumer_generation the
  owner last saw): a new claim or a rewrite of an existing one;
* PUT with empty allocations: the safe way to drop a consumer's claim;
* POST /allocations moving a consumer's resources to another consumer, as
  nova does for migrations: one consumer emptied, the other written, both
  with their generations, in one request;
* DELETE /allocations/{consumer};
* writes that must be refused: a stale consumer generation, an amount the
  inventory's step_size forbids.

The audit, over HTTP and straight from the database:

* no answer was a 5xx or mentioned "database is locked", and every answer
  is one the operation allows (a write racing for capacity may get 409);
* no provider used more of a class than (total - reserved) *
  allocation_ratio, at the end nor at any moment a watcher polling the
  tables during the race saw (an overcommit a later release undid would
  be invisible at the end);
* every consumer holds exactly what its last acknowledged write said, and
  nothing after a DELETE or an emptying: accepted writes were stored whole
  and refused ones left nothing behind (no allocation, no consumer record);
* every provider's generation moved exactly once per acknowledged write
  that touched it (see ``touched``); DELETE does not bump generations.

Without the generation compare-and-swap two workers on PostgreSQL can both
see room for the last claim: usage then exceeds capacity, or generation
bumps are lost, and the audit fails.  (Tried on copies of the service: with
the provider bump made unconditional, relative, or dropped, PostgreSQL runs
failed every time, mostly on the watcher.)  The load is bounded in requests
and time and goes to loopback only.
"""

import collections
import concurrent.futures
import dataclasses
import random
import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.functional.server import request
from tests.functional.server import running

PROVIDERS = 3
THREADS = 10
CONSUMERS_PER_THREAD = 4
OPS_PER_THREAD = 50
TIME_BUDGET = 30  # seconds for the race; operations left over are skipped
WATCH_INTERVAL = 0.01  # seconds between the overcommit watcher's polls
SEED = 1778591
WRITE_VERSION = '1.38'  # consumer generations (1.28) and types (1.38)

# Room for 6 VCPU and 6144 MB per provider, from a reserved amount and an
# allocation ratio so that the capacity formula itself is exercised.
INVENTORY = {
    'VCPU': {'total': 5, 'reserved': 1, 'min_unit': 1, 'max_unit': 4,
             'step_size': 1, 'allocation_ratio': 1.5},
    'MEMORY_MB': {'total': 6656, 'reserved': 512, 'min_unit': 512,
                  'max_unit': 4096, 'step_size': 512,
                  'allocation_ratio': 1.0},
}
CLASS_CHOICES = (('VCPU', 'MEMORY_MB'), ('VCPU',), ('MEMORY_MB',))
FORBIDDEN_MEMORY = 768  # not a multiple of MEMORY_MB's step_size


def capacity(inventory):
    return ((inventory['total'] - inventory['reserved'])
            * inventory['allocation_ratio'])


@pytest.fixture
def server(database_url, tmp_path):
    """placement-api with two workers on the test's database."""
    with running(database_url, tmp_path) as port:
        yield port


# -- what the owner of a consumer knows --------------------------------------

_CURRENT = object()


@dataclasses.dataclass
class Consumer:
    """The last acknowledged state of a consumer.

    ``allocations`` maps provider uuid to {resource class: amount}; it is
    empty, and ``generation`` None, when the consumer holds nothing (then
    Placement keeps no consumer record either).
    """

    uuid: str
    project_id: str
    user_id: str
    allocations: dict = dataclasses.field(default_factory=dict)
    generation: object = None
    consumer_type: object = None

    @property
    def path(self):
        return '/allocations/' + self.uuid

    def body(self, allocations, consumer_type, generation=_CURRENT):
        """This consumer's part of a PUT or POST /allocations body."""
        if generation is _CURRENT:
            generation = self.generation
        return {
            'allocations': {rp: {'resources': dict(resources)}
                            for rp, resources in allocations.items()},
            'consumer_generation': generation,
            'consumer_type': consumer_type,
            'project_id': self.project_id,
            'user_id': self.user_id,
        }

    def accept(self, allocations, consumer_type):
        """Record an acknowledged write of ``allocations``."""
        if allocations:
            self.generation = (1 if self.generation is None
                               else self.generation + 1)
            self.consumer_type = consumer_type
        else:  # emptied: the consumer record goes too
            self.generation = self.consumer_type = None
        self.allocations = allocations


def touched(previous, new):
    """Providers whose generation an accepted write bumps, once each.

    As upstream Placement (objects/allocation.py, _set_allocations): the
    providers of the new allocations or, when the write empties the
    consumer, the providers it leaves.  A non-empty rewrite does not bump
    the providers the consumer moves away from.
    """
    return set(new) if new else set(previous)


@dataclasses.dataclass
class Outcome:
    action: str
    consumers: tuple
    status: int
    body: object
    expected: frozenset

    @property
    def acknowledged(self):
        return 200 <= self.status < 300


# -- one client thread -------------------------------------------------------

class Writer:
    """A client thread: owns a few consumers and writes them at random."""

    def __init__(self, port, index, providers, deadline):
        self.port = port
        self.rng = random.Random(SEED * 100 + index)
        self.providers = providers
        self.deadline = deadline
        project_id, user_id = str(uuid.uuid4()), str(uuid.uuid4())
        self.consumers = [Consumer(str(uuid.uuid4()), project_id, user_id)
                          for _ in range(CONSUMERS_PER_THREAD)]
        self.bumps = collections.Counter()  # provider: expected bumps
        self.outcomes = []

    def run(self):
        for _ in range(OPS_PER_THREAD):
            if time.monotonic() > self.deadline:
                break
            consumer = self.rng.choice(self.consumers)
            if consumer.allocations:
                actions = (self.write, self.move, self.empty, self.delete,
                           self.stale, self.forbidden)
                weights = (4, 3, 1, 2, 1, 1)
            else:
                actions = (self.write, self.stale, self.forbidden)
                weights = (16, 1, 1)
            self.rng.choices(actions, weights)[0](consumer)
        return self

    def send(self, action, consumers, method, path, body, expected):
        """Send one request and record it; True if it was acknowledged."""
        status, answer = request(self.port, method, path, body,
                                 version=WRITE_VERSION)
        outcome = Outcome(action, tuple(c.uuid for c in consumers), status,
                          answer, frozenset(expected))
        self.outcomes.append(outcome)
        return outcome.acknowledged

    def random_allocations(self):
        """One or two providers, amounts the inventory's constraints allow."""
        allocations = {}
        for rp in self.rng.sample(self.providers,
                                  self.rng.choice((1, 1, 2))):
            amounts = {'VCPU': self.rng.randint(1, 3),
                       'MEMORY_MB': 512 * self.rng.randint(1, 4)}
            classes = self.rng.choice(CLASS_CHOICES)
            allocations[rp] = {rc: amounts[rc] for rc in classes}
        return allocations

    def write(self, consumer):
        """A new claim or a rewrite: it may lose the race for room, 409."""
        new = self.random_allocations()
        body = consumer.body(new, 'INSTANCE')
        if self.send('put', [consumer], 'PUT', consumer.path, body,
                     {204, 409}):
            self.bumps.update(touched(consumer.allocations, new))
            consumer.accept(new, 'INSTANCE')

    def empty(self, consumer):
        body = consumer.body({}, consumer.consumer_type)
        if self.send('empty', [consumer], 'PUT', consumer.path, body,
                     {204, 409}):
            self.bumps.update(touched(consumer.allocations, {}))
            consumer.accept({}, None)

    def move(self, source):
        """POST: ``source`` emptied, its resources given to another consumer.

        The resources land on a permutation of the providers, so a move may
        stay put or need room elsewhere; the target may hold allocations of
        its own, which the move replaces.
        """
        target = self.rng.choice(
            [c for c in self.consumers if c is not source])
        mapping = dict(zip(self.providers, self.rng.sample(
            self.providers, len(self.providers))))
        new = {mapping[rp]: dict(resources)
               for rp, resources in source.allocations.items()}
        body = {source.uuid: source.body({}, source.consumer_type),
                target.uuid: target.body(new, 'MIGRATION')}
        if self.send('move', [source, target], 'POST', '/allocations', body,
                     {204, 409}):
            self.bumps.update(touched(source.allocations, {})
                              | touched(target.allocations, new))
            source.accept({}, None)
            target.accept(new, 'MIGRATION')

    def delete(self, consumer):
        if self.send('delete', [consumer], 'DELETE', consumer.path, None,
                     {204}):
            consumer.accept({}, None)

    def stale(self, consumer):
        """A write with a generation the consumer does not have: 409."""
        if consumer.generation is None:
            wrong = self.rng.choice((0, 1, 5))
        else:
            wrong = self.rng.choice((None, consumer.generation - 1,
                                     consumer.generation + 1))
        body = consumer.body(self.random_allocations(), 'INSTANCE', wrong)
        self.send('stale', [consumer], 'PUT', consumer.path, body, {409})

    def forbidden(self, consumer):
        """An amount that breaks step_size: refused (409, as upstream)."""
        rp = self.rng.choice(self.providers)
        body = consumer.body({rp: {'MEMORY_MB': FORBIDDEN_MEMORY}},
                             'INSTANCE')
        self.send('forbidden', [consumer], 'PUT', consumer.path, body, {409})


# -- reading the tables directly ---------------------------------------------

_OVER_CAPACITY = sa.text(
    'SELECT rp.uuid, rc.name, SUM(a.used), '
    '(i.total - i.reserved) * i.allocation_ratio FROM allocations a '
    'JOIN inventories i ON i.resource_provider_id = a.resource_provider_id '
    'AND i.resource_class_id = a.resource_class_id '
    'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
    'JOIN resource_classes rc ON rc.id = a.resource_class_id '
    'GROUP BY rp.uuid, rc.name, i.total, i.reserved, i.allocation_ratio '
    'HAVING SUM(a.used) > (i.total - i.reserved) * i.allocation_ratio')


class CapacityWatch(threading.Thread):
    """Polls the tables during the race for any overcommitted inventory.

    ``overcommits`` maps (provider, class) to the most ever seen used; an
    overcommit lasts until its consumer releases, long against the poll
    interval, so a short-lived one is caught too.
    """

    def __init__(self, database_url):
        super().__init__(daemon=True)
        self.database_url = database_url
        self.stop = threading.Event()
        self.overcommits = {}
        self.polls = 0
        self.error = None

    def run(self):
        engine = sa.create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                while not self.stop.wait(WATCH_INTERVAL):
                    for rp, rc, used, room in conn.execute(_OVER_CAPACITY):
                        seen = self.overcommits.get((rp, rc), (0, room))[0]
                        self.overcommits[rp, rc] = (max(seen, used), room)
                    conn.rollback()  # a fresh snapshot for the next poll
                    self.polls += 1
        except Exception as error:  # reported by the test
            self.error = error
        finally:
            engine.dispose()


def stored_state(database_url):
    """Capacities and allocation rows, straight from the tables, and the
    uuids of the consumer records."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            inventories = conn.execute(sa.text(
                'SELECT rp.uuid, rc.name, i.total, i.reserved, '
                'i.allocation_ratio FROM inventories i '
                'JOIN resource_providers rp ON rp.id = i.resource_provider_id '
                'JOIN resource_classes rc ON rc.id = i.resource_class_id'
            )).all()
            rows = conn.execute(sa.text(
                'SELECT a.consumer_id, rp.uuid, rc.name, a.used '
                'FROM allocations a '
                'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
                'JOIN resource_classes rc ON rc.id = a.resource_class_id'
            )).all()
            consumers = conn.execute(sa.text(
                'SELECT uuid FROM consumers')).scalars().all()
    finally:
        engine.dispose()
    capacities = {(rp, rc): (total - reserved) * ratio
                  for rp, rc, total, reserved, ratio in inventories}
    return capacities, rows, set(consumers)


# -- setup and audit ---------------------------------------------------------

def create_providers(port):
    """PROVIDERS providers with INVENTORY: {uuid: generation afterwards}."""
    generations = {}
    for n in range(PROVIDERS):
        status, provider = request(port, 'POST', '/resource_providers',
                                   {'name': 'stress-%d' % n})
        assert status == 200, provider
        status, body = request(
            port, 'PUT',
            '/resource_providers/%s/inventories' % provider['uuid'],
            {'resource_provider_generation': provider['generation'],
             'inventories': INVENTORY})
        assert status == 200, body
        generations[provider['uuid']] = body['resource_provider_generation']
    return generations


def race(port, database_url, providers):
    """Run the writers with the watcher beside them: (writers, watcher)."""
    deadline = time.monotonic() + TIME_BUDGET
    writers = [Writer(port, n, providers, deadline) for n in range(THREADS)]
    watch = CapacityWatch(database_url)
    watch.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(Writer.run, writers))
    finally:
        watch.stop.set()
        watch.join(timeout=30)
    return writers, watch


def summary(outcomes):
    counts = collections.Counter((o.action, o.status) for o in outcomes)
    return ', '.join('%s %d: %d' % (action, status, n)
                     for (action, status), n in sorted(counts.items()))


def check_answers(outcomes):
    load = summary(outcomes)
    assert not [o for o in outcomes if o.status >= 500], load
    assert not [o for o in outcomes if 'database is locked' in str(o.body)]
    unexpected = [o for o in outcomes if o.status not in o.expected]
    assert not unexpected, unexpected[:5]
    # The load really raced: claims were both granted and refused.
    racing = [o for o in outcomes if o.action in ('put', 'move')]
    assert any(o.acknowledged for o in racing), load
    assert any(not o.acknowledged for o in racing), load


def check_consumers(port, consumers):
    """Each consumer holds exactly its last acknowledged write."""
    for consumer in consumers:
        status, body = request(port, 'GET', consumer.path)
        assert status == 200, body
        stored = {rp: held['resources']
                  for rp, held in body['allocations'].items()}
        assert stored == consumer.allocations, (consumer, body)
        if consumer.allocations:
            assert body['consumer_generation'] == consumer.generation, (
                consumer, body)
            assert body['consumer_type'] == consumer.consumer_type, (
                consumer, body)
            assert (body['project_id'], body['user_id']) == (
                consumer.project_id, consumer.user_id)


def check_providers(port, consumers, start_generations, bumps):
    """Usage within capacity and the consumers' sum; one generation bump
    per acknowledged write touching the provider."""
    for rp, start in start_generations.items():
        usage = dict.fromkeys(INVENTORY, 0)
        holders = {}
        for consumer in consumers:
            if rp in consumer.allocations:
                holders[consumer.uuid] = consumer.allocations[rp]
                for rc, amount in consumer.allocations[rp].items():
                    usage[rc] += amount
        for rc, used in usage.items():
            assert used <= capacity(INVENTORY[rc]), (rp, rc, used)
        status, body = request(port, 'GET',
                               '/resource_providers/%s/usages' % rp)
        assert status == 200, body
        assert body['usages'] == usage, (rp, body)
        status, body = request(port, 'GET',
                               '/resource_providers/%s/allocations' % rp)
        assert status == 200, body
        assert {c: held['resources']
                for c, held in body['allocations'].items()} == holders, (
            rp, body)
        status, body = request(port, 'GET', '/resource_providers/' + rp)
        assert status == 200, body
        assert body['generation'] == start + bumps[rp], (
            rp, start, bumps[rp], body)


def check_tables(database_url, consumers):
    """The tables agree, without the service's code in between: nothing
    over capacity, one positive row per consumer, provider and class, and
    consumer records for exactly the consumers holding something."""
    capacities, rows, consumer_records = stored_state(database_url)
    keys = collections.Counter((c, rp, rc) for c, rp, rc, _used in rows)
    assert max(keys.values(), default=1) == 1, keys.most_common(3)
    assert all(used > 0 for *_key, used in rows), rows
    stored = collections.defaultdict(dict)
    totals = collections.Counter()
    for consumer_id, rp, rc, used in rows:
        stored[consumer_id].setdefault(rp, {})[rc] = used
        totals[rp, rc] += used
    for key, used in totals.items():
        assert used <= capacities[key], (key, used, capacities[key])
    holding = [c for c in consumers if c.allocations]
    assert dict(stored) == {c.uuid: c.allocations for c in holding}
    assert consumer_records == {c.uuid for c in holding}


def test_racing_claims_never_overcommit_or_lose_writes(server, database_url):
    port = server
    start_generations = create_providers(port)
    writers, watch = race(port, database_url, sorted(start_generations))
    outcomes = [o for w in writers for o in w.outcomes]
    consumers = [c for w in writers for c in w.consumers]
    print('load:', summary(outcomes))  # shown with -s or -rP

    check_answers(outcomes)
    assert watch.error is None and watch.polls > 0, watch.error
    assert not watch.overcommits, watch.overcommits  # (used, capacity)
    check_consumers(port, consumers)
    check_providers(port, consumers, start_generations,
                    sum((w.bumps for w in writers), collections.Counter()))
    check_tables(database_url, consumers)
