"""GET /allocation_candidates latency: ours against upstream 16.0.0, one run.

    .venv/bin/python benchmarks/candidates.py [--flat-nodes N]
        [--flat-large N] [--nested-nodes N,N] [--wide-nodes N]
        [--wide-groups G,G] [--requests R] [--warmup W]
        [--query-seconds S] [--timeout T] [--wide-probe-timeout T]
        [--no-analyze] [--clients C] [--scenarios flat,nested,wide]

Both servers run side by side (same PostgreSQL cluster, a database each,
two gunicorn workers each, 127.0.0.1 only) and get the same providers,
inventories, traits, aggregates and allocations, loaded through the REST
API from C client threads, with the same uuids, then ANALYZEd.  Each
scenario gets a fresh stack:

- flat: N compute nodes (VCPU, MEMORY_MB, DISK_GB on most; traits, host
  aggregates), three sharing storage providers, allocations on a third
  of the nodes and a few nodes with no memory left; then, with
  --flat-large, ours alone grows to that many nodes (upstream is not
  loaded: too slow to load).
- nested: compute nodes with two NUMA children and a PF under each;
  measured at each size of --nested-nodes, growing in place.
- wide: compute nodes with eight one-VGPU children each (some in use);
  requests of 4..8 isolated VGPU groups.  Upstream needs tens of seconds
  for 5 groups and never finishes 6 or more: groups above
  --wide-upstream-max-groups get one probe with --wide-probe-timeout.

Every query is sent sequentially, microversion 1.39: W warm-up requests,
then up to R timed ones (fewer once S seconds are spent, at least five
unless one request takes over 5 s).  Reported per query: median and p95
latency, upstream/ours, the number of allocation requests from each, and
a check: without a limit the SETS of allocation requests (and the
provider summaries) must be equal, a limited answer must be a subset of
the unlimited one, and every count must match the count computed from
the data model (the only check at sizes upstream does not have).
"""

import argparse
import concurrent.futures
import functools
import http.client
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
import uuid


import harness

NAMES = ('ours', 'upstream')
MICROVERSION = '1.39'
NAMESPACE = uuid.UUID('0f4b6c5e-3f36-4b8e-9a0b-7c1f0d3c2a11')
# Upstream's gunicorn gets the worker timeout ours has (120 s), not
# gunicorn's 30 s default, or its slowest answers would be killed.
UPSTREAM_WORKER_TIMEOUT = 120
SLOW_SECONDS = 5.0
MIN_REQUESTS = 5
TARGET_RATIO = 10.0
TARGET_LIMIT_RATIO = 5.0
TARGET_LIST_RATIO = 3.0
TARGET_WIDE_MS = 100.0
ALLOCATION_BATCH = 50
PROJECT = str(uuid.uuid5(NAMESPACE, 'project'))
USER = str(uuid.uuid5(NAMESPACE, 'user'))
CUSTOM_TRAITS = ('CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B')


def uid(*parts):
    return str(uuid.uuid5(NAMESPACE, '/'.join(str(p) for p in parts)))


def inventory(total, reserved=0, ratio=1.0, max_unit=None):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total if max_unit is None else max_unit,
            'step_size': 1, 'allocation_ratio': ratio}


def provider(name, parent=None, inventories=None, traits=(),
             aggregates=()):
    return {'uuid': uid('rp', name), 'name': name, 'parent': parent,
            'inventories': inventories or {}, 'traits': list(traits),
            'aggregates': list(aggregates)}


def allocation(consumer, resources_by_provider):
    return (uid('consumer', consumer),
            {'allocations': {rp: {'resources': resources}
                             for rp, resources in
                             resources_by_provider.items()},
             'project_id': PROJECT, 'user_id': USER,
             'consumer_generation': None, 'consumer_type': 'INSTANCE'})


# ------------------------------------------------------------------ flat

HOST_AGGS = [uid('agg', 'host', k) for k in range(4)]
SHARED_STORAGE = 3
STORAGE_AGGS = [uid('agg', 'storage', k) for k in range(SHARED_STORAGE)]
FLAT_VCPU = inventory(64, ratio=4.0)
FLAT_MEMORY = inventory(262144, reserved=2048)
FLAT_DISK = inventory(2000, reserved=10)
FLAT_INSTANCE = {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 40}


class Flat:
    """Compute nodes i = 0, 1, ...; every property a function of i.

    - local DISK_GB unless i % 4 == 0; in a storage aggregate (its DISK_GB
      from a sharing provider) when i % 4 == 0 or i % 8 == 1, so an
      eighth of the nodes have both and two candidates each;
    - HW_CPU_X86_AVX2 when (i // 2) % 2 == 0 (half, mixing all three);
    - host aggregate AGG(k+1), k = (i // 10) % 5, none when k == 4;
    - 1-3 instances when i % 10 < 3; memory used up when i % 50 == 7.
    """

    @staticmethod
    def local_disk(i):
        return i % 4 != 0

    @staticmethod
    def storage(i):
        if i % 4 == 0 or i % 8 == 1:
            return (i // 4) % SHARED_STORAGE
        return None

    @staticmethod
    def avx2(i):
        return (i // 2) % 2 == 0

    @staticmethod
    def host_agg(i):
        k = (i // 10) % 5
        return None if k == 4 else k

    @staticmethod
    def memory_full(i):
        return i % 50 == 7

    @staticmethod
    def sharing_providers():
        return [[provider('flat-shared-%d' % k,
                          inventories={'DISK_GB': inventory(10000000)},
                          traits=['MISC_SHARES_VIA_AGGREGATE'],
                          aggregates=[STORAGE_AGGS[k]])]
                for k in range(SHARED_STORAGE)]

    @classmethod
    def node(cls, i):
        inventories = {'VCPU': FLAT_VCPU, 'MEMORY_MB': FLAT_MEMORY}
        if cls.local_disk(i):
            inventories['DISK_GB'] = FLAT_DISK
        traits = ['HW_CPU_X86_SSE42', 'COMPUTE_NET_ATTACH_INTERFACE']
        if cls.avx2(i):
            traits.append('HW_CPU_X86_AVX2')
        aggregates = []
        if cls.host_agg(i) is not None:
            aggregates.append(HOST_AGGS[cls.host_agg(i)])
        if cls.storage(i) is not None:
            aggregates.append(STORAGE_AGGS[cls.storage(i)])
        return provider('flat-cn-%05d' % i, inventories=inventories,
                        traits=traits, aggregates=aggregates)

    @classmethod
    def trees(cls, start, stop):
        return [[cls.node(i)] for i in range(start, stop)]

    @classmethod
    def allocations(cls, start, stop):
        found = []
        for i in range(start, stop):
            node = uid('rp', 'flat-cn-%05d' % i)
            disk = (node if cls.local_disk(i)
                    else uid('rp', 'flat-shared-%d' % cls.storage(i)))
            if i % 10 < 3:
                for n in range(i % 3 + 1):
                    compute = {k: v for k, v in FLAT_INSTANCE.items()
                               if k != 'DISK_GB'}
                    resources = {node: compute}
                    resources.setdefault(disk, {})['DISK_GB'] = (
                        FLAT_INSTANCE['DISK_GB'])
                    found.append(allocation(('flat', i, n), resources))
            if cls.memory_full(i):
                found.append(allocation(('flat', i, 'big'), {node: {
                    'VCPU': 1, 'MEMORY_MB': 262144 - 2048}}))
        return found

    # Counts of allocation requests, from the data model.
    @classmethod
    def expect_simple(cls, count):
        return sum(cls.local_disk(i) + (cls.storage(i) is not None)
                   for i in range(count) if not cls.memory_full(i))

    @classmethod
    def expect_listed(cls, count):
        # One provider with room for all three classes: local disk.
        return sum(1 for i in range(count)
                   if cls.local_disk(i) and not cls.memory_full(i))

    @classmethod
    def expect_traits_member_of(cls, count):
        # The sharing providers are in no host aggregate, and member_of
        # applies to every provider of the group: local disk only.
        return sum(1 for i in range(count)
                   if not cls.memory_full(i) and cls.avx2(i)
                   and cls.host_agg(i) in (0, 1) and cls.local_disk(i))


SIMPLE = 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10'


def flat_queries(count):
    return [
        Query('simple', SIMPLE, Flat.expect_simple(count)),
        Query('traits+member_of', SIMPLE + '&required=HW_CPU_X86_AVX2'
              '&member_of=in:%s,%s' % (HOST_AGGS[0], HOST_AGGS[1]),
              Flat.expect_traits_member_of(count)),
        Query('simple limit=50', SIMPLE + '&limit=50',
              min(50, Flat.expect_simple(count)), full='simple'),
        # What nova's scheduler sends by default: no disabled computes,
        # at most 1,000 candidates (no node here is disabled).
        Query('nova default', SIMPLE + '&required=!COMPUTE_STATUS_DISABLED'
              '&limit=1000', min(1000, Flat.expect_simple(count)),
              full='simple'),
        ListQuery('GET /resource_providers', '', count + SHARED_STORAGE),
        ListQuery('GET /resource_providers?resources',
                  SIMPLE, Flat.expect_listed(count)),
    ]


# ---------------------------------------------------------------- nested

NUMA_VCPU = inventory(32, ratio=4.0)
NUMA_MEMORY = inventory(131072, reserved=1024)
PF_VF = inventory(16)
PF_BW = inventory(25000000)


class Nested:
    """Compute i: root (DISK_GB), NUMA j = 0, 1 (VCPU, MEMORY_MB,
    HW_NUMA_ROOT), PF j under NUMA j (SRIOV_NET_VF, NET_BW_EGR).

    - root HW_CPU_X86_AVX2 when i % 2 == 0;
    - PF 0 on CUSTOM_PHYSNET_A, PF 1 on A when i is odd, else B;
    - an instance on NUMA 0 / PF 0 when i % 5 == 0; NUMA 1's memory used
      up when i % 25 == 3; PF 0's VFs used up when i % 40 == 11.
    """

    @staticmethod
    def name(i, *parts):
        return '-'.join(['nested-cn-%05d' % i] + [str(p) for p in parts])

    @staticmethod
    def avx2(i):
        return i % 2 == 0

    @staticmethod
    def physnet(i, j):
        return 'A' if j == 0 or i % 2 == 1 else 'B'

    @staticmethod
    def memory_free(i, j):
        return not (j == 1 and i % 25 == 3)

    @staticmethod
    def vf_free(i, j):
        return not (j == 0 and i % 40 == 11)

    @classmethod
    def tree(cls, i):
        traits = ['HW_CPU_X86_SSE42']
        if cls.avx2(i):
            traits.append('HW_CPU_X86_AVX2')
        root = provider(cls.name(i), traits=traits,
                        inventories={'DISK_GB': FLAT_DISK})
        tree = [root]
        for j in range(2):
            numa = provider(cls.name(i, 'numa', j), parent=root['uuid'],
                            inventories={'VCPU': NUMA_VCPU,
                                         'MEMORY_MB': NUMA_MEMORY},
                            traits=['HW_NUMA_ROOT'])
            pf = provider(cls.name(i, 'numa', j, 'pf'),
                          parent=numa['uuid'],
                          inventories={'SRIOV_NET_VF': PF_VF,
                                       'NET_BW_EGR_KILOBIT_PER_SEC': PF_BW},
                          traits=['CUSTOM_PHYSNET_' + cls.physnet(i, j)])
            tree += [numa, pf]
        return tree

    @classmethod
    def trees(cls, start, stop):
        return [cls.tree(i) for i in range(start, stop)]

    @classmethod
    def allocations(cls, start, stop):
        found = []
        for i in range(start, stop):
            root = uid('rp', cls.name(i))
            numa = [uid('rp', cls.name(i, 'numa', j)) for j in range(2)]
            pf = [uid('rp', cls.name(i, 'numa', j, 'pf')) for j in range(2)]
            if i % 5 == 0:
                found.append(allocation(('nested', i), {
                    root: {'DISK_GB': 20},
                    numa[0]: {'VCPU': 4, 'MEMORY_MB': 8192},
                    pf[0]: {'SRIOV_NET_VF': 1,
                            'NET_BW_EGR_KILOBIT_PER_SEC': 1000000}}))
            if not cls.memory_free(i, 1):
                found.append(allocation(('nested', i, 'mem'), {
                    numa[1]: {'VCPU': 1, 'MEMORY_MB': 131072 - 1024}}))
            if not cls.vf_free(i, 0):
                found.append(allocation(('nested', i, 'vf'), {
                    pf[0]: {'SRIOV_NET_VF': 16}}))
        return found

    @classmethod
    def expect_granular(cls, count):
        total = 0
        for i in range(count):
            compute = sum(cls.memory_free(i, j) for j in range(2))
            nic = sum(1 for j in range(2)
                      if cls.physnet(i, j) == 'A' and cls.vf_free(i, j))
            total += compute * nic
        return total

    @classmethod
    def expect_same_subtree(cls, count):
        return sum(cls.vf_free(i, j) for i in range(count)
                   for j in range(2))

    @classmethod
    def expect_root_required(cls, count):
        # Unnumbered: VCPU and MEMORY_MB may come from different NUMAs.
        return sum(2 * sum(cls.memory_free(i, j) for j in range(2))
                   for i in range(count) if cls.avx2(i))


GRANULAR = ('resources1=VCPU:2,MEMORY_MB:1024&resources2=SRIOV_NET_VF:1'
            '&required2=CUSTOM_PHYSNET_A&group_policy=isolate')


def nested_queries(count):
    return [
        Query('granular isolate', GRANULAR, Nested.expect_granular(count)),
        Query('granular isolate limit=50', GRANULAR + '&limit=50',
              min(50, Nested.expect_granular(count)),
              full='granular isolate'),
        Query('same_subtree',
              'resources_COMPUTE=VCPU:1&resources_NIC=SRIOV_NET_VF:1'
              '&same_subtree=_COMPUTE,_NIC&group_policy=none',
              Nested.expect_same_subtree(count)),
        Query('root_required',
              'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10'
              '&root_required=HW_CPU_X86_AVX2',
              Nested.expect_root_required(count)),
    ]


# ------------------------------------------------------------------ wide

WIDE_CHILDREN = 8


class Wide:
    """Compute i: root (VCPU, MEMORY_MB) with eight children of one VGPU
    each; child 0 is in use when i % 4 == 0."""

    @staticmethod
    def name(i, *parts):
        return '-'.join(['wide-cn-%03d' % i] + [str(p) for p in parts])

    @staticmethod
    def used(i, k):
        return i % 4 == 0 and k == 0

    @classmethod
    def tree(cls, i):
        root = provider(cls.name(i), inventories={
            'VCPU': FLAT_VCPU, 'MEMORY_MB': FLAT_MEMORY})
        return [root] + [
            provider(cls.name(i, 'pgpu', k), parent=root['uuid'],
                     inventories={'VGPU': inventory(1)})
            for k in range(WIDE_CHILDREN)]

    @classmethod
    def trees(cls, count):
        return [cls.tree(i) for i in range(count)]

    @classmethod
    def allocations(cls, count):
        return [allocation(('wide', i, k), {
            uid('rp', cls.name(i, 'pgpu', k)): {'VGPU': 1}})
            for i in range(count) for k in range(WIDE_CHILDREN)
            if cls.used(i, k)]

    @classmethod
    def children(cls, count):
        """child uuid -> (root uuid, in use)"""
        return {uid('rp', cls.name(i, 'pgpu', k)):
                (uid('rp', cls.name(i)), cls.used(i, k))
                for i in range(count) for k in range(WIDE_CHILDREN)}

    @classmethod
    def expect(cls, count, groups):
        free = [sum(not cls.used(i, k) for k in range(WIDE_CHILDREN))
                for i in range(count)]
        # Mappings tell the groups apart: ordered picks, not combinations.
        return sum(math.perm(f, groups) for f in free if f >= groups)


def wide_query(groups, limit=10):
    return '&'.join(['resources%d=VGPU:1' % g for g in range(1, groups + 1)]
                    + ['group_policy=isolate', 'limit=%d' % limit])


def wide_problems(body, groups, children):
    """What is wrong with a wide answer (empty when nothing)."""
    problems = []
    seen = set()
    for areq in body.get('allocation_requests', []):
        allocations = areq['allocations']
        rps = set(allocations)
        roots = {children[rp][0] if rp in children else None for rp in rps}
        if len(rps) != groups or None in roots or len(roots) != 1:
            problems.append('not %d children of one root: %s'
                            % (groups, sorted(rps)))
        if any(a['resources'] != {'VGPU': 1} for a in allocations.values()):
            problems.append('not VGPU:1 each: %s' % allocations)
        if any(children.get(rp, (None, False))[1] for rp in rps):
            problems.append('a VGPU in use offered: %s' % sorted(rps))
        mappings = areq.get('mappings', {})
        if (sorted(mappings) != sorted(str(g) for g in range(1, groups + 1))
                or any(len(v) != 1 for v in mappings.values())
                or {v[0] for v in mappings.values()} != rps):
            problems.append('bad mappings: %s' % mappings)
        key = canonical(areq)
        if key in seen:
            problems.append('duplicate: %s' % mappings)
        seen.add(key)
    summaries = body.get('provider_summaries', {})
    wanted = {rp for areq in body.get('allocation_requests', [])
              for rp in areq['allocations']}
    if wanted - set(summaries):
        problems.append('%d allocated providers not summarized'
                        % len(wanted - set(summaries)))
    return problems


# ------------------------------------------------------------ HTTP, load


class Connection:
    """One loopback connection; reopened after the server closes it."""

    def __init__(self, port, timeout):
        self.conn = http.client.HTTPConnection('127.0.0.1', port,
                                               timeout=timeout)

    def request(self, method, path, body=None):
        """(status, raw body, seconds); a transport error raises OSError
        (socket.timeout on timeout) or HTTPException."""
        headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
                   'OpenStack-API-Version': 'placement ' + MICROVERSION}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers['Content-Type'] = 'application/json'
        # A kept-alive connection the server closed while it was idle
        # fails before any answer: that request is sent again, once, on a
        # new connection.
        for attempt in (1, 2):
            reused = self.conn.sock is not None
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=payload,
                                  headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
            except (BrokenPipeError, ConnectionResetError,
                    http.client.RemoteDisconnected):
                self.conn.close()
                if attempt == 2 or not reused:
                    raise
                continue
            except BaseException:
                self.conn.close()
                raise
            return response.status, raw, time.perf_counter() - started

    def json(self, method, path, body=None, expect=(200,)):
        status, raw, _ = self.request(method, path, body)
        if status not in expect:
            raise RuntimeError('%s %s: %s %s' % (method, path, status,
                                                 raw[:300]))
        return json.loads(raw) if raw else None

    def close(self):
        self.conn.close()


class Loader:
    """Providers (a tree at a time, parents first) and allocations, from
    ``clients`` threads."""

    def __init__(self, port, clients, timeout=120):
        self.port = port
        self.clients = clients
        self.timeout = timeout
        self.local = threading.local()
        self.requests = 0
        self.kinds = {}     # 'PUT traits' -> (seconds, requests)
        self.lock = threading.Lock()

    def conn(self):
        if not hasattr(self.local, 'conn'):
            self.local.conn = Connection(self.port, self.timeout)
        return self.local.conn

    def call(self, method, path, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.conn().json(method, path, *args, **kwargs)
        finally:
            self.count(method, path, time.perf_counter() - started)

    def count(self, method, path, seconds):
        kind = '%s %s' % (method, path.rsplit('/', 1)[-1]
                          if path.count('/') > 2 else path)
        with self.lock:
            self.requests += 1
            total, number = self.kinds.get(kind, (0.0, 0))
            self.kinds[kind] = (total + seconds, number + 1)

    def parallel(self, function, items):
        with concurrent.futures.ThreadPoolExecutor(self.clients) as pool:
            futures = [pool.submit(function, item) for item in items]
            try:
                for future in concurrent.futures.as_completed(futures):
                    future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

    def tree(self, tree):
        for rp in tree:
            body = {'name': rp['name'], 'uuid': rp['uuid']}
            if rp['parent']:
                body['parent_provider_uuid'] = rp['parent']
            base = '/resource_providers/%s' % rp['uuid']
            generation = self.call('POST', '/resource_providers',
                                   body)['generation']
            if rp['inventories']:
                generation = self.call('PUT', base + '/inventories', {
                    'resource_provider_generation': generation,
                    'inventories': rp['inventories']}
                )['resource_provider_generation']
            if rp['traits']:
                generation = self.call('PUT', base + '/traits', {
                    'resource_provider_generation': generation,
                    'traits': rp['traits']})['resource_provider_generation']
            if rp['aggregates']:
                self.call('PUT', base + '/aggregates', {
                    'resource_provider_generation': generation,
                    'aggregates': rp['aggregates']})

    def load(self, trees, allocations):
        started = time.perf_counter()
        before = self.requests
        for trait in CUSTOM_TRAITS:
            self.call('PUT', '/traits/' + trait, expect=(201, 204))
        self.parallel(self.tree, trees)
        batches = [dict(allocations[n:n + ALLOCATION_BATCH])
                   for n in range(0, len(allocations), ALLOCATION_BATCH)]
        # One batch at a time: upstream answers concurrent POST
        # /allocations on PostgreSQL with 500s (InFailedSqlTransaction).
        for batch in batches:
            self.allocate(batch)
        return self.requests - before, time.perf_counter() - started

    def allocate(self, batch):
        """POST /allocations, again after a provider generation conflict
        (should something else write at the same time)."""
        for attempt in range(20):
            status, raw, seconds = self.conn().request(
                'POST', '/allocations', batch)
            self.count('POST', '/allocations', seconds)
            if status == 204:
                return
            if status != 409 or b'concurrent_update' not in raw:
                break
            time.sleep(0.01 * attempt)
        raise RuntimeError('POST /allocations: %s %s' % (status, raw[:300]))


def load(stack, names, trees, allocations, args, what):
    for name in names:
        loader = Loader(stack.servers[name].port, args.clients)
        requests, seconds = loader.load(trees, allocations)
        harness.log('loaded %-8s %s: %d providers, %d consumers, '
                    '%d requests in %.1fs (%.0f/s)'
                    % (name, what, sum(len(t) for t in trees),
                       len(allocations), requests, seconds,
                       requests / seconds))
        harness.log('    mean ms: ' + ', '.join(
            '%s %.1f' % (kind, total / number * 1000)
            for kind, (total, number) in sorted(loader.kinds.items())))
        if args.analyze:
            # Our capacity query's plan differs a lot with and without
            # statistics.
            stack.analyze(name)


# ------------------------------------------------------------- measuring


class Query:

    def __init__(self, label, query, expected, full=None):
        self.label = label
        self.query = query
        self.expected = expected
        self.full = full    # label of the same query without the limit

    @property
    def path(self):
        return '/allocation_candidates?' + self.query


class ListQuery(Query):
    """GET /resource_providers, all or filtered; its answer compared as
    the set of providers listed."""

    @property
    def path(self):
        return '/resource_providers' + ('?' + self.query if self.query
                                        else '')


def canonical(areq):
    allocations = frozenset(
        (rp, rc, amount) for rp, value in areq['allocations'].items()
        for rc, amount in value['resources'].items())
    mappings = frozenset((group, frozenset(rps)) for group, rps in
                         areq.get('mappings', {}).items())
    return allocations, mappings


def canonical_summaries(body):
    return {rp: json.dumps(summary, sort_keys=True) if 'traits' not in
            summary else json.dumps(dict(summary,
                                         traits=sorted(summary['traits'])),
                                    sort_keys=True)
            for rp, summary in body.get('provider_summaries', {}).items()}


class Result:
    """One query on one server."""

    def __init__(self):
        self.latencies = []
        self.failed = []          # non-200 answers, transport errors
        self.timeout = None       # seconds, when the first request timed out
        self.skipped = None       # why not measured
        self.body = None          # the first answer, decoded
        self.cpu = None

    @property
    def count(self):
        if self.body is None:
            return None
        if 'resource_providers' in self.body:
            return len(self.body['resource_providers'])
        return len(self.body.get('allocation_requests', []))

    @functools.cached_property
    def areqs(self):
        """The answer as a set: allocation requests, or providers."""
        if self.body is None:
            return None
        if 'resource_providers' in self.body:
            return {json.dumps(rp, sort_keys=True)
                    for rp in self.body['resource_providers']}
        return {canonical(a) for a in self.body['allocation_requests']}

    @property
    def p50(self):
        return statistics.median(self.latencies) * 1000 if (
            self.latencies) else None

    @property
    def p95(self):
        return harness.percentile(self.latencies, 0.95) * 1000 if (
            self.latencies) else None

    def cell(self):
        if self.skipped:
            return self.skipped
        if self.timeout is not None:
            return 'timeout (>%g s)' % self.timeout
        if not self.latencies:
            return 'failed'
        return None


def timed(conn, path):
    """(status, raw, seconds), or (None, exception name, seconds)."""
    started = time.perf_counter()
    try:
        return conn.request('GET', path)
    except (OSError, http.client.HTTPException) as exc:
        return None, type(exc).__name__, time.perf_counter() - started


def measure(stack, name, query, args, timeout=None):
    """Warm-up, then timed sequential requests of one query."""
    result = Result()
    timeout = timeout or args.timeout
    conn = Connection(stack.servers[name].port, timeout)
    meter = stack.meters[name]
    before = meter.read()
    status, raw, seconds = timed(conn, query.path)
    if status is None and raw in ('timeout', 'TimeoutError'):
        result.timeout = timeout
        return result
    if status != 200:
        result.failed.append('%s %s' % (status, raw[:300]))
        return result
    result.body = json.loads(raw)
    if seconds > SLOW_SECONDS:
        # Too slow to repeat: the one answer is the figure.
        result.latencies = [seconds]
        result.cpu = {k: v * 1000 for k, v in
                      meter.used(before, meter.read()).items()}
        return result
    for _ in range(args.warmup - 1):
        timed(conn, query.path)
    before = meter.read()
    started = time.monotonic()
    for n in range(args.requests):
        if (n >= MIN_REQUESTS
                and time.monotonic() - started > args.query_seconds):
            break
        status, raw, seconds = timed(conn, query.path)
        if status == 200:
            result.latencies.append(seconds)
        else:
            result.failed.append('%s %s' % (status, raw[:300]))
            if status is None and raw in ('timeout', 'TimeoutError'):
                break
        if seconds > SLOW_SECONDS and len(result.latencies) >= 1:
            break
    used = meter.used(before, meter.read())
    done = max(len(result.latencies) + len(result.failed), 1)
    result.cpu = {k: v / done * 1000 for k, v in used.items()}
    conn.close()
    return result


class Row:
    """One query of one scenario: both servers' results and the checks."""

    def __init__(self, scenario, query, results):
        self.scenario = scenario
        self.query = query
        self.results = results    # name -> Result (upstream may be absent)
        self.problems = []
        self.notes = []

    def result(self, name):
        return self.results.get(name)


def check(rows):
    """Compare answers of each row of one scenario (size)."""
    by_label = {row.query.label: row for row in rows}
    for row in rows:
        ours, upstream = row.result('ours'), row.result('upstream')
        for name, result in row.results.items():
            if result.failed:
                row.problems.append('%s failed: %s'
                                    % (name, result.failed[0]))
            if (result.count is not None and row.query.expected is not None
                    and result.count != row.query.expected):
                row.problems.append('%s returned %d, data model says %d'
                                    % (name, result.count,
                                       row.query.expected))
        full = by_label.get(row.query.full) if row.query.full else None
        if full is None:
            if (ours is not None and upstream is not None
                    and ours.body is not None
                    and upstream.body is not None):
                compare_full(row, ours, upstream)
            continue
        for name, result in row.results.items():
            if result.body is None:
                continue
            for source, reference in full.results.items():
                if reference.body is None:
                    continue
                extra = result.areqs - reference.areqs
                if extra:
                    row.problems.append(
                        '%s: %d of its %d not in %s\'s unlimited answer, '
                        'e.g. %s' % (name, len(extra), result.count, source,
                                     describe(next(iter(extra)))))
        if not row.problems:
            row.notes.append('subset of unlimited')
    for row in rows:
        if not row.problems and not row.notes:
            row.notes.append('count = model')


def compare_full(row, ours, upstream):
    only_ours = ours.areqs - upstream.areqs
    only_upstream = upstream.areqs - ours.areqs
    if only_ours or only_upstream:
        text = ('allocation requests differ: %d only ours, %d only '
                'upstream' % (len(only_ours), len(only_upstream)))
        for label, extra in (('only ours', only_ours),
                             ('only upstream', only_upstream)):
            for item in sorted(extra, key=describe)[:2]:
                text += '\n      %s: %s' % (label, describe(item))
        row.problems.append(text)
    if ours.count != len(ours.areqs):
        row.problems.append('ours has %d duplicate allocation requests'
                            % (ours.count - len(ours.areqs)))
    mine = canonical_summaries(ours.body)
    theirs = canonical_summaries(upstream.body)
    if mine != theirs:
        missing = set(theirs) - set(mine)
        extra = set(mine) - set(theirs)
        differ = [rp for rp in set(mine) & set(theirs)
                  if mine[rp] != theirs[rp]]
        text = ('provider summaries differ: %d missing, %d extra, %d '
                'different' % (len(missing), len(extra), len(differ)))
        if differ:
            rp = sorted(differ)[0]
            text += ('\n      %s ours %s\n      %s upstream %s'
                     % (rp, mine[rp], rp, theirs[rp]))
        row.problems.append(text)
    if not row.problems:
        row.notes.append('same set')


NAMES_BY_UUID = {}


def describe(key):
    if isinstance(key, str):
        return key[:200]
    allocations, mappings = key
    parts = ['%s %s:%d' % (NAMES_BY_UUID.get(rp, rp), rc, amount)
             for rp, rc, amount in sorted(allocations)]
    maps = ['%s->%s' % (g or '""', ','.join(sorted(
        NAMES_BY_UUID.get(rp, rp) for rp in rps)))
        for g, rps in sorted(mappings)]
    return '{%s | %s}' % ('; '.join(parts), ' '.join(maps))


def remember_names(trees):
    for tree in trees:
        for rp in tree:
            NAMES_BY_UUID[rp['uuid']] = rp['name']


def run_queries(stack, names, queries, args, scenario):
    rows = []
    for query in queries:
        results = {}
        for name in names:
            results[name] = result = measure(stack, name, query, args)
            log_result(scenario, query, name, result)
        rows.append(Row(scenario, query, results))
    check(rows)
    for row in rows:
        for problem in row.problems:
            harness.log('  CHECK %s / %s: %s' % (scenario, row.query.label,
                                                 problem))
    return rows


def log_result(scenario, query, name, result):
    harness.log('%-21s %-27s %-8s %s' % (scenario, query.label, name,
                                         short_result(result)))


def short_result(result):
    cell = result.cell()
    if cell:
        return cell
    return 'p50 %8.1f ms  p95 %8.1f ms  n=%-3d  %d candidates' % (
        result.p50, result.p95, len(result.latencies), result.count)


# ------------------------------------------------------------- scenarios


class Stack(harness.Stack):
    """harness.Stack with upstream's gunicorn worker timeout raised to
    ours, so a 30 s answer is measured instead of its worker killed."""

    def _upstream(self, bindir, directory, conf, port):
        argv, env = super()._upstream(bindir, directory, conf, port)
        return argv + ['--timeout', str(UPSTREAM_WORKER_TIMEOUT)], env


def flat(args, info):
    rows = []
    with Stack(backend=args.backend) as stack:
        info.setdefault('postgres', stack.database_version())
        count = args.flat_nodes
        shared = Flat.sharing_providers()
        trees = shared + Flat.trees(0, count)
        remember_names(trees)
        load(stack, NAMES, trees, Flat.allocations(0, count), args,
             'flat %d' % count)
        scenario = 'flat %d' % count
        rows += run_queries(stack, NAMES, flat_queries(count), args,
                            scenario)
        if args.flat_large > count:
            large = args.flat_large
            grown = Flat.trees(count, large)
            remember_names(grown)
            load(stack, ('ours',), grown, Flat.allocations(count, large),
                 args, 'flat %d..%d (ours only)' % (count, large))
            rows += run_queries(stack, ('ours',), flat_queries(large), args,
                                'flat %d (ours)' % large)
    return rows


def nested(args, info):
    rows = []
    with Stack(backend=args.backend) as stack:
        info.setdefault('postgres', stack.database_version())
        loaded = 0
        for count in args.nested_nodes:
            trees = Nested.trees(loaded, count)
            remember_names(trees)
            load(stack, NAMES, trees, Nested.allocations(loaded, count),
                 args, 'nested %d..%d' % (loaded, count))
            loaded = count
            rows += run_queries(stack, NAMES, nested_queries(count), args,
                                'nested %d' % count)
    return rows


def wide(args, info):
    count = args.wide_nodes
    scenario = 'wide %dx%d' % (count, WIDE_CHILDREN)
    rows = []
    with Stack(backend=args.backend) as stack:
        info.setdefault('postgres', stack.database_version())
        trees = Wide.trees(count)
        remember_names(trees)
        load(stack, NAMES, trees, Wide.allocations(count), args, scenario)
        children = Wide.children(count)
        queries = [Query('%d groups isolate limit=10' % g, wide_query(g),
                         min(10, Wide.expect(count, g)))
                   for g in args.wide_groups]
        # Ours first, then upstream where it finishes, then the probes
        # that do not: their workers spin until gunicorn kills them.
        results = {q.label: {} for q in queries}
        for query in queries:
            results[query.label]['ours'] = measure(stack, 'ours', query,
                                                   args)
            log_result(scenario, query, 'ours', results[query.label]['ours'])
        probes = []
        timed_out = None
        for groups, query in zip(args.wide_groups, queries):
            skipped = Result()
            results[query.label]['upstream'] = skipped
            if timed_out:
                # Its worker is still busy, and more groups take longer.
                skipped.skipped = 'skip (%d timed out)' % timed_out
            elif groups <= args.wide_upstream_max_groups:
                result = measure(stack, 'upstream', query, args)
                results[query.label]['upstream'] = result
                log_result(scenario, query, 'upstream', result)
                if result.timeout:
                    timed_out = groups
            elif args.wide_probe_timeout > 0:
                probes.append(query)
            else:
                skipped.skipped = 'not run'
        if probes:
            harness.log('probing upstream with %s at once, %g s timeout'
                        % (', '.join(q.label.split()[0] + ' groups'
                                     for q in probes),
                           args.wide_probe_timeout))
            with concurrent.futures.ThreadPoolExecutor(len(probes)) as pool:
                futures = {q.label: pool.submit(
                    measure, stack, 'upstream', q, args,
                    args.wide_probe_timeout) for q in probes}
                for query in probes:
                    result = futures[query.label].result()
                    results[query.label]['upstream'] = result
                    log_result(scenario, query, 'upstream', result)
        for groups, query in zip(args.wide_groups, queries):
            row = Row(scenario, query, results[query.label])
            for name, result in row.results.items():
                if result.failed:
                    row.problems.append('%s failed: %s'
                                        % (name, result.failed[0]))
                if result.body is None:
                    continue
                if result.count != query.expected:
                    row.problems.append('%s returned %d, expected %d'
                                        % (name, result.count,
                                           query.expected))
                for problem in wide_problems(result.body, groups,
                                             children)[:3]:
                    row.problems.append('%s: %s' % (name, problem))
            if not row.problems:
                row.notes.append('valid')
            for problem in row.problems:
                harness.log('  CHECK %s / %s: %s' % (scenario, query.label,
                                                     problem))
            rows.append(row)
        harness.log('stopping (upstream workers may still be busy with '
                    'the probes)')
    return rows


# ------------------------------------------------------------- reporting


def fmt(value, width=8):
    return ('%*.1f' % (width, value)) if value is not None else (
        '%*s' % (width, '-'))


def report(rows, args, info):
    print('GET /allocation_candidates, microversion %s: sequential '
          'requests, %d warm-up + up to %d timed per query (at least %d, '
          'then up to %g s), %d gunicorn workers each'
          % (MICROVERSION, args.warmup, args.requests, MIN_REQUESTS,
             args.query_seconds, harness.WORKERS))
    print('machine: %d CPUs, Python %s, %s, upstream '
          'openstack-placement %s; load average (1 min) before: %.2f, '
          'after: %.2f' % (os.cpu_count(), platform.python_version(),
                           info.get('postgres', '?'),
                           harness.UPSTREAM_VERSION, info['load'],
                           os.getloadavg()[0]))
    print('databases ANALYZEd after each load: %s'
          % ('yes' if args.analyze else 'no (--no-analyze)'))
    print()
    header = ('%-21s %-27s %8s %8s %9s %9s %8s %7s %7s  %s'
              % ('scenario', 'query', 'ours p50', 'p95', 'up p50', 'p95',
                 'up/ours', '#ours', '#up', 'check'))
    print(header)
    print('-' * len(header))
    for row in rows:
        ours, up = row.result('ours'), row.result('upstream')
        cells = []
        for result, width in ((ours, 8), (up, 9)):
            if result is None:
                cells += ['%*s' % (width, '-'), '%*s' % (width, '')]
            elif result.cell():
                cells += ['%*s' % (2 * width + 1, result.cell()[:2 * width
                                                               + 1])]
            else:
                cells += [fmt(result.p50, width), fmt(result.p95, width)]
        ratio = ratio_of(up, ours)
        check_text = ('; '.join(p.split('\n')[0] for p in row.problems)
                      if row.problems else ', '.join(row.notes))
        print('%-21s %-27s %s %8s %7s %7s  %s'
              % (row.scenario, row.query.label, ' '.join(cells),
                 ('%.1fx' % ratio) if ratio else '-',
                 count_text(ours), count_text(up),
                 check_text or '-'))
    print()
    growth(rows, args)
    limits(rows)
    cpu_table(rows)
    problems = [(row, p) for row in rows for p in row.problems]
    if problems:
        print('correctness problems:')
        for row, problem in problems:
            print('  %s / %s: %s' % (row.scenario, row.query.label,
                                     problem))
        print()
    targets(rows)
    return not problems


def ratio_of(up, ours):
    if (up is None or ours is None or not up.latencies
            or not ours.latencies):
        return None
    return up.p50 / ours.p50


def count_text(result):
    if result is None or result.count is None:
        return '-'
    return str(result.count)


def growth(rows, args):
    """Medians at the smallest and the largest size of each scenario."""
    series = {}
    for row in rows:
        kind, size = row.scenario.split()[:2]
        if kind in ('flat', 'nested'):
            series.setdefault((kind, row.query.label), []).append(
                (int(size), row))
    lines = []
    for (kind, label), sized in series.items():
        if len(sized) < 2:
            continue
        (small, first), (large, last) = sized[0], sized[-1]
        for name in NAMES:
            a, b = first.result(name), last.result(name)
            if a and b and a.latencies and b.latencies:
                lines.append('  %-6s %-27s %5d -> %5d: %9.1f -> %9.1f ms '
                             ' x%-5.1f (%s)' % (kind, label, small, large,
                                               a.p50, b.p50, b.p50 / a.p50,
                                               name))
    if lines:
        print('growth of the median with the number of compute nodes:')
        for line in lines:
            print(line)
        print()


def limits(rows):
    lines = []
    by_key = {(r.scenario, r.query.label): r for r in rows}
    for row in rows:
        # nova's default (limit=1000) answers about as much as no limit.
        if not row.query.full or 'limit=50' not in row.query.label:
            continue
        full = by_key.get((row.scenario, row.query.full))
        for name in NAMES:
            a = full.result(name) if full else None
            b = row.result(name)
            if a and b and a.latencies and b.latencies:
                ratio = a.p50 / b.p50
                lines.append((row, name, a.p50, b.p50, ratio))
    if lines:
        print('limit=50 against no limit (median):')
        for row, name, a, b, ratio in lines:
            verdict = ''
            if name == 'ours':
                verdict = '  target >= %.0fx: %s' % (
                    TARGET_LIMIT_RATIO,
                    'MET' if ratio >= TARGET_LIMIT_RATIO else 'NOT MET')
            print('  %-21s %-9s %9.1f ms -> %8.1f ms  %5.1fx cheaper%s'
                  % (row.scenario, name, a, b, ratio, verdict))
        print()


def cpu_table(rows):
    """CPU per request: steadier than latency when the machine is busy.
    """
    print('CPU ms per timed request (server|postgres), requests timed, and '
          'upstream/ours of the CPU sums:')
    for row in rows:
        cells = []
        totals = {}
        for name in NAMES:
            result = row.result(name)
            if result is None or result.cpu is None:
                cells.append('%-8s %22s' % (name, '-'))
            else:
                totals[name] = result.cpu['server'] + result.cpu['postgres']
                cells.append('%-8s %8.1f|%7.1f n=%-3d'
                             % (name, result.cpu['server'],
                                result.cpu['postgres'],
                                len(result.latencies)))
        ratio = ''
        if len(totals) == 2 and totals['ours']:
            ratio = '%6.1fx' % (totals['upstream'] / totals['ours'])
        print('  %-21s %-27s %s %s' % (row.scenario, row.query.label,
                                       '  '.join(cells), ratio))
    print()


def targets(rows):
    listings = [row for row in rows if isinstance(row.query, ListQuery)]
    ratio_rows = [(row, ratio_of(row.result('upstream'), row.result('ours')))
                  for row in rows
                  if row.scenario.startswith(('flat', 'nested'))
                  and row not in listings
                  and row.result('upstream') is not None]
    met = [r for r, ratio in ratio_rows if ratio and ratio >= TARGET_RATIO]
    print('target: median >= %.0fx lower than upstream on flat and nested: '
          '%s (%d of %d queries)'
          % (TARGET_RATIO,
             'MET' if len(met) == len(ratio_rows) else 'NOT MET',
             len(met), len(ratio_rows)))
    for row, ratio in ratio_rows:
        if not ratio or ratio < TARGET_RATIO:
            print('  short: %s / %s at %s' % (
                row.scenario, row.query.label,
                ('%.1fx' % ratio) if ratio else 'n/a'))
    large = [(row, ratio_of(row.result('upstream'), row.result('ours')))
             for row in listings if row.result('upstream') is not None
             and int(row.scenario.split()[1]) >= 10000]
    if large:
        short = [row.query.label for row, ratio in large
                 if not ratio or ratio < TARGET_LIST_RATIO]
        print('target: listings >= %.0fx lower than upstream at 10,000 '
              'providers: %s' % (TARGET_LIST_RATIO, 'MET' if not short
                                 else 'NOT MET (%s)' % ', '.join(short)))
    wide_rows = [row for row in rows if row.scenario.startswith('wide')]
    if wide_rows:
        bad = [row for row in wide_rows
               if row.problems or not row.result('ours').latencies
               or row.result('ours').p50 >= TARGET_WIDE_MS]
        verdict = 'MET' if not bad else 'NOT MET (%s)' % ', '.join(
            r.query.label for r in bad)
        print('target: every wide query < %.0f ms (median) and exact: %s'
              % (TARGET_WIDE_MS, verdict))


# ------------------------------------------------------------------ main


def int_list(text):
    values = [int(v) for v in text.split(',') if v.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError('a comma-separated list of '
                                         'positive numbers')
    return values


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    parser.add_argument('--flat-nodes', type=int, default=1000,
                        help='flat compute nodes on both (default 1000)')
    parser.add_argument('--flat-large', type=int, default=0,
                        help='then grow ours alone to this many, e.g. '
                             '10000 (default 0: not at all)')
    parser.add_argument('--nested-nodes', type=int_list, default=[250],
                        help='nested compute nodes, growing in place, '
                             'e.g. 250,1000 (default 250)')
    parser.add_argument('--wide-nodes', type=int, default=20,
                        help='wide compute nodes (default 20)')
    parser.add_argument('--wide-groups', type=int_list, default=[4, 5, 6, 8],
                        help='VGPU groups per wide query (default 4,5,6,8)')
    parser.add_argument('--wide-upstream-max-groups', type=int, default=5,
                        help='upstream is measured up to this many groups '
                             'and probed once above (default 5)')
    parser.add_argument('--wide-probe-timeout', type=float, default=30,
                        help='timeout of those probes, seconds; 0 skips '
                             'them (default 30)')
    parser.add_argument('--requests', type=int, default=20,
                        help='timed requests per query per server '
                             '(default 20)')
    parser.add_argument('--warmup', type=int, default=2,
                        help='untimed requests first, the first one '
                             'checked (default 2, at least 1)')
    parser.add_argument('--query-seconds', type=float, default=8,
                        help='stop timing a query after this long once %d '
                             'are timed (default 8)' % MIN_REQUESTS)
    parser.add_argument('--timeout', type=float, default=60,
                        help='per-request timeout, seconds (default 60)')
    parser.add_argument('--no-analyze', dest='analyze',
                        action='store_false',
                        help='do not ANALYZE the databases after loading '
                             '(autovacuum may or may not have by then)')
    parser.add_argument('--clients', type=int, default=8,
                        help='client threads loading the data (default 8)')
    parser.add_argument('--scenarios', default='flat,nested,wide',
                        help='which to run (default flat,nested,wide)')
    args = parser.parse_args(argv)
    args.scenarios = [s.strip() for s in args.scenarios.split(',')
                      if s.strip()]
    unknown = set(args.scenarios) - {'flat', 'nested', 'wide'}
    if unknown:
        parser.error('unknown scenarios: %s' % ', '.join(sorted(unknown)))
    for name in ('flat_nodes', 'wide_nodes', 'requests', 'warmup',
                 'clients'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name.replace('_', '-'))
    if args.nested_nodes != sorted(set(args.nested_nodes)):
        parser.error('--nested-nodes must increase')
    args.wide_groups = sorted(set(args.wide_groups))
    if max(args.wide_groups) > WIDE_CHILDREN:
        parser.error('at most %d wide groups' % WIDE_CHILDREN)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    info = {'load': os.getloadavg()[0]}
    rows = []
    started = time.monotonic()
    try:
        for scenario in args.scenarios:
            rows += {'flat': flat, 'nested': nested,
                     'wide': wide}[scenario](args, info)
    except KeyboardInterrupt:
        harness.log('interrupted; servers and PostgreSQL stopped')
        return 130
    harness.log('done in %.0f s' % (time.monotonic() - started))
    return 0 if report(rows, args, info) else 1


if __name__ == '__main__':
    sys.exit(main())
