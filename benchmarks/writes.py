"""Write throughput when commits wait for the disk: ours against upstream.

    .venv/bin/python benchmarks/writes.py [--delays 0,5,20] [--workers 12]
        [--clients 32] [--rounds 3] [--seconds S] [--warmup-seconds W]
        [--galera | --backend postgresql|mysql]

Every client owns one resource provider and loops ``PUT
/resource_providers/{uuid}/traits`` on it, swapping between two trait
sets and sending the generation the last answer gave: no two clients
ever write the same provider, so whatever makes them wait for each
other is the server's doing.  The database flushes every commit (fsync
and synchronous_commit on) and a shim compiled here and preloaded into
the database server (``LD_PRELOAD``) adds each delay of ``--delays`` to
every fsync and fdatasync: a slower disk, where a server that commits
one write at a time loses most.  Each delay gets a fresh database and
servers; the rounds alternate the servers, the figure is the median of
the rounds' writes per second.

``--galera``: a three-node MariaDB Galera cluster, each service as two
instances with half the workers each on two of the nodes (the third
only replicates) and the clients spread over both instances.
"""

import argparse
import collections
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import harness
import loadgen
from tests import galera_cluster  # found: harness puts the checkout on path

NAMES = ('ours', 'upstream')
MICROVERSION = '1.39'
CUSTOM_TRAIT = 'CUSTOM_BENCH_WRITES'
# Each PUT replaces the provider's one trait with the other: the same
# work (a trait removed, one added, the generation bumped) every time.
TRAIT_SETS = ([CUSTOM_TRAIT], ['HW_CPU_X86_AVX2'])
NAMESPACE = uuid.UUID('0f7c3f0e-5a43-4d8e-9c51-3b3f8a0e6d27')
FLUSH_VARIABLE = 'PLACEMENT_BENCH_FLUSH_MS'
# What our server logs (INFO) before it runs a transaction again.
RETRY_LINE = 'Retrying transaction after transient error'

SHIM_SOURCE = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

static struct timespec added;

__attribute__((constructor)) static void read_delay(void)
{
    const char *ms = getenv("%(variable)s");
    long n = ms ? atol(ms) : 0;
    added.tv_sec = n / 1000;
    added.tv_nsec = (n %% 1000) * 1000000L;
}

/* Sleep the whole delay even when a signal interrupts it (PostgreSQL
   signals its backends), leaving errno as the caller had it. */
static void wait_added(void)
{
    struct timespec left = added;
    int saved = errno;
    while ((left.tv_sec || left.tv_nsec)
           && nanosleep(&left, &left) == -1 && errno == EINTR)
        ;
    errno = saved;
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    wait_added();
    return real(fd);
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    wait_added();
    return real(fd);
}
''' % {'variable': FLUSH_VARIABLE}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    parser.add_argument('--galera', action='store_true',
                        help='a three-node MariaDB Galera cluster, each '
                             'service on two of its nodes (instead of '
                             '--backend)')
    parser.add_argument('--delays', default='0,5,20',
                        help='milliseconds added to every fsync and '
                             'fdatasync, one measurement each '
                             '(default 0,5,20)')
    parser.add_argument('--workers', type=int, default=12,
                        help='gunicorn workers per service, split over '
                             'its two instances with --galera '
                             '(default 12)')
    parser.add_argument('--clients', type=int, default=32,
                        help='client threads, one provider each '
                             '(default 32)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='measured rounds per server and delay '
                             '(default 3)')
    parser.add_argument('--seconds', type=float, default=15,
                        help='seconds a round lasts (default 15)')
    parser.add_argument('--warmup-seconds', type=float, default=5,
                        help='seconds of unmeasured writes per server and '
                             'delay first (default 5)')
    args = parser.parse_args(argv)
    try:
        args.delays = [int(d) for d in args.delays.split(',')]
    except ValueError:
        parser.error('--delays takes whole milliseconds: 0,5,20')
    if min(args.delays) < 0:
        parser.error('--delays must not be negative')
    for name in ('workers', 'clients', 'rounds'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if args.galera and (args.workers < 2 or args.workers % 2):
        parser.error('--galera splits --workers over two instances: give '
                     'an even number')
    if args.galera and args.backend != 'postgresql':
        parser.error('--galera is a backend of its own')
    return args


# ------------------------------------------------------------------ shim


def build_shim(directory):
    """Compile the flush shim into ``directory``; the path of shim.so.

    The directory and the library are made readable to all: PostgreSQL
    and MariaDB run as their own accounts and skip (with only a warning
    in their logs) a preload they cannot read.
    """
    compiler = shutil.which('cc')
    if compiler is None:
        raise SystemExit('no C compiler for the flush shim: '
                         'apt-get install -y gcc libc6-dev')
    source = os.path.join(directory, 'shim.c')
    shim = os.path.join(directory, 'shim.so')
    with open(source, 'w') as handle:
        handle.write(SHIM_SOURCE)
    subprocess.run([compiler, '-shared', '-fPIC', '-o', shim, source,
                    '-ldl'], check=True)
    os.chmod(directory, 0o755)
    os.chmod(shim, 0o755)
    return shim


def shim_mapped(shim):
    """Processes that loaded ``shim``: none means the delay is not there.
    """
    found = 0
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/maps' % entry) as handle:
                    found += shim in handle.read()
            except OSError:
                continue
    return found


# ---------------------------------------------------------------- stacks


class Instances:
    """One service's servers on two Galera nodes, measured (``pids``) and
    stopped as one."""

    def __init__(self):
        self.servers = []

    def pids(self):
        return [pid for server in self.servers for pid in server.pids()]

    def stop(self):
        for server in self.servers:
            server.stop()


class GaleraStack(harness.Stack):
    """Three Galera nodes; each service as two instances of ``workers``,
    on nodes 0 and 1, a database each.  Node 2 only replicates.

    The nodes' CPU counts for the service being measured, as with one
    MariaDB server.  Each instance migrates its database at start, one
    after the other (the second finds it done).
    """

    def _start_database(self):
        harness.log('Starting a three-node Galera cluster ...')
        return galera_cluster.Cluster(
            extra_options=harness.MARIADB_DURABLE if self.durable else (),
            environment=self.environment).start()

    def _start(self):
        venv = harness.ensure_upstream_venv()
        self.cluster = self._start_database()
        writers = self.cluster.nodes[:2]
        for name in NAMES:
            database = 'bench_%s' % name
            writers[0].create_database(database)
            # Registered before it starts: close() then stops the first
            # instance when the second fails to start.
            instances = self.servers[name] = Instances()
            for index, node in enumerate(writers):
                directory = os.path.join(self.root, '%s-%d' % (name, index))
                instances.servers.append(self._start_server(
                    name, venv, directory, node.url(database)))
            self.meters[name] = harness.CpuMeter(instances, database,
                                                 self._database_pids())

    def _database_pids(self):
        return lambda: [node.proc.pid for node in self.cluster.nodes]

    def database_version(self):
        node = self.cluster.nodes[0]
        version = node.execute('SELECT VERSION()')[0][0]
        provider = dict(node.execute(
            "SHOW STATUS LIKE 'wsrep_provider_version'"))
        return 'MariaDB %s, Galera %s, %d nodes' % (
            version.replace('-MariaDB', ''),
            provider.get('wsrep_provider_version', '?'),
            len(self.cluster.nodes))


def members(server):
    """The gunicorn servers behind a service: one, or two with Galera."""
    return getattr(server, 'servers', [server])


def retries(server):
    """Transactions our server ran again so far (its log's INFO lines).
    """
    count = 0
    for member in members(server):
        with open(member.log_path, errors='replace') as handle:
            count += sum(RETRY_LINE in line for line in handle)
    return count


def open_stack(args, shim, delay):
    """A fresh database and servers for one delay: the shim reads its
    delay once, when the database server starts."""
    environment = {'LD_PRELOAD': shim, FLUSH_VARIABLE: str(delay)}
    if args.galera:
        return GaleraStack(workers=args.workers // 2, durable=True,
                           environment=environment)
    return harness.Stack(workers=args.workers, backend=args.backend,
                         durable=True, environment=environment)


# ----------------------------------------------------------------- load


def provider_uuid(index):
    return str(uuid.uuid5(NAMESPACE, 'writes-%d' % index))


def traits_path(provider):
    return '/resource_providers/%s/traits' % provider


def setup(server, clients):
    """The custom trait, then each client's provider, created through the
    instance that client will write to; the providers' generations."""
    ports = [member.port for member in members(server)]
    for port in ports:
        client = loadgen.Client(port)
        status, body, _ = client.call('PUT', '/traits/' + CUSTOM_TRAIT,
                                      microversion=MICROVERSION)
        client.close()
        if status not in (201, 204):
            raise RuntimeError('PUT /traits/%s: %s %s'
                               % (CUSTOM_TRAIT, status, body))
    generations = []
    for index in range(clients):
        client = loadgen.Client(ports[index % len(ports)])
        status, body, _ = client.call(
            'POST', '/resource_providers',
            {'uuid': provider_uuid(index), 'name': 'writes-%d' % index},
            microversion=MICROVERSION)
        client.close()
        if status != 200:
            raise RuntimeError('POST /resource_providers: %s %s'
                               % (status, body))
        generations.append(body['generation'])
    return ports, generations


def outcome(status, body):
    """How an answer is tallied: its status, with the error code when it
    has one (a 409 for a lost race is not a 409 for a stale generation),
    or the transport error's name."""
    if status is None:
        return body
    code = loadgen.error_code(body)
    return '%d %s' % (status, code) if code else status


def write_round(ports, generations, seconds):
    """Each client PUTs its provider's traits until ``seconds`` are up
    (load side); the round and the generations the clients ended at.

    Client n writes provider n through ``ports[n % len(ports)]``.  Only
    200 answers are timed; after any other the client reads its
    provider's generation again and carries on.
    """
    lock = threading.Lock()
    latencies = []
    statuses = collections.Counter()
    generations = list(generations)
    deadline = time.monotonic() + seconds

    def client(index):
        conn = loadgen.Client(ports[index % len(ports)])
        path = traits_path(provider_uuid(index))
        generation = generations[index]
        mine, outcomes = [], collections.Counter()
        try:
            while time.monotonic() < deadline:
                status, body, elapsed = conn.call(
                    'PUT', path, {'traits': TRAIT_SETS[generation % 2],
                                  'resource_provider_generation': generation},
                    microversion=MICROVERSION)
                outcomes[outcome(status, body)] += 1
                if status == 200:
                    mine.append(elapsed)
                    generation = body['resource_provider_generation']
                    continue
                status, body, _ = conn.call('GET', path,
                                            microversion=MICROVERSION)
                if status == 200:
                    generation = body['resource_provider_generation']
        finally:
            conn.close()
        with lock:
            latencies.extend(mine)
            statuses.update(outcomes)
            generations[index] = generation

    cpu_before = time.process_time()
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(index,))
               for index in range(len(generations))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return (loadgen.Round(elapsed, latencies, dict(statuses),
                          time.process_time() - cpu_before), generations)


# ------------------------------------------------------------- measuring


def failures(result):
    return sum(n for k, n in result.statuses.items() if k != 200)


def describe_round(label, name, result, cpu, retried):
    per_write = max(result.completed, 1)
    line = ('%-13s %-8s %7.1f writes/s  %5d ok in %5.2fs  p50 %6.1f ms  '
            'p99 %6.1f ms'
            % (label, name, result.rate, result.completed, result.elapsed,
               harness.percentile(result.latencies, 0.5) * 1000,
               harness.percentile(result.latencies, 0.99) * 1000))
    if cpu is not None:
        line += ('  cpu/write: server %5.2f ms, db %5.2f ms, client %4.2f ms'
                 % (cpu['server'] / per_write * 1000,
                    cpu['postgres'] / per_write * 1000,
                    result.client_cpu / per_write * 1000))
    if retried is not None:
        line += '  retries %d' % retried
    if failures(result):
        line += '  FAILED: %s' % {k: n for k, n in result.statuses.items()
                                  if k != 200}
    return line


def measure_delay(stack, load, args, delay):
    """Warm both servers, then alternate them for ``args.rounds`` rounds;
    per server its rounds, their CPU and ours' retries."""
    ports, generations, rounds = {}, {}, {}
    for name in NAMES:
        ports[name], generations[name] = setup(stack.servers[name],
                                               args.clients)
        rounds[name] = {'results': [], 'cpu': [], 'retries': 0,
                        'warmup_failures': 0}
    label = '+%d ms' % delay
    for name in NAMES:
        warm, generations[name] = load.call(
            write_round, ports[name], generations[name], args.warmup_seconds)
        rounds[name]['warmup_failures'] = failures(warm)
        harness.log(describe_round(label + ' warm', name, warm, None, None))
    for number in range(1, args.rounds + 1):
        order = NAMES if number % 2 else tuple(reversed(NAMES))
        for name in order:
            server, meter = stack.servers[name], stack.meters[name]
            retried = retries(server) if name == 'ours' else None
            before = meter.read()
            result, generations[name] = load.call(
                write_round, ports[name], generations[name], args.seconds)
            used = meter.used(before, meter.read())
            if retried is not None:
                retried = retries(server) - retried
                rounds[name]['retries'] += retried
            rounds[name]['results'].append(result)
            rounds[name]['cpu'].append(used)
            harness.log(describe_round('%s r%d' % (label, number), name,
                                       result, used, retried))
    return rounds


def summarize(rounds):
    """Per server: median rate, latency percentiles, CPU per write."""
    summary = {}
    for name in NAMES:
        results, cpu = rounds[name]['results'], rounds[name]['cpu']
        latencies = [t for r in results for t in r.latencies]
        completed = max(sum(r.completed for r in results), 1)
        summary[name] = {
            'rate': statistics.median(r.rate for r in results),
            'rates': [r.rate for r in results],
            'p50': harness.percentile(latencies, 0.50) * 1000,
            'p99': harness.percentile(latencies, 0.99) * 1000,
            'failures': (sum(failures(r) for r in results)
                         + rounds[name]['warmup_failures']),
            'server_cpu': sum(c['server'] for c in cpu) / completed * 1000,
            'db_cpu': sum(c['postgres'] for c in cpu) / completed * 1000,
            'client_cpu': sum(r.client_cpu for r in results)
            / completed * 1000,
            'retries': rounds[name]['retries'] if name == 'ours' else None,
        }
    return summary


# -------------------------------------------------------------- report


def describe_database(args, version):
    if args.galera:
        return ('%s; innodb_flush_log_at_trx_commit=1 on every node, no '
                'binlog' % version)
    if args.backend == 'mysql':
        return '%s, innodb_flush_log_at_trx_commit=1, no binlog' % version
    return '%s, fsync=on, synchronous_commit=on' % version


def report(summaries, args, version, load_before):
    layout = ('2 instances x %d workers on 2 of 3 Galera nodes'
              % (args.workers // 2) if args.galera
              else '%d gunicorn workers' % args.workers)
    print('PUT /resource_providers/{uuid}/traits, microversion %s: %d '
          'clients (a provider each), %d rounds x %g s per server and '
          'delay, %s per service'
          % (MICROVERSION, args.clients, args.rounds, args.seconds, layout))
    print('machine: %d CPUs, Python %s, %s, upstream openstack-placement %s'
          % (os.cpu_count(), platform.python_version(),
             describe_database(args, version), harness.UPSTREAM_VERSION))
    print('flush added: sleep in every fsync/fdatasync of the database '
          'server (LD_PRELOAD shim)')
    print('load average (1 min) before the run: %.2f' % load_before)
    print()
    print('%-7s %-9s %9s  %-20s %7s %7s  %-26s %7s %6s'
          % ('flush', 'server', 'writes/s', 'rounds (writes/s)', 'p50 ms',
             'p99 ms', 'cpu ms/write server|db|cl', 'retries', 'failed'))
    for delay, summary in summaries:
        for name in NAMES:
            row = summary[name]
            print('%-7s %-9s %9.1f  %-20s %7.1f %7.1f  %8.2f|%6.2f|%4.2f'
                  '     %7s %6d'
                  % ('+%d ms' % delay, name, row['rate'],
                     ' '.join('%.0f' % r for r in row['rates']),
                     row['p50'], row['p99'], row['server_cpu'],
                     row['db_cpu'], row['client_cpu'],
                     '-' if row['retries'] is None else row['retries'],
                     row['failures']))
    print()
    print_ratios(summaries, args)
    return all(summary[name]['failures'] == 0
               for _, summary in summaries for name in NAMES)


def print_ratios(summaries, args):
    workers = ('2 x %d' % (args.workers // 2) if args.galera
               else str(args.workers))
    where = ', 2 of 3 Galera nodes' if args.galera else ''
    print('| flush added | workers each | this service | upstream | ratio |')
    print('|---|---|---|---|---|')
    for delay, summary in summaries:
        ours, upstream = summary['ours']['rate'], summary['upstream']['rate']
        print('| +%d ms%s | %s | %.1f/s | %.1f/s | %.2fx |'
              % (delay, where, workers, ours, upstream,
                 ours / upstream if upstream else 0.0))


def run(args, shim):
    """Each delay on a fresh stack; the summaries and the database's
    version."""
    summaries, version = [], None
    with loadgen.LoadProcess() as load:
        for delay in args.delays:
            with open_stack(args, shim, delay) as stack:
                if not shim_mapped(shim):
                    raise RuntimeError('the flush shim is not loaded in '
                                       'the database server')
                version = stack.database_version()
                harness.log('flush +%d ms: %s' % (delay, version))
                summaries.append((delay, summarize(
                    measure_delay(stack, load, args, delay))))
    return summaries, version


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    directory = tempfile.mkdtemp(prefix='placement-bench-shim-')
    try:
        summaries, version = run(args, build_shim(directory))
    except KeyboardInterrupt:
        harness.log('interrupted; servers and databases stopped')
        return 130
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    harness.log('done in %.0f s' % (time.monotonic() - started))
    return 0 if report(summaries, args, version, load_before) else 1


if __name__ == '__main__':
    sys.exit(main())
