"""GET /audit at scale, over HTTP: its time and its workers' memory.

    .venv/bin/python benchmarks/audit.py [--providers 100000]
        [--allocations 1000000] [--repeat 5]

Inserts with SQL (``profile_candidates.prepared``; through the API the
load would take hours) the candidates benchmark's flat deployment
(``--providers`` compute nodes, 3 sharing storage pools), servers on
every node with three allocations each (VCPU and MEMORY_MB on the node,
DISK_GB on the node or, for a quarter of them, on the pool the node's
aggregate shares) until there are ``--allocations`` rows, with consumer
records, projects and users; then plants findings of every kind: a
server on two nodes per 1,000 nodes (split), a migration per 500 nodes
(half of them two days old: stale), a node per 1,000 whose VCPU ratio
was lowered under its usage (over capacity) and one per 2,000 whose
DISK_GB units fit no amount (unusable).  Starts ``placement-api`` with
two workers on a throwaway PostgreSQL and sends ``GET /audit`` (every
kind) and each kind alone, ``--repeat`` times each after a first: the
first's wall time (each worker's first audit reads the consumers
spanning trees whole), the median and the most of the others, the
PostgreSQL backends' CPU per request, and the workers' resident memory
now and at their peak (sampled every 10 ms).  The target (issue 27):
under 1 s at 100,000 providers and 1,000,000 allocations.  Ours only:
upstream has no audit (nova-manage placement audit asks for each
provider's allocations, one request per provider).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402
import harness  # noqa: E402
import profile_candidates  # noqa: E402
import worker_memory  # noqa: E402

from placement.storage import tables  # noqa: E402

KINDS = ('over_capacity', 'split_consumers', 'stale_migrations',
         'unusable_inventory')
PER_SERVER = {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10}
PROJECTS = 100
DATABASE = 'audit'


def _consumer(i, n):
    return candidates.uid('consumer', 'audit', i, n)


class Rows:
    """The rows of every table, made in batches and written as made."""

    def __init__(self, conn):
        self.conn = conn
        self.pending = {}

    def add(self, table, row):
        batch = self.pending.setdefault(table, [])
        batch.append(row)
        if len(batch) >= 5000:
            self.flush(table)

    def flush(self, table=None):
        for name in [table] if table is not None else list(self.pending):
            batch = self.pending.pop(name, [])
            if batch:
                self.conn.execute(name.insert(), batch)


def insert(url, providers, allocations):
    """The deployment and its findings (see the module docstring)."""
    _, db = profile_candidates.prepared(url)
    profile_candidates.bulk_insert(
        db, candidates.Flat.sharing_providers()
        + candidates.Flat.trees(0, providers), [])

    def write(conn):
        ids = dict(conn.execute(sa.select(
            tables.resource_providers.c.uuid,
            tables.resource_providers.c.id)).all())
        classes = dict(conn.execute(sa.select(
            tables.resource_classes.c.name,
            tables.resource_classes.c.id)).all())
        project_ids = [conn.execute(tables.projects.insert().values(
            external_id=candidates.uid('project', k))).inserted_primary_key[0]
            for k in range(PROJECTS)]
        user = conn.execute(tables.users.insert().values(
            external_id=candidates.uid('user'))).inserted_primary_key[0]
        types = {name: conn.execute(tables.consumer_types.insert().values(
            name=name)).inserted_primary_key[0]
            for name in ('INSTANCE', 'MIGRATION')}
        rows = Rows(conn)
        now = tables.utcnow()
        old = now - datetime.timedelta(days=2)

        def server(uuid, number, held, kind='INSTANCE', written=now):
            rows.add(tables.consumers, {
                'uuid': uuid, 'project_id': project_ids[number % PROJECTS],
                'user_id': user, 'generation': 1,
                'consumer_type_id': types[kind], 'created_at': written})
            for node, resources in held.items():
                for name, amount in resources.items():
                    rows.add(tables.allocations, {
                        'resource_provider_id': ids[node],
                        'consumer_id': uuid, 'used': amount,
                        'resource_class_id': classes[name],
                        'created_at': written})

        def resources(i):
            node = candidates.uid('rp', 'flat-cn-%05d' % i)
            disk = (node if candidates.Flat.local_disk(i) else
                    candidates.uid('rp', 'flat-shared-%d'
                                   % candidates.Flat.storage(i)))
            held = {node: {'VCPU': PER_SERVER['VCPU'],
                           'MEMORY_MB': PER_SERVER['MEMORY_MB']}}
            held.setdefault(disk, {})['DISK_GB'] = PER_SERVER['DISK_GB']
            return node, held

        servers = allocations // 3
        for number in range(servers):
            i = number % providers
            server(_consumer(i, number), number, resources(i)[1])
        for i in range(0, providers - 1, 1000):     # evacuated: split
            node, held = resources(i)
            held[candidates.uid('rp', 'flat-cn-%05d' % (i + 1))] = {
                'VCPU': 1}
            server(_consumer(i, 'evacuated'), i, held)
        for i in range(0, providers, 500):          # migrations
            server(_consumer(i, 'migration'), i, resources(i)[1],
                   'MIGRATION', old if i % 1000 == 0 else now)
        rows.flush()
        inventories = tables.inventories
        for i in range(0, providers, 1000):         # over capacity
            conn.execute(inventories.update().where(
                inventories.c.resource_provider_id == ids[candidates.uid(
                    'rp', 'flat-cn-%05d' % i)],
                inventories.c.resource_class_id == classes['VCPU'],
            ).values(allocation_ratio=0.04))
        for i in range(1, providers, 2000):         # unusable
            conn.execute(inventories.update().where(
                inventories.c.resource_provider_id == ids[candidates.uid(
                    'rp', 'flat-cn-%05d' % i)],
                inventories.c.resource_class_id == classes['DISK_GB'],
            ).values(min_unit=20, max_unit=10))
        return conn.scalar(sa.select(sa.func.count()).select_from(
            tables.allocations))

    count = db.write(write)
    # Statistics, as autovacuum would soon gather them on a real cloud.
    db.write(lambda conn: conn.exec_driver_sql('ANALYZE'))
    db.dispose()
    return count


def measure(server, port, repeat):
    time.sleep(5)       # the workers read the state before serving
    workers = [pid for pid in server.pids() if pid != server.proc.pid]
    sampler = worker_memory.Sampler(workers)
    sampler.start()
    print('workers started, resident MB: %s' % '/'.join(
        '%.0f' % worker_memory.status_mb(pid, 'VmRSS') for pid in workers))
    conn = candidates.Connection(port, 600)
    meter = harness.CpuMeter(server, DATABASE)
    print('%-32s %8s %9s %9s %9s %8s  %s' % (
        'request', 'first ms', 'median ms', 'most ms', 'pg ms', 'bytes',
        'resident MB now (peak)'))
    for query in ['/audit'] + ['/audit?kind=' + kind for kind in KINDS]:
        seconds, pg_seconds = [], []
        for _ in range(repeat + 1):
            before = meter.read()
            status, raw, elapsed = conn.request('GET', query)
            if status != 200:
                raise RuntimeError('%s: %s %s' % (query, status, raw[:300]))
            pg_seconds.append(
                meter.used(before, meter.read())['postgres'] * 1000)
            seconds.append(elapsed * 1000)
        body = json.loads(raw)
        # The first audit of each worker reads the consumers spanning
        # trees whole (consumer_spans); the later ones only what changed.
        print('%-32s %8.0f %9.0f %9.0f %9.0f %8d  %s (%s)   counts %s' % (
            query, seconds[0], statistics.median(seconds[1:]),
            max(seconds[1:]), statistics.median(pg_seconds[1:]), len(raw),
            '/'.join('%.0f' % worker_memory.status_mb(pid, 'VmRSS')
                     for pid in workers),
            '/'.join('%.0f' % sampler.peaks[pid] for pid in workers),
            body['counts']))
    sampler.running = False
    sampler.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=100000)
    parser.add_argument('--allocations', type=int, default=1000000)
    parser.add_argument('--repeat', type=int, default=5)
    args = parser.parse_args()

    def fill(url):
        count = insert(url, args.providers, args.allocations)
        return 'inserted %d compute nodes and %d allocations' % (
            args.providers, count)

    with worker_memory.placement_api_on(DATABASE, fill) as (server, port):
        measure(server, port, args.repeat)


if __name__ == '__main__':
    main()
