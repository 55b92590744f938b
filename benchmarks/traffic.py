"""Nova's steady traffic against N compute nodes: ours against upstream.

    .venv/bin/python benchmarks/traffic.py [--nodes N]
        [--servers-per-node S] [--api-reads A] [--processes P]
        [--threads T] [--rounds R] [--seconds S] [--warmup-minutes M]
        [--warmup-seconds W]
        [--alone-seconds A] [--keep-data] [--backend postgresql|mysql]
        [--wsgi-server gunicorn|uwsgi]

A cloud of N compute nodes (root providers with VCPU, MEMORY_MB and
DISK_GB, a dozen traits, an aggregate per 50 nodes) and S servers on each
(consumers created with ``POST /allocations``, 200 a request), loaded
into both servers with the same uuids.  Then what such a cloud sends
placement when nothing is being built: each node's resource tracker,
every minute, reads its allocations; one minute in five it refreshes its
associations (tree, aggregates, traits, sharing providers); a few nodes
a minute change their inventory.  Conductor and API reads of consumers,
project usages and provider usages come with them, A per node-minute.

P processes of T threads stand in for the nodes, closed loop: a thread
takes the next node-minute of its process's share of the nodes, sends
that minute's requests one after the other and takes the next once all
are answered, so node-minutes are replayed as fast as the server answers
and the figure is capacity: compute nodes served per core, 60 x
node-minutes answered / CPU-seconds of the server.  Rounds of fixed
length alternate the servers; then each call type runs alone for a few
seconds per server, for its CPU per request and its median latency.

Both servers run under gunicorn (ours through ``placement-api``, 8
threads a worker; upstream's sync workers), or with ``--wsgi-server
uwsgi`` both under kolla-ansible's uwsgi.ini, as the deployment tools run
them.
"""

import argparse
import collections
import concurrent.futures
import contextlib
import functools
import glob
import hashlib
import itertools
import math
import os
import platform
import random
import subprocess
import sys
import threading
import time
import uuid

import harness
import loadgen

NAMES = ('ours', 'upstream')
NAMESPACE = uuid.UUID('6a1f3c52-93d4-4f0e-b7a1-0c2d9e8f7b31')
# Bumped whenever the loaded data changes, so --keep-data never restores
# a cloud of another shape.
DATA_VERSION = 1

# ------------------------------------------------------------- the cloud

INVENTORY = {
    'VCPU': {'total': 64, 'reserved': 0, 'min_unit': 1, 'max_unit': 64,
             'step_size': 1, 'allocation_ratio': 4.0},
    'MEMORY_MB': {'total': 262144, 'reserved': 512, 'min_unit': 1,
                  'max_unit': 262144, 'step_size': 1,
                  'allocation_ratio': 1.0},
    'DISK_GB': {'total': 2000, 'reserved': 0, 'min_unit': 1,
                'max_unit': 2000, 'step_size': 1, 'allocation_ratio': 1.0},
}
SERVER_RESOURCES = {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 20}
# What nova's libvirt driver reports for an ordinary compute node (part
# of it); half the nodes have AVX2.  COMPUTE_STATUS_DISABLED is what a
# disabled service adds, the one trait the load's trait updates toggle.
BASE_TRAITS = ('COMPUTE_NODE', 'COMPUTE_NET_ATTACH_INTERFACE',
               'COMPUTE_VOLUME_ATTACH', 'COMPUTE_VOLUME_EXTEND',
               'COMPUTE_DEVICE_TAGGING', 'COMPUTE_TRUSTED_CERTS',
               'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW',
               'HW_CPU_X86_AVX', 'HW_CPU_X86_SSE42')
AVX2 = 'HW_CPU_X86_AVX2'
DISABLED = 'COMPUTE_STATUS_DISABLED'
NODES_PER_AGGREGATE = 50
PROJECTS = 100
USERS = 200
BATCH = 200

# -------------------------------------------------------------- the mix

# nova's resource_provider_association_refresh (300 s) in minutes.
REFRESH_EVERY = 5
# Nodes a minute whose inventory changes, and of those the share that
# also pushes traits.
INVENTORY_CHANGE = 0.03
TRAITS_WITH_CHANGE = 1 / 3
# The conductor/API reads of a node-minute (--api-reads) are split in
# these shares: consumers' allocations, project usages, provider usages.
API_SHARES = (0.5, 0.25, 0.25)
RESERVED_STEP = 512
RESERVED_CYCLE = 2048

# key -> (label, method, microversion).  Microversions are nova's where
# the issue names none: 1.26 for inventories (its PUT), 1.9 for usages.
CALLS = collections.OrderedDict([
    ('allocations', ('GET /resource_providers/{u}/allocations', 'GET',
                     '1.39')),
    ('in_tree', ('GET /resource_providers?in_tree={u}', 'GET', '1.14')),
    ('aggregates', ('GET /resource_providers/{u}/aggregates', 'GET',
                    '1.19')),
    ('traits', ('GET /resource_providers/{u}/traits', 'GET', '1.6')),
    ('sharing', ('GET /resource_providers?member_of=..&required=..', 'GET',
                 '1.18')),
    ('get_inventories', ('GET /resource_providers/{u}/inventories', 'GET',
                         '1.26')),
    ('put_inventories', ('PUT /resource_providers/{u}/inventories', 'PUT',
                         '1.26')),
    ('put_traits', ('PUT /resource_providers/{u}/traits', 'PUT', '1.6')),
    ('consumer', ('GET /allocations/{consumer}', 'GET', '1.38')),
    ('usages', ('GET /usages?project_id={p}', 'GET', '1.9')),
    ('provider_usages', ('GET /resource_providers/{u}/usages', 'GET',
                         '1.9')),
])

# Targets of the issue: ours against upstream, and ours alone.
TARGET_NODES_PER_CORE = 5.0
TARGET_CALL = 5.0
TARGET_CPU_MS = 1.0


@functools.lru_cache(maxsize=None)
def node_uuid(node):
    return str(uuid.uuid5(NAMESPACE, 'node-%d' % node))


def aggregate_uuid(node):
    return str(uuid.uuid5(NAMESPACE, 'aggregate-%d'
                          % (node // NODES_PER_AGGREGATE)))


def consumer_uuid(index):
    """Server ``index`` of the cloud: node index // servers per node."""
    return str(uuid.uuid5(NAMESPACE, 'server-%d' % index))


@functools.lru_cache(maxsize=None)
def project_uuid(project):
    return str(uuid.uuid5(NAMESPACE, 'project-%d' % project))


def user_uuid(user):
    return str(uuid.uuid5(NAMESPACE, 'user-%d' % user))


def node_traits(node, disabled=False):
    traits = list(BASE_TRAITS)
    if node % 2 == 0:
        traits.append(AVX2)
    if disabled:
        traits.append(DISABLED)
    return traits


def provider_path(node, suffix=''):
    return '/resource_providers/%s%s' % (node_uuid(node), suffix)


def sharing_path(node):
    """nova's query for the sharing providers of the node's aggregates."""
    return ('/resource_providers?member_of=in:%s'
            '&required=MISC_SHARES_VIA_AGGREGATE' % aggregate_uuid(node))


def requests_per_node_minute(api_reads):
    """The mix's average request count per node-minute."""
    return (1 + 4 / REFRESH_EVERY
            + INVENTORY_CHANGE * (2 + TRAITS_WITH_CHANGE) + api_reads)


# --------------------------------------------------------------- loading


class Loader:
    """The cloud through the API, the same uuids on every server.

    Nodes from ``threads`` threads, a provider with its inventories,
    traits and aggregate at a time.  Consumers with ``POST
    /allocations`` (1.38), BATCH a request: the first alone, since it
    creates every project and user (the pools are no larger than a
    batch), then two at a time, none of which creates any.  Concurrent
    batches that could made upstream answer 500 in candidates.py, which
    sends one at a time; two halve upstream's load time here.
    """

    def __init__(self, port, nodes, servers_per_node, threads=8):
        self.port = port
        self.nodes = nodes
        self.servers_per_node = servers_per_node
        self.threads = threads
        self.local = threading.local()

    def call(self, method, path, body=None, microversion='1.39',
             expect=(200,)):
        status, answer, _ = self.client().call(method, path, body,
                                               microversion)
        if status not in expect:
            raise RuntimeError('%s %s: %s %s' % (method, path, status,
                                                 short(answer)))
        return answer

    def node(self, node):
        generation = self.call('POST', '/resource_providers', {
            'uuid': node_uuid(node), 'name': 'compute-%05d' % node,
        })['generation']
        generation = self.call('PUT', provider_path(node, '/inventories'), {
            'resource_provider_generation': generation,
            'inventories': INVENTORY})['resource_provider_generation']
        generation = self.call('PUT', provider_path(node, '/traits'), {
            'resource_provider_generation': generation,
            'traits': node_traits(node)})['resource_provider_generation']
        self.call('PUT', provider_path(node, '/aggregates'), {
            'resource_provider_generation': generation,
            'aggregates': [aggregate_uuid(node)]}, microversion='1.19')

    def batch(self, first):
        """Consumers first .. first + BATCH - 1, each on its node."""
        body = {}
        last = min(first + BATCH, self.nodes * self.servers_per_node)
        for index in range(first, last):
            node = node_uuid(index // self.servers_per_node)
            body[consumer_uuid(index)] = {
                'allocations': {node: {'resources': SERVER_RESOURCES}},
                'project_id': project_uuid(index % PROJECTS),
                'user_id': user_uuid(index % USERS),
                'consumer_generation': None,
                'consumer_type': 'INSTANCE'}
        # Two batches may share the node at their border: a provider
        # generation conflict is tried again, as nova would.
        for attempt in range(10):
            status, answer, _ = self.client().call(
                'POST', '/allocations', body, '1.38')
            if status == 204:
                return
            if not (status == 409 and loadgen.error_code(answer)
                    == 'placement.concurrent_update'):
                break
            time.sleep(0.01 * attempt)
        raise RuntimeError('POST /allocations (consumers %d-%d): %s %s'
                           % (first, last - 1, status, short(answer)))

    def client(self):
        """This thread's connection (a POST of 200 consumers takes
        upstream seconds, hence the long timeout)."""
        if not hasattr(self.local, 'client'):
            self.local.client = loadgen.Client(self.port, timeout=300)
        return self.local.client

    def load(self, name):
        """Both parts, timed: (seconds for the nodes, for the consumers).
        """
        started = time.perf_counter()
        harness.parallel(self.node, range(self.nodes), self.threads)
        nodes_done = time.perf_counter()
        firsts = list(range(0, self.nodes * self.servers_per_node, BATCH))
        self.batch(firsts[0])
        done = itertools.count(2)

        def post(first):
            self.batch(first)
            number = next(done)
            if number % max(1, len(firsts) // 10) == 0:
                harness.log('load     %-8s %d of %d POST /allocations, '
                            '%.0f s' % (name, number, len(firsts),
                                        time.perf_counter() - nodes_done))

        harness.parallel(post, firsts[1:], 2)
        return nodes_done - started, time.perf_counter() - nodes_done


def short(body):
    text = str(body)
    return text if len(text) <= 200 else text[:197] + '...'


# ------------------------------------------------------ the kept data


def schema_fingerprint():
    """Our migrations' contents: a dump of ours is only restored into the
    schema it was taken from (upstream's is pinned by its version)."""
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(harness.REPO, 'migrations',
                                              'versions', '*.py'))):
        with open(path, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:12]


def dump_paths(args):
    """Per server, the file its loaded database is kept in."""
    shape = 'v%d-%dx%d' % (DATA_VERSION, args.nodes, args.servers_per_node)
    tags = {'ours': schema_fingerprint(),
            'upstream': harness.UPSTREAM_VERSION}
    return {name: os.path.join(harness.CACHE, 'traffic', '%s-%s-%s.dump'
                               % (name, tags[name], shape))
            for name in NAMES}


class KeptStack(harness.Stack):
    """A Stack whose databases start from kept dumps where there are any
    (``dumps``: database name -> path), restored before the servers
    start on them, so ours migrates nothing and upstream's ``db sync``
    finds its schema."""

    def __init__(self, dumps, **kwargs):
        super().__init__(**kwargs)
        self.dumps = dumps

    def _create_database(self, name):
        super()._create_database(name)
        path = self.dumps.get(name)
        if path and os.path.exists(path):
            harness.log('Restoring %s from %s ...' % (name, path))
            subprocess.run([os.path.join(self.cluster.bindir, 'pg_restore'),
                            '--no-owner', '--dbname',
                            self.libpq_url(name), path], check=True)

    def libpq_url(self, database):
        return 'postgresql://postgres@127.0.0.1:%d/%s' % (self.cluster.port,
                                                          database)

    def keep(self, name, path):
        """Dump server ``name``'s database to ``path`` (whole or not at
        all)."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([os.path.join(self.cluster.bindir, 'pg_dump'),
                        '--format=custom', '--file', path + '.tmp',
                        self.libpq_url(self.meters[name].database)],
                       check=True)
        os.replace(path + '.tmp', path)


def load_cloud(stack, args, dumps):
    """Load (or find restored) both clouds; per server how it went."""
    loaded = {}
    for name in NAMES:
        if dumps.get(name) and os.path.exists(dumps[name]):
            loaded[name] = 'restored from %s' % dumps[name]
            continue
        loader = Loader(stack.servers[name].port, args.nodes,
                        args.servers_per_node)
        nodes_s, consumers_s = loader.load(name)
        loaded[name] = ('%d nodes in %.1f s (4 requests each), %d '
                        'consumers in %.1f s (POST /allocations x%d)'
                        % (args.nodes, nodes_s,
                           args.nodes * args.servers_per_node, consumers_s,
                           BATCH))
        harness.log('load     %-8s %s' % (name, loaded[name]))
        if dumps.get(name):
            stack.keep(name, dumps[name])
    for name in NAMES:
        stack.analyze(name)
    return loaded


# ------------------------------------------------ the load (load side)


def new_tally():
    """A thread's (then a round's) outcome; plain data, since it is
    pickled back from the load process."""
    return {'latencies': collections.defaultdict(list),
            'failures': collections.Counter(), 'examples': [],
            'node_minutes': 0}


def merge(tally, mine):
    for call, values in mine['latencies'].items():
        tally['latencies'][call].extend(values)
    tally['failures'].update(mine['failures'])
    tally['examples'].extend(mine['examples'][:5 - len(tally['examples'])])
    tally['node_minutes'] += mine['node_minutes']


def send(client, tally, call, path, body=None):
    """One request of ``call``; the answer's body on a 200, else None
    (the failure tallied, with an example)."""
    _, method, microversion = CALLS[call]
    status, answer, seconds = client.call(method, path, body, microversion)
    if status == 200:
        tally['latencies'][call].append(seconds)
        return answer
    tally['failures']['%s %s %s' % (method, CALLS[call][0], status)] += 1
    if len(tally['examples']) < 5:
        tally['examples'].append('%s %s -> %s %s' % (method, path, status,
                                                     short(answer)))
    return None


def next_reserved(reserved):
    """MEMORY_MB reserved 512 -> 1024 -> 1536 -> 2048 -> 512: always a
    change, never near the node's usage."""
    return reserved % RESERVED_CYCLE + RESERVED_STEP


def change_inventory(client, tally, node, traits, disabled):
    """What nova's report client sends when a node's inventory changed:
    the inventories read for the generation, then written back with
    MEMORY_MB's reserved changed; with ``traits`` also the node's traits
    (COMPUTE_STATUS_DISABLED per ``disabled``) at the new generation."""
    path = provider_path(node, '/inventories')
    current = send(client, tally, 'get_inventories', path)
    if current is None:
        return
    inventories = current['inventories']
    memory = inventories['MEMORY_MB']
    memory['reserved'] = next_reserved(memory['reserved'])
    answer = send(client, tally, 'put_inventories', path, {
        'resource_provider_generation':
            current['resource_provider_generation'],
        'inventories': inventories})
    if answer is None or not traits:
        return
    send(client, tally, 'put_traits', provider_path(node, '/traits'), {
        'resource_provider_generation': answer['resource_provider_generation'],
        'traits': node_traits(node, disabled)})


def draws(rng, rate):
    """How many of something happen at ``rate`` per node-minute: its
    whole part, and one more with the fraction's probability."""
    whole = int(rate)
    return whole + (rng.random() < rate - whole)


def node_minute(client, tally, shape, minute, node):
    """One node's minute: its resource tracker's requests, then the
    cloud's API reads that fall on it.  The random choices depend on
    (minute, node) alone, so both servers get the same minutes."""
    nodes, servers_per_node, api_reads = shape
    rng = random.Random('%d:%d' % (minute, node))
    send(client, tally, 'allocations', provider_path(node, '/allocations'))
    if (minute + node) % REFRESH_EVERY == 0:
        send(client, tally, 'in_tree',
             '/resource_providers?in_tree=%s' % node_uuid(node))
        send(client, tally, 'aggregates', provider_path(node, '/aggregates'))
        send(client, tally, 'traits', provider_path(node, '/traits'))
        send(client, tally, 'sharing', sharing_path(node))
    if rng.random() < INVENTORY_CHANGE:
        change_inventory(client, tally, node,
                         rng.random() < TRAITS_WITH_CHANGE, minute % 2 == 1)
    consumers, usages, provider_usages = (api_reads * share
                                          for share in API_SHARES)
    for _ in range(draws(rng, consumers)):
        send(client, tally, 'consumer', '/allocations/%s' % consumer_uuid(
            rng.randrange(nodes * servers_per_node)))
    for _ in range(draws(rng, usages)):
        send(client, tally, 'usages', '/usages?project_id=%s'
             % project_uuid(rng.randrange(PROJECTS)))
    for _ in range(draws(rng, provider_usages)):
        send(client, tally, 'provider_usages',
             provider_path(rng.randrange(nodes), '/usages'))


def my_nodes(nodes, process, processes):
    """The nodes load process ``process`` stands in for: no two processes
    ever send the same node's requests, so its writes never race."""
    return range(process, nodes, processes)


def run_threads(threads, client):
    """``client(tally)`` in ``threads`` threads; the merged tally, the
    client CPU it took and when the last thread finished."""
    tally = new_tally()
    lock = threading.Lock()

    def thread():
        mine = new_tally()
        client(mine)
        with lock:
            merge(tally, mine)

    cpu = time.process_time()
    running = [threading.Thread(target=thread) for _ in range(threads)]
    for each in running:
        each.start()
    for each in running:
        each.join()
    tally['client_cpu'] = time.process_time() - cpu
    tally['end'] = time.monotonic()
    return tally


def traffic_round(port, shape, process, processes, first, threads,
                  start_at, seconds, minutes=None):
    """Node-minutes from ``first`` on (load side) until ``seconds`` after
    ``start_at`` or, given ``minutes``, once that many minutes of this
    process's nodes are answered: its nodes in turn, minute after minute.

    A thread takes the next node-minute while time is left and finishes
    it whatever the clock says, so every node-minute taken is answered
    and the next round goes on where this one stopped (``next``).
    """
    nodes = my_nodes(shape[0], process, processes)
    numbers = iter(range(first, sys.maxsize if minutes is None
                         else first + minutes * len(nodes)))
    lock = threading.Lock()
    time.sleep(max(0.0, start_at - time.monotonic()))
    deadline = start_at + seconds

    def client(tally):
        conn = loadgen.Client(port)
        try:
            while time.monotonic() < deadline:
                with lock:
                    number = next(numbers, None)
                if number is None:
                    break
                minute, index = divmod(number, len(nodes))
                node_minute(conn, tally, shape, minute, nodes[index])
                tally['node_minutes'] += 1
        finally:
            conn.close()

    tally = run_threads(threads, client)
    tally['next'] = next(numbers, None)
    if tally['next'] is None:
        tally['next'] = first + minutes * len(nodes)
    return plain(tally)


def plain(tally):
    """The tally with builtin types only, for the trip back."""
    return dict(tally, latencies=dict(tally['latencies']),
                failures=dict(tally['failures']))


def alone_round(port, shape, call, threads, seconds, seed):
    """``call`` alone from ``threads`` threads for ``seconds`` (load
    side).  Reads go to random nodes, consumers and projects; each writer
    thread owns a node and sends the generation the last answer gave."""
    nodes, servers_per_node, _ = shape
    deadline = time.monotonic() + seconds
    counter = iter(range(threads))

    def client(tally):
        conn = loadgen.Client(port)
        number = next(counter)
        rng = random.Random('%s:%d:%d' % (call, seed, number))
        try:
            if call in ('put_inventories', 'put_traits'):
                write_alone(conn, tally, call, number * (nodes // threads),
                            deadline)
            else:
                while time.monotonic() < deadline:
                    read_alone(conn, tally, call, rng, nodes,
                               servers_per_node)
        finally:
            conn.close()

    tally = run_threads(threads, client)
    return plain(tally)


def read_alone(conn, tally, call, rng, nodes, servers_per_node):
    node = rng.randrange(nodes)
    if call == 'consumer':
        path = '/allocations/%s' % consumer_uuid(
            rng.randrange(nodes * servers_per_node))
    elif call == 'usages':
        path = '/usages?project_id=%s' % project_uuid(rng.randrange(PROJECTS))
    elif call == 'in_tree':
        path = '/resource_providers?in_tree=%s' % node_uuid(node)
    elif call == 'sharing':
        path = sharing_path(node)
    else:
        suffix = {'allocations': '/allocations', 'aggregates': '/aggregates',
                  'traits': '/traits', 'get_inventories': '/inventories',
                  'provider_usages': '/usages'}[call]
        path = provider_path(node, suffix)
    send(conn, tally, call, path)


def write_alone(conn, tally, call, node, deadline):
    """PUTs of one node's inventories (reserved stepping) or traits
    (COMPUTE_STATUS_DISABLED toggling), each at the generation the last
    answer gave; one GET first (not counted) for the first generation."""
    suffix = '/inventories' if call == 'put_inventories' else '/traits'
    path = provider_path(node, suffix)
    status, current, _ = conn.call('GET', path, None, CALLS[call][2])
    if status != 200:
        tally['failures']['GET %s %s' % (path, status)] += 1
        return
    generation = current['resource_provider_generation']
    disabled = DISABLED in current.get('traits', ())
    inventories = current.get('inventories')
    while time.monotonic() < deadline:
        if inventories is not None:
            memory = inventories['MEMORY_MB']
            memory['reserved'] = next_reserved(memory['reserved'])
            body = {'inventories': inventories}
        else:
            disabled = not disabled
            body = {'traits': node_traits(node, disabled)}
        body['resource_provider_generation'] = generation
        answer = send(conn, tally, call, path, body)
        if answer is None:
            return
        generation = answer['resource_provider_generation']


# ------------------------------------------------------------- measuring


class Loads:
    """The P load processes; a round runs in all of them at once."""

    def __init__(self, processes):
        self.stack = contextlib.ExitStack()
        self.processes = [self.stack.enter_context(loadgen.LoadProcess())
                          for _ in range(processes)]

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return self.stack.__exit__(*exc_info)

    def each(self, function, arguments):
        """``function(*arguments[p])`` in process p, all at once."""
        with concurrent.futures.ThreadPoolExecutor(len(arguments)) as pool:
            return list(pool.map(lambda pair: pair[0].call(function,
                                                           *pair[1]),
                                 zip(self.processes, arguments)))


def traffic(loads, stack, name, shape, cursors, args, seconds,
            minutes=None):
    """One mixed round against ``name`` (``traffic_round``'s):
    node-minutes, requests, the elapsed time, server and database CPU,
    client CPU, failures."""
    meter = stack.meters[name]
    port = stack.servers[name].port
    before = meter.read()
    start_at = time.monotonic() + 0.2
    processes = len(loads.processes)
    tallies = loads.each(traffic_round, [
        (port, shape, process, processes, cursors[process], args.threads,
         start_at, seconds, minutes) for process in range(processes)])
    used = meter.used(before, meter.read())
    tally = new_tally()
    for process, each in enumerate(tallies):
        merge(tally, each)
        cursors[process] = each['next']
    tally.update(
        elapsed=max(each['end'] for each in tallies) - start_at,
        client_cpu=sum(each['client_cpu'] for each in tallies),
        cpu=used)
    return tally


def describe(label, name, tally):
    requests = sum(len(v) for v in tally['latencies'].values())
    per = max(requests, 1)
    line = ('%-9s %-8s %7.1f req/s %7.1f node-min/s  p50 %6.1f ms  '
            'cpu/req server %5.2f ms, pg %5.2f ms, client %5.2f ms'
            % (label, name, requests / tally['elapsed'],
               tally['node_minutes'] / tally['elapsed'],
               harness.percentile([t for v in tally['latencies'].values()
                           for t in v], 0.5) * 1000,
               tally['cpu']['server'] / per * 1000,
               tally['cpu']['postgres'] / per * 1000,
               tally['client_cpu'] / per * 1000))
    if tally['failures']:
        line += '  FAILED %s' % dict(tally['failures'])
    return line


def measure_traffic(loads, stack, shape, args):
    """A warm-up per server, then the alternating rounds; per server its
    rounds' tallies."""
    processes = len(loads.processes)
    cursors = {name: [0] * processes for name in NAMES}
    rounds = {name: [] for name in NAMES}
    warmups = {}
    for name in NAMES:
        if args.warmup_seconds:
            warmups[name] = traffic(loads, stack, name, shape, cursors[name],
                                    args, args.warmup_seconds,
                                    args.warmup_minutes)
            harness.log(describe('warm-up', name, warmups[name])
                        + '  (%d node-minutes in %.0f s)' % (
                            warmups[name]['node_minutes'],
                            warmups[name]['elapsed']))
    for number in range(1, args.rounds + 1):
        order = NAMES if number % 2 else tuple(reversed(NAMES))
        for name in order:
            tally = traffic(loads, stack, name, shape, cursors[name], args,
                            args.seconds)
            rounds[name].append(tally)
            harness.log(describe('round %d' % number, name, tally))
    return rounds, warmups


def measure_alone(loads, stack, shape, args):
    """Each call type alone per server (``--alone-threads`` threads of
    one load process, by default one, so that no request ever queues
    behind another): server and database CPU per request, median latency.
    """
    found = {name: {} for name in NAMES}
    for number, call in enumerate(CALLS):
        order = NAMES if number % 2 == 0 else tuple(reversed(NAMES))
        for name in order:
            meter = stack.meters[name]
            before = meter.read()
            started = time.monotonic()
            tally = loads.processes[0].call(
                alone_round, stack.servers[name].port, shape, call,
                args.alone_threads, args.alone_seconds, 1)
            elapsed = time.monotonic() - started
            used = meter.used(before, meter.read())
            latencies = tally['latencies'].get(call, [])
            count = max(len(latencies), 1)
            found[name][call] = {
                'count': len(latencies), 'rate': len(latencies) / elapsed,
                'p50': harness.percentile(latencies, 0.5) * 1000,
                'server': used['server'] / count * 1000,
                'postgres': used['postgres'] / count * 1000,
                'failures': tally['failures'],
                'examples': tally['examples']}
            harness.log('alone    %-8s %-48s %6d  p50 %6.2f ms  cpu/req '
                        'server %5.2f ms, pg %5.2f ms%s'
                        % (name, CALLS[call][0], len(latencies),
                           found[name][call]['p50'],
                           found[name][call]['server'],
                           found[name][call]['postgres'],
                           '  FAILED %s' % tally['failures']
                           if tally['failures'] else ''))
    return found


def summarize(rounds):
    """Per server, over its rounds: rates, latencies, CPU, nodes/core."""
    summary = {}
    for name in NAMES:
        tally = new_tally()
        for each in rounds[name]:
            merge(tally, each)
        elapsed = sum(each['elapsed'] for each in rounds[name])
        server = sum(each['cpu']['server'] for each in rounds[name])
        database = sum(each['cpu']['postgres'] for each in rounds[name])
        client = sum(each['client_cpu'] for each in rounds[name])
        every = [t for v in tally['latencies'].values() for t in v]
        requests = max(len(every), 1)
        node_minutes = tally['node_minutes']
        summary[name] = {
            'requests': len(every), 'node_minutes': node_minutes,
            'rate': len(every) / elapsed,
            'node_rate': node_minutes / elapsed,
            'rates': [each['node_minutes'] / each['elapsed']
                      for each in rounds[name]],
            'p50': harness.percentile(every, 0.5) * 1000,
            'p99': harness.percentile(every, 0.99) * 1000,
            'server_cpu': server / requests * 1000,
            'postgres_cpu': database / requests * 1000,
            'client_cpu': client / requests * 1000,
            'per_core': 60 * node_minutes / server if server else 0.0,
            'per_core_pg': (60 * node_minutes / (server + database)
                            if server + database else 0.0),
            'calls': {call: (len(values),
                             harness.percentile(values, 0.5) * 1000,
                             harness.percentile(values, 0.99) * 1000)
                      for call, values in tally['latencies'].items()},
            'failures': tally['failures'], 'examples': tally['examples']}
    return summary


# ----------------------------------------------------------------- report


def ratio(numerator, denominator):
    return numerator / denominator if denominator else float('nan')


def verdict(met):
    return 'met' if met else 'NOT met'


def print_header(args, version, load_before, loaded):
    print('Nova steady traffic: %d compute nodes x %d servers (%d '
          'consumers, %d projects), %d load processes x %d threads '
          '(closed loop), %d rounds x %g s per server, %d %s workers '
          'each' % (args.nodes, args.servers_per_node,
                    args.nodes * args.servers_per_node, PROJECTS,
                    args.processes, args.threads, args.rounds, args.seconds,
                    args.workers, args.wsgi_server))
    print('per node-minute: 1 GET allocations; 1 in %d: in_tree, '
          'aggregates, traits, sharing; %.0f%%: GET+PUT inventories '
          '(1 in %d of those + PUT traits); API reads %.2f (consumer '
          'allocations %.2f, project usages %.2f, provider usages %.2f): '
          '%.2f requests on average'
          % (REFRESH_EVERY, INVENTORY_CHANGE * 100,
             round(1 / TRAITS_WITH_CHANGE), args.api_reads,
             *(args.api_reads * share for share in API_SHARES),
             requests_per_node_minute(args.api_reads)))
    print('machine: %d CPUs, Python %s, %s, upstream openstack-placement '
          '%s; both under %s' % (os.cpu_count(), platform.python_version(),
                                 version, harness.UPSTREAM_VERSION,
                                 args.wsgi_server))
    print('load average (1 min) before the run: %.2f' % load_before)
    for name in NAMES:
        print('load %-8s %s' % (name, loaded[name]))
    print()


def print_traffic(summary):
    print('%-9s %8s %10s  %-17s %7s %7s  %-25s %-18s %s'
          % ('server', 'req/s', 'node-min/s', 'rounds (nm/s)', 'p50 ms',
             'p99 ms', 'cpu ms/req server|pg|cl', 'nodes/core srv|+pg',
             'failed'))
    for name in NAMES:
        row = summary[name]
        print('%-9s %8.1f %10.1f  %-17s %7.1f %7.1f  %7.2f|%5.2f|%5.2f     '
              '%8.0f|%-8.0f  %d'
              % (name, row['rate'], row['node_rate'],
                 ' '.join('%.0f' % r for r in row['rates']), row['p50'],
                 row['p99'], row['server_cpu'], row['postgres_cpu'],
                 row['client_cpu'], row['per_core'], row['per_core_pg'],
                 sum(row['failures'].values())))
    print()
    print('per call in the mixed rounds: count, p50|p99 ms')
    print('%-48s %-5s %-22s %-22s %s' % ('call', 'mv', 'ours', 'upstream',
                                         'p99 below upstream'))
    for call, (label, _, microversion) in CALLS.items():
        cells = []
        for name in NAMES:
            count, p50, p99 = summary[name]['calls'].get(
                call, (0, float('nan'), float('nan')))
            cells.append('%6d %6.1f|%-7.1f' % (count, p50, p99))
        ours_p99 = summary['ours']['calls'].get(call, (0, 0, math.inf))[2]
        up_p99 = summary['upstream']['calls'].get(call, (0, 0, 0))[2]
        print('%-48s %-5s %-22s %-22s %s'
              % (label, microversion, *cells,
                 'yes' if ours_p99 < up_p99 else 'NO'))
    print()


def print_alone(alone, args):
    print('each call alone, %g s per server, %d threads: server (+pg) CPU '
          'ms per request, p50 ms; upstream/ours' % (args.alone_seconds,
                                                     args.alone_threads))
    print('%-48s %-22s %-22s %-14s %-7s %s'
          % ('call', 'ours cpu+pg  p50', 'upstream cpu+pg  p50',
             'x cpu|+pg', 'x p50', 'targets (cpu>=5x, p50>=5x, ours cpu<=1)'))
    for call, (label, _, _) in CALLS.items():
        ours, upstream = alone['ours'][call], alone['upstream'][call]
        cpu_x = ratio(upstream['server'], ours['server'])
        both_x = ratio(upstream['server'] + upstream['postgres'],
                       ours['server'] + ours['postgres'])
        p50_x = ratio(upstream['p50'], ours['p50'])
        print('%-48s %5.2f+%-5.2f %6.2f   %5.2f+%-5.2f %6.2f   %5.1f|%-5.1f    '
              '%5.1f   %s %s %s'
              % (label, ours['server'], ours['postgres'], ours['p50'],
                 upstream['server'], upstream['postgres'], upstream['p50'],
                 cpu_x, both_x, p50_x, verdict(cpu_x >= TARGET_CALL),
                 verdict(p50_x >= TARGET_CALL),
                 verdict(ours['server'] <= TARGET_CPU_MS)))
    print()


def print_ratios(summary):
    ours, upstream = summary['ours'], summary['upstream']
    per_core = ratio(ours['per_core'], upstream['per_core'])
    per_core_pg = ratio(ours['per_core_pg'], upstream['per_core_pg'])
    print('compute nodes served per core (60 x node-minutes / server '
          'CPU-s): ours %.0f, upstream %.0f: %.2fx (target >= %gx: %s)'
          % (ours['per_core'], upstream['per_core'], per_core,
             TARGET_NODES_PER_CORE,
             verdict(per_core >= TARGET_NODES_PER_CORE)))
    print('... with PostgreSQL\'s CPU added: ours %.0f, upstream %.0f: '
          '%.2fx (target >= %gx: %s)'
          % (ours['per_core_pg'], upstream['per_core_pg'], per_core_pg,
             TARGET_NODES_PER_CORE,
             verdict(per_core_pg >= TARGET_NODES_PER_CORE)))
    print('node-minutes answered per second: %.2fx; overall p99 %.1f ms '
          'against %.1f (below upstream\'s: %s)'
          % (ratio(ours['node_rate'], upstream['node_rate']), ours['p99'],
             upstream['p99'], verdict(ours['p99'] < upstream['p99'])))


def print_failures(summary, alone, warmups):
    """Every answer but a 200, wherever it came; False if there was one.
    """
    ok = True
    sources = [('rounds', summary), ('warm-up', warmups)]
    for name in NAMES:
        for where, found in sources:
            if name in found and found[name]['failures']:
                ok = False
                print('%s %s FAILED: %s' % (name, where,
                                            dict(found[name]['failures'])))
                for example in found[name]['examples']:
                    print('    ' + example)
        for call, row in (alone or {}).get(name, {}).items():
            if row['failures']:
                ok = False
                print('%s alone %s FAILED: %s' % (name, call,
                                                  dict(row['failures'])))
                for example in row['examples']:
                    print('    ' + example)
    return ok


def report(args, version, load_before, loaded, summary, alone, warmups):
    print_header(args, version, load_before, loaded)
    print_traffic(summary)
    if alone:
        print_alone(alone, args)
    print_ratios(summary)
    return print_failures(summary, alone, warmups)


# ------------------------------------------------------------------ main


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    parser.add_argument('--wsgi-server', choices=('gunicorn', 'uwsgi'),
                        default='gunicorn',
                        help='what both servers run under (default '
                        'gunicorn; uwsgi: kolla-ansible\'s uwsgi.ini)')
    parser.add_argument('--nodes', type=int, default=1000,
                        help='compute nodes (default 1000)')
    parser.add_argument('--servers-per-node', type=int, default=20,
                        help='consumers on each node (default 20)')
    parser.add_argument('--api-reads', type=float, default=2.0,
                        help='conductor/API reads per node-minute, split '
                             '2:1:1 over GET /allocations/{consumer}, GET '
                             '/usages and GET .../usages (default 2)')
    parser.add_argument('--workers', type=int, default=harness.WORKERS,
                        help='workers of each server (default %d)'
                        % harness.WORKERS)
    parser.add_argument('--processes', type=int, default=2,
                        help='load processes, each standing in for its '
                             'share of the nodes (default 2)')
    parser.add_argument('--threads', type=int, default=4,
                        help='node-minutes in flight per load process '
                             '(default 4)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='measured rounds per server (default 3)')
    parser.add_argument('--seconds', type=float, default=20,
                        help='seconds a round lasts (default 20)')
    parser.add_argument('--warmup-minutes', type=int,
                        default=4 * REFRESH_EVERY,
                        help='unmeasured traffic per server first: this '
                             'many minutes of the cloud (default %d: '
                             'every node refreshes its associations four '
                             'times, so that what each worker keeps is '
                             'nearly as it is all day), or '
                             '--warmup-seconds if sooner'
                             % (4 * REFRESH_EVERY))
    parser.add_argument('--warmup-seconds', type=float, default=120,
                        help='the longest warm-up per server (default '
                             '120; 0 skips it)')
    parser.add_argument('--alone-seconds', type=float, default=4,
                        help='seconds each call type runs alone per '
                             'server (default 4; 0 skips that part)')
    parser.add_argument('--alone-threads', type=int, default=1,
                        help='threads sending a call type alone '
                             '(default 1: with two, gunicorn often hands '
                             'both connections to one worker, and the '
                             'median doubles from run to run)')
    parser.add_argument('--keep-data', action='store_true',
                        help='keep each loaded database as a dump in %s '
                             'and restore it on the next run of the same '
                             'shape (PostgreSQL only)'
                             % os.path.join(harness.CACHE, 'traffic'))
    args = parser.parse_args(argv)
    for name in ('nodes', 'servers_per_node', 'workers', 'processes',
                 'threads', 'rounds', 'alone_threads'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))
    if args.nodes < 4 * args.processes * args.threads:
        parser.error('--nodes must be at least 4 x processes x threads, so '
                     'a node is never in flight twice')
    if args.api_reads < 0:
        parser.error('--api-reads must not be negative')
    if args.keep_data and args.backend != 'postgresql':
        parser.error('--keep-data keeps PostgreSQL dumps only')
    return args


def run(args):
    """Load, measure; what the report needs."""
    dumps = dump_paths(args) if args.keep_data else {}
    shape = (args.nodes, args.servers_per_node, args.api_reads)
    with KeptStack({'bench_%s' % name: path for name, path in dumps.items()},
                   workers=args.workers, backend=args.backend,
                   exited_backends=True,
                   wsgi_server=args.wsgi_server) as stack, \
            Loads(args.processes) as loads:
        loaded = load_cloud(stack, args, dumps)
        rounds, warmups = measure_traffic(loads, stack, shape, args)
        alone = (measure_alone(loads, stack, shape, args)
                 if args.alone_seconds else None)
        version = stack.database_version()
    summary = summarize(rounds)
    warm = {name: {'failures': warmups[name]['failures'],
                   'examples': warmups[name]['examples']}
            for name in warmups}
    return version, loaded, summary, alone, warm


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    try:
        version, loaded, summary, alone, warmups = run(args)
    except KeyboardInterrupt:
        harness.log('interrupted; servers and database stopped')
        return 130
    harness.log('done in %.0f s' % (time.monotonic() - started))
    return 0 if report(args, version, load_before, loaded, summary, alone,
                       warmups) else 1


if __name__ == '__main__':
    sys.exit(main())
