"""Provider creation throughput: ours against upstream 16.0.0, one run.

    .venv/bin/python benchmarks/provider_create.py [--requests N]
        [--clients C] [--rounds R] [--warmup W] [--max-seconds S]

Both servers run side by side (same PostgreSQL cluster, a database each,
two gunicorn workers each, 127.0.0.1 only).  After a warm-up, every round
sends N ``POST /resource_providers`` (unique names, microversion 1.39,
admin token) from C concurrent clients to each server in turn, the order
alternating between rounds so drift on the machine hits both alike.  The
figure is the median of the rounds' requests per second; the verdict is
ours/upstream against the roadmap's 3x.
"""

import argparse
import os
import platform
import statistics
import sys
import uuid

import harness
import loadgen

TARGET_RATIO = 3.0
NAMES = ('ours', 'upstream')


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    parser.add_argument('--requests', type=int, default=1000,
                        help='POSTs per server per round (default 1000)')
    parser.add_argument('--clients', type=int, default=8,
                        help='concurrent client connections (default 8)')
    parser.add_argument('--rounds', type=int, default=5,
                        help='measured rounds per server (default 5)')
    parser.add_argument('--warmup', type=int, default=200,
                        help='unmeasured POSTs per server first '
                             '(default 200)')
    parser.add_argument('--max-seconds', type=float, default=120,
                        help='cut a round short after this long '
                             '(default 120)')
    args = parser.parse_args(argv)
    for name in ('requests', 'clients', 'rounds'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    return args


def burst(load, server, requests, clients, max_seconds):
    """POST ``requests`` providers with names unique to this burst."""
    prefix = 'bench-%s-' % uuid.uuid4().hex[:12]
    return load.run(server.port, 'POST', '/resource_providers',
                    '{"name": "%s%%d"}' % prefix, requests, clients,
                    max_seconds, expected_status=200)


def describe_round(number, name, result, cpu):
    failures = {k: v for k, v in result.statuses.items() if k != 200}
    per_request = max(result.completed, 1)
    line = ('round %d %-8s %7.1f req/s  %5d ok in %6.2fs  p50 %6.1f ms  '
            'cpu/req: server %5.2f ms, postgres %5.2f ms, client %5.2f ms'
            % (number, name, result.rate, result.completed, result.elapsed,
               harness.percentile(result.latencies, 0.5) * 1000,
               cpu['server'] / per_request * 1000,
               cpu['postgres'] / per_request * 1000,
               result.client_cpu / per_request * 1000))
    if failures:
        line += '  FAILED: %s' % failures
    return line


def measure(stack, args):
    """Warm both servers, then alternate them for ``args.rounds`` rounds."""
    results = {name: [] for name in NAMES}
    cpu = {name: [] for name in NAMES}
    with loadgen.LoadProcess() as load:
        for name in NAMES:
            warm = burst(load, stack.servers[name], args.warmup,
                         args.clients, args.max_seconds)
            harness.log('warm-up  %-8s %7.1f req/s (%d requests)'
                        % (name, warm.rate, warm.completed))
        for number in range(1, args.rounds + 1):
            order = NAMES if number % 2 else tuple(reversed(NAMES))
            for name in order:
                meter = stack.meters[name]
                before = meter.read()
                result = burst(load, stack.servers[name], args.requests,
                               args.clients, args.max_seconds)
                used = meter.used(before, meter.read())
                results[name].append(result)
                cpu[name].append(used)
                harness.log(describe_round(number, name, result, used))
    return results, cpu


def summarize(results, cpu):
    """Per server: median rate, latency percentiles, CPU per request."""
    summary = {}
    for name in NAMES:
        rounds = results[name]
        latencies = [t for r in rounds for t in r.latencies]
        completed = max(sum(r.completed for r in rounds), 1)
        summary[name] = {
            'rate': statistics.median(r.rate for r in rounds),
            'rates': [r.rate for r in rounds],
            'p50': harness.percentile(latencies, 0.50) * 1000,
            'p90': harness.percentile(latencies, 0.90) * 1000,
            'p99': harness.percentile(latencies, 0.99) * 1000,
            'failures': sum(n for r in rounds for k, n in r.statuses.items()
                            if k != 200),
            'server_cpu': sum(c['server'] for c in cpu[name])
            / completed * 1000,
            'postgres_cpu': sum(c['postgres'] for c in cpu[name])
            / completed * 1000,
            'client_cpu': sum(r.client_cpu for r in rounds)
            / completed * 1000,
        }
    return summary


def report(summary, args, postgres_version, load_before):
    ours, upstream = summary['ours'], summary['upstream']
    ratio = ours['rate'] / upstream['rate'] if upstream['rate'] else 0.0
    print('POST /resource_providers, microversion 1.39: %d rounds x %d '
          'requests, %d clients, %d gunicorn workers each'
          % (args.rounds, args.requests, args.clients, harness.WORKERS))
    print('machine: %d CPUs, Python %s, %s, upstream '
          'openstack-placement %s'
          % (os.cpu_count(), platform.python_version(), postgres_version,
             harness.UPSTREAM_VERSION))
    # Other work on the machine skews both servers, if not alike: say so.
    print('load average (1 min) before the run: %.2f' % load_before)
    print()
    print('%-9s %9s  %-26s %8s %8s %8s  %-28s %s'
          % ('server', 'median/s', 'rounds (req/s)', 'p50 ms', 'p90 ms',
             'p99 ms', 'cpu ms/req server|pg|client', 'failed'))
    for name in NAMES:
        row = summary[name]
        print('%-9s %9.1f  %-26s %8.1f %8.1f %8.1f  %8.2f|%5.2f|%5.2f'
              '           %d'
              % (name, row['rate'],
                 ' '.join('%.0f' % r for r in row['rates']), row['p50'],
                 row['p90'], row['p99'], row['server_cpu'],
                 row['postgres_cpu'], row['client_cpu'], row['failures']))
    print()
    met = ratio >= TARGET_RATIO
    print('ratio ours/upstream: %.2fx (target >= %.1fx): %s'
          % (ratio, TARGET_RATIO, 'MET' if met else 'NOT MET'))
    return ours['failures'] + upstream['failures'] == 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    load_before = os.getloadavg()[0]
    try:
        with harness.Stack(backend=args.backend) as stack:
            results, cpu = measure(stack, args)
            postgres_version = stack.database_version()
    except KeyboardInterrupt:
        harness.log('interrupted; servers and PostgreSQL stopped')
        return 130
    return 0 if report(summarize(results, cpu), args, postgres_version,
                       load_before) else 1


if __name__ == '__main__':
    sys.exit(main())
