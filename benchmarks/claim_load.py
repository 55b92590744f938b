"""The claims benchmark's clients: what runs in the load process.

Each client loops: free its oldest live claim past its share, then place
one new instance, the way nova's scheduler and report client do it:

- random (the default): ``PUT /allocations/{new consumer}`` on a random
  provider; a capacity 409 moves on to another random provider.
- scheduler (``--scheduler``): ``GET /allocation_candidates`` with
  ``limit=10`` and ``required=!COMPUTE_STATUS_DISABLED`` (nova's request),
  then PUT the first allocation request; a capacity 409 moves on to the
  next allocation request of that answer, and once they are all refused
  the candidates are asked for again.

Either way a 409 ``placement.concurrent_update`` is retried as nova's
``claim_resources`` does: re-read the consumer, a short random sleep, at
most four attempts.  Kept apart from ``claims.py`` (the set-up, audit and
report) so that the load process imports only what it runs.
"""

import collections
import random
import threading
import time
import uuid

import loadgen

MICROVERSION = '1.39'
CONCURRENT_UPDATE = 'placement.concurrent_update'
NAMESPACE = uuid.UUID('5d0c0a3e-7a55-4b0c-9f57-2f5d2c6b1d51')
CLAIM = {'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 50}
# nova's scheduler request for such a flavor (1.36+ takes ``required``
# with forbidden traits; nova always excludes disabled computes).
CANDIDATES_PATH = ('/allocation_candidates?resources=%s&limit=10'
                   '&required=!COMPUTE_STATUS_DISABLED'
                   % ','.join('%s:%d' % item for item in CLAIM.items()))
# nova's @retries: four attempts; it sleeps uniform(0, 2 * attempt) s
# between them, scaled down here to milliseconds.
MAX_ATTEMPTS = 4
RETRY_SLEEP = 0.01
# Random providers tried per claim before giving up on it (nova: its
# alternates, then NoValidHost).
MAX_HOSTS = 10
# Candidate requests per claim in scheduler mode before giving up on it
# (each answer's allocation requests all refused in between).
MAX_CANDIDATE_GETS = 3
# A client stops after this many unexpected answers in a row (a server
# without the endpoints would otherwise spin until the time limit).
MAX_UNEXPECTED_IN_A_ROW = 20
PROJECTS = [str(uuid.uuid5(NAMESPACE, 'project-%d' % n)) for n in range(8)]
USERS = [str(uuid.uuid5(NAMESPACE, 'user-%d' % n)) for n in range(8)]

# Outcomes of one PUT of a claim (after its concurrent_update retries).
PLACED, FULL, FAILED = 'placed', 'full', 'failed'


def short(body):
    text = str(body)
    return text if len(text) <= 160 else text[:157] + '...'


def new_stats():
    """A client's tallies; merged into the round's by ``merge``."""
    return {'latencies': [], 'free_latencies': [], 'conflict_latencies': [],
            'get_latencies': [], 'puts': collections.Counter(),
            'frees': collections.Counter(),
            'rereads': collections.Counter(),
            'gets': collections.Counter(), 'unplaced': 0, 'aborted': 0,
            'unexpected': []}


def merge(stats, mine):
    for key, value in mine.items():
        if key == 'unexpected':
            stats[key].extend(value[:3 - len(stats[key])])
        else:
            stats[key] += value


class ClaimClient:
    """One client: its connection, random stream, live claims, tallies."""

    def __init__(self, port, seed, pool, providers, scheduler):
        self.rng = random.Random(seed)
        self.conn = loadgen.Client(port)
        self.pool = pool
        self.providers = providers
        self.scheduler = scheduler
        self.stats = new_stats()
        self.in_a_row = 0

    def unexpected(self, what, status, body):
        self.in_a_row += 1
        if len(self.stats['unexpected']) < 3:
            self.stats['unexpected'].append('%s -> %s %s'
                                            % (what, status, short(body)))

    def free(self, consumer):
        path = '/allocations/%s' % consumer
        for _ in range(MAX_ATTEMPTS):
            status, body, elapsed = self.conn.call(
                'DELETE', path, microversion=MICROVERSION)
            if (status == 409
                    and loadgen.error_code(body) == CONCURRENT_UPDATE):
                self.stats['frees']['concurrent_update'] += 1
                continue
            self.stats['frees'][status] += 1
            if status == 204:
                self.stats['free_latencies'].append(elapsed)
                self.in_a_row = 0
            else:
                self.unexpected('DELETE ' + path, status, body)
            return

    def reread(self, path, payload, attempt):
        """nova's claim_resources reads the consumer before (re)writing it
        and takes its generation; False if that read went wrong."""
        time.sleep(self.rng.uniform(0, attempt * RETRY_SLEEP))
        status, body, _ = self.conn.call('GET', path,
                                         microversion=MICROVERSION)
        self.stats['rereads'][status] += 1
        if status != 200:
            self.unexpected('GET ' + path, status, body)
            return False
        if body.get('allocations'):
            payload['consumer_generation'] = body.get('consumer_generation')
        return True

    def put(self, consumer, allocations, owner):
        """PUT one allocation request: PLACED, FULL (capacity 409) or
        FAILED (anything unexpected)."""
        path = '/allocations/%s' % consumer
        payload = {'allocations': allocations, 'project_id': owner[0],
                   'user_id': owner[1], 'consumer_generation': None,
                   'consumer_type': 'INSTANCE'}
        for attempt in range(MAX_ATTEMPTS):
            if attempt and not self.reread(path, payload, attempt):
                return FAILED
            status, body, elapsed = self.conn.call(
                'PUT', path, payload, microversion=MICROVERSION)
            if status == 204:
                self.stats['puts'][204] += 1
                self.stats['latencies'].append(elapsed)
                self.in_a_row = 0
                return PLACED
            if status != 409:
                self.stats['puts'][status] += 1
                self.unexpected('PUT ' + path, status, body)
                return FAILED
            self.in_a_row = 0
            self.stats['conflict_latencies'].append(elapsed)
            if loadgen.error_code(body) != CONCURRENT_UPDATE:
                self.stats['puts']['capacity'] += 1
                return FULL
            self.stats['puts']['concurrent_update'] += 1
        return FULL

    def place_random(self, consumer, owner):
        """True once placed on one of a few random providers."""
        tried = set()
        for _ in range(min(MAX_HOSTS, len(self.providers))):
            provider = self.rng.choice(self.providers)
            while provider in tried:
                provider = self.rng.choice(self.providers)
            tried.add(provider)
            outcome = self.put(consumer, {provider: {'resources': CLAIM}},
                               owner)
            if outcome == PLACED:
                self.pool.append([consumer, provider])
            if outcome != FULL:
                return outcome == PLACED
        return False

    def candidates(self):
        """The allocation requests of one candidates answer, or None."""
        status, body, elapsed = self.conn.call('GET', CANDIDATES_PATH,
                                               microversion=MICROVERSION)
        self.stats['gets'][status] += 1
        if status != 200:
            self.unexpected('GET ' + CANDIDATES_PATH, status, body)
            return None
        self.stats['get_latencies'].append(elapsed)
        return body['allocation_requests']

    def place_scheduled(self, consumer, owner):
        """True once placed on a candidate, in the candidates' order.

        The claim's latency replaces the PUT's: it is the whole claim,
        first GET to the accepted PUT, as the scheduler sees it.
        """
        started = time.perf_counter()
        for _ in range(MAX_CANDIDATE_GETS):
            requests = self.candidates()
            if not requests:
                return False
            for request in requests:
                outcome = self.put(consumer, request['allocations'], owner)
                if outcome == PLACED:
                    self.stats['latencies'][-1] = (time.perf_counter()
                                                   - started)
                    self.pool.append([consumer,
                                      next(iter(request['allocations']))])
                if outcome != FULL:
                    return outcome == PLACED
        return False

    def place(self):
        consumer = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        owner = (self.rng.choice(PROJECTS), self.rng.choice(USERS))
        if self.scheduler:
            return self.place_scheduled(consumer, owner)
        return self.place_random(consumer, owner)


def claim_round(port, pools, seed, claims, max_seconds, providers,
                live_per_client, scheduler=False):
    """Place ``claims`` instances from ``len(pools)`` clients (load side).

    ``pools`` holds each client's live claims, [consumer, provider] oldest
    first; they are freed oldest first past ``live_per_client`` and handed
    back, so the next round starts as full as this one ends.
    """
    lock = threading.Lock()
    issued = [0]
    deadline = time.monotonic() + max_seconds
    stats = new_stats()

    def take_one():
        with lock:
            if issued[0] >= claims:
                return False
            issued[0] += 1
            return True

    def run(index):
        client = ClaimClient(port, '%s-%d' % (seed, index), pools[index],
                             providers, scheduler)
        try:
            while time.monotonic() < deadline:
                if client.in_a_row >= MAX_UNEXPECTED_IN_A_ROW:
                    client.stats['aborted'] += 1
                    break
                if not take_one():
                    break
                while len(client.pool) >= live_per_client:
                    client.free(client.pool.pop(0)[0])
                if not client.place():
                    client.stats['unplaced'] += 1
        finally:
            client.conn.close()
        with lock:
            merge(stats, client.stats)

    cpu_before = time.process_time()
    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(index,))
               for index in range(len(pools))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {'elapsed': elapsed, 'stats': stats, 'pools': pools,
            'client_cpu': time.process_time() - cpu_before}
