"""What a Prometheus scrape of a cloud's Placement gauges costs.

    .venv/bin/python benchmarks/exporter_scrape.py [--sizes 1000,10000]
        [--repeat 3] [--clients 8] [--backend postgresql|mysql]

openstack-exporter's placement collector builds its gauges with 1 + 3N
API requests per scrape (N providers): ``GET /resource_providers``, then,
one provider after another, its inventories, usages and allocations.
This service publishes the same gauges itself ([metrics], from its
in-memory state).  Both servers (``harness.Stack``: gunicorn, 2 workers,
one PostgreSQL; ours with ``[metrics] enabled``) are loaded through the
API with the candidates benchmark's flat deployment (``candidates.Flat``:
compute nodes with VCPU, MEMORY_MB and mostly DISK_GB, 3 sharing storage
pools, a few instances on every tenth node), first ``--sizes``' first
count of nodes, then grown to each next count.  At each size, each
measured ``--repeat`` times after one unmeasured warm-up:

- the exporter's scrape, sequential as the exporter sends it, against
  upstream and against ours: wall time, and CPU seconds of the server's
  processes and of its database backends;
- one ``GET /metrics`` of ours (the gauges and everything else [metrics]
  serves): the same, and its size.

Reports the medians and the ratios upstream/ours (how many times cheaper
ours is), and checks that our ``/metrics`` gauges equal what the
exporter's scrape of our API builds.
"""

import argparse
import collections
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402
import harness  # noqa: E402

GAUGES = ('resource_total', 'resource_reserved', 'resource_allocation_ratio',
          'resource_generation', 'resource_usage')
_SAMPLE = re.compile(r'openstack_placement_(\w+)\{(.*)\} (\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


class Stack(harness.Stack):
    """harness.Stack with ``[metrics]`` on for ours, on a free port."""

    def _ours(self, conf, port):
        self.metrics_port = harness.free_port()
        with open(conf, 'a') as handle:
            handle.write('[metrics]\nenabled = True\n'
                         'bind = 127.0.0.1:%d\n' % self.metrics_port)
        return super()._ours(conf, port)


def exporter_scrape(port):
    """The exporter's 1 + 3N requests, one after another: {(hostname,
    class): {gauge: value}} as it publishes them."""
    conn = candidates.Connection(port, 120)
    gauges = {}
    try:
        listed = conn.json('GET', '/resource_providers')
        for provider in listed['resource_providers']:
            base = '/resource_providers/%s/' % provider['uuid']
            inventories = conn.json('GET', base + 'inventories')
            usages = conn.json('GET', base + 'usages')['usages']
            conn.json('GET', base + 'allocations')
            generation = inventories['resource_provider_generation']
            for name, record in inventories['inventories'].items():
                gauges[provider['name'], name] = {
                    'resource_total': record['total'],
                    'resource_reserved': record['reserved'],
                    'resource_allocation_ratio': record['allocation_ratio'],
                    'resource_generation': generation,
                    'resource_usage': usages.get(name, 0)}
    finally:
        conn.close()
    return gauges


def metrics_scrape(port):
    """One GET /metrics of ours: (its size, the gauges as ``exporter_
    scrape`` returns them)."""
    conn = candidates.Connection(port, 120)
    try:
        status, raw, _seconds = conn.request('GET', '/metrics')
    finally:
        conn.close()
    if status != 200:
        raise RuntimeError('GET /metrics: %s' % status)
    gauges = collections.defaultdict(dict)
    for line in raw.decode().splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) in GAUGES:
            labels = dict(_LABEL.findall(match.group(2)))
            gauges[labels['hostname'], labels['resourcetype']][
                match.group(1)] = float(match.group(3))
    return len(raw), dict(gauges)


def measured(meter, function, repeat):
    """(median wall s, median server CPU s, median database CPU s, the
    last result) of ``repeat`` calls after one unmeasured."""
    function()
    walls, servers, databases = [], [], []
    for _ in range(repeat):
        before = meter.read()
        started = time.perf_counter()
        result = function()
        walls.append(time.perf_counter() - started)
        used = meter.used(before, meter.read())
        servers.append(used['server'])
        databases.append(used['postgres'])
    return (statistics.median(walls), statistics.median(servers),
            statistics.median(databases), result)


def measure_size(stack, size, repeat):
    rows = {}
    for name in candidates.NAMES:
        server = stack.servers[name]
        rows[name] = measured(stack.meters[name],
                              lambda: exporter_scrape(server.port), repeat)
    ours_port = stack.metrics_port
    rows['metrics'] = measured(stack.meters['ours'],
                               lambda: metrics_scrape(ours_port), repeat)
    exporter_view = rows['ours'][3]
    published = rows['metrics'][3][1]
    differing = sum(1 for key in set(exporter_view) | set(published)
                    if {g: float(v) for g, v in
                        exporter_view.get(key, {}).items()}
                    != published.get(key))
    print('\n%d compute nodes (+%d sharing pools): %d inventories; %d of '
          'them published differently by /metrics than the exporter '
          'builds them from our API' % (
              size, candidates.SHARED_STORAGE, len(exporter_view),
              differing))
    print('%-34s %9s %11s %9s %10s' % ('scrape', 'wall ms', 'server ms',
                                       'db ms', 'requests'))
    requests = 1 + 3 * (size + candidates.SHARED_STORAGE)
    for name, label, count in (
            ('upstream', "exporter's, upstream", requests),
            ('ours', "exporter's, ours", requests),
            ('metrics', 'GET /metrics, ours (%d KB)'
             % (rows['metrics'][3][0] // 1024), 1)):
        wall, server, database, _result = rows[name]
        print('%-34s %9.0f %11.0f %9.0f %10d' % (
            label, wall * 1000, server * 1000, database * 1000, count))

    def ratio(a, b):
        return a / b if b else float('inf')

    up, ours, metrics = rows['upstream'], rows['ours'], rows['metrics']
    print("ratios upstream/ours: exporter's scrape %.1fx wall, %.1fx "
          'server+db CPU; /metrics instead %.1fx wall, %.1fx server+db CPU'
          % (ratio(up[0], ours[0]), ratio(up[1] + up[2], ours[1] + ours[2]),
             ratio(up[0], metrics[0]),
             ratio(up[1] + up[2], metrics[1] + metrics[2])))
    return differing


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default='1000,10000',
                        help='compute node counts, ascending')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--clients', type=int, default=8,
                        help='client threads loading each server')
    harness.add_backend_argument(parser)
    args = parser.parse_args()
    args.analyze = True
    sizes = [int(size) for size in args.sizes.split(',')]
    differing = 0
    with Stack(backend=args.backend) as stack:
        loaded = 0
        for size in sizes:
            trees = candidates.Flat.trees(loaded, size)
            if loaded == 0:
                trees = candidates.Flat.sharing_providers() + trees
            candidates.load(stack, candidates.NAMES, trees,
                            candidates.Flat.allocations(loaded, size), args,
                            'flat %d..%d' % (loaded, size))
            loaded = size
            differing += measure_size(stack, size, args.repeat)
    return 1 if differing else 0


if __name__ == '__main__':
    sys.exit(main())
