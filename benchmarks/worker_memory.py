"""Resident memory of placement-api workers at scale, over HTTP.

    .venv/bin/python benchmarks/worker_memory.py [--providers 100000]

Inserts the candidates benchmark's flat deployment (``--providers``
compute nodes, 5 sharing storage providers, 10 % carrying an instance)
into a throwaway PostgreSQL with SQL (``profile_candidates.bulk_insert``:
loading 100,000 nodes through the API takes twenty minutes and the
memory of a reader does not depend on how the rows came), starts
``placement-api`` with two workers on it, and sends, one at a time,
nova's default request and ``limit=50`` (bounded), the unbounded simple
query and the full listing, each a few times.  A thread samples every
worker's resident memory every 10 ms; printed after each query: latency,
body size, each worker's resident memory now and its peak so far, and at
the end the kernel's high-water mark (``VmHWM``, which also counts the
worker's start).  Ours only: upstream needs 1.4 s for one unbounded
query at 10,000 nodes.  The target (ROADMAP): under 300 MB per worker.
"""

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402
import harness  # noqa: E402
import profile_candidates  # noqa: E402

from tests import pg_cluster  # noqa: E402

# (query label, times sent), in order.
SEQUENCE = [('nova default', 5), ('simple limit=50', 5),
            ('simple', 1), ('nova default', 5),
            ('GET /resource_providers', 1), ('simple', 1),
            ('nova default', 5)]


def status_mb(pid, key):
    with open('/proc/%d/status' % pid) as handle:
        for line in handle:
            if line.startswith(key + ':'):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """Each worker's peak resident memory, sampled every 10 ms."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.peaks = dict.fromkeys(pids, 0.0)
        self.running = True

    def run(self):
        while self.running:
            for pid in self.peaks:
                try:
                    self.peaks[pid] = max(self.peaks[pid],
                                          status_mb(pid, 'VmRSS'))
                except OSError:
                    pass
            time.sleep(0.01)


def insert(url, providers):
    _, db = profile_candidates.prepared(url)
    profile_candidates.bulk_insert(
        db, candidates.Flat.sharing_providers()
        + candidates.Flat.trees(0, providers),
        candidates.Flat.allocations(0, providers))
    db.dispose()


def placement_api(directory, url):
    """(Server, port): ours, placement-api with the benchmarks' workers,
    on the database ``url``, its files in ``directory``."""
    conf = harness.write_config(directory, url)
    port = harness.free_port()
    script = os.path.join(os.path.dirname(sys.executable), 'placement-api')
    return harness.Server(
        'ours', port, [script, '--config-file', conf, '--bind',
                       '127.0.0.1:%d' % port, '--workers',
                       str(harness.WORKERS)],
        dict(os.environ), directory), port


@contextlib.contextmanager
def placement_api_on(database, fill):
    """(Server, port): ours on a throwaway PostgreSQL database that
    ``fill(url)`` filled first (what it answers is logged, with the time
    it took); all of it stopped at the end."""
    cluster = pg_cluster.Cluster().start()
    try:
        cluster.create_database(database)
        url = cluster.url(database)
        started = time.perf_counter()
        done = fill(url)
        harness.log('%s in %.0f s' % (done, time.perf_counter() - started))
        server, port = placement_api(os.path.join(cluster.root, 'server'),
                                     url)
        try:
            yield server, port
        finally:
            server.stop()
    finally:
        cluster.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=100000)
    args = parser.parse_args()

    def fill(url):
        insert(url, args.providers)
        return 'inserted %d compute nodes' % args.providers

    with placement_api_on('memory', fill) as (server, port):
        measure(server, port, args.providers)


def measure(server, port, providers):
    # Workers read the state before serving; give both time to.
    time.sleep(5)
    workers = [pid for pid in server.pids() if pid != server.proc.pid]
    sampler = Sampler(workers)
    sampler.start()
    print('workers started, resident MB: %s' % ', '.join(
        '%.0f' % status_mb(pid, 'VmRSS') for pid in workers))
    conn = candidates.Connection(port, 600)
    queries = {query.label: query
               for query in candidates.flat_queries(providers)}
    for label, times in SEQUENCE:
        latencies = []
        for _ in range(times):
            status, raw, seconds = conn.request('GET', queries[label].path)
            if status != 200:
                raise RuntimeError('%s: %s %s' % (label, status, raw[:300]))
            latencies.append(seconds * 1000)
        print('%-26s %9d bytes %8.1f ms   resident MB now %s, peak %s'
              % (label, len(raw), statistics.median(latencies),
                 '/'.join('%.0f' % status_mb(pid, 'VmRSS')
                          for pid in workers),
                 '/'.join('%.0f' % sampler.peaks[pid] for pid in workers)))
    sampler.running = False
    sampler.join()
    print('high-water mark (VmHWM, start included) MB: %s' % '/'.join(
        '%.0f' % status_mb(pid, 'VmHWM') for pid in workers))


if __name__ == '__main__':
    main()
