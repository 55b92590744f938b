"""A host's memory for the in-memory state, by worker count, and the wait
of the first request after a worker starts.

    .venv/bin/python benchmarks/host_memory.py [--providers 100000]
        [--workers 1,2,5,10] [--servers placement-api,uwsgi]
        [--rounds 0] [--churn 500]

Inserts the candidates benchmark's flat deployment (``--providers``
compute nodes, 5 sharing storage providers, 10 % carrying an instance)
into a throwaway PostgreSQL with SQL (as ``worker_memory.py`` does), then
for each server (``placement-api``; ``uwsgi``: kolla-ansible's uwsgi.ini,
``lazy-apps``, the application loaded in each worker after the fork,
the workers asking the state process they started, which is counted)
and each worker count:

- starts it, sends nova's default request from as many clients as
  there are workers until every worker has answered a few, and measures
  the whole server's memory, master and workers: total PSS (each shared
  page counted once, split between the processes that map it), from
  ``/proc/PID/smaps_rollup``; then sends 30 s of mixed traffic (nova's
  requests, and a compute node's own reads for nodes all over the
  cloud, then full listings: what hours of traffic read, so that pages a
  worker shares but touches are counted as copied) and measures it again
  with total RSS (a shared page counted in every process); then asks
  every provider's allocations once (and every fifth one's tree, as
  nova-compute does each minute: ``every_node_once``), so that what
  each worker keeps of them is as full as a day makes it, and measures
  again;
- nova's default request and ``limit=50``, one client, medians;
- the first requests after a worker restart: one worker is killed (the
  master starts another, as it would after ``max-requests``, a crash or
  a reload) and nova's default request is sent at once, one at a time,
  until the new worker has answered; the slowest answer and the new
  worker's first are printed (a worker that loads its state before it
  serves, or that answers from SQL until it has, answers within its
  usual time).

With ``--rounds N`` it then measures memory under churn instead, with
the largest worker count: after the mix and full listings and unbounded
requests from every worker (so that the workers' copies of the parent's
pages are made), N rounds that each create and then delete
``--churn`` providers (nested trees under new roots, custom traits,
classes and aggregates) and 4 x ``--churn`` consumers, printing total
PSS and the growth against the previous round (``--max-worker-memory
0``, so that no worker is replaced meanwhile).  Ours only: upstream
keeps no state (its memory is its interpreter's).
"""

import argparse
import concurrent.futures
import glob
import os
import random
import signal
import statistics
import sys
import threading
import time
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402
import harness  # noqa: E402
import worker_memory  # noqa: E402

from placement.state import answer_store  # noqa: E402
from tests import pg_cluster  # noqa: E402
from tests import processes  # noqa: E402
from tests import wsgi_servers  # noqa: E402

NAMESPACE = uuidlib.UUID('0b3a51a1-52b4-4ef4-8e6d-1f0a0c9d2e77')


def smaps_kb(pid, key):
    with open('/proc/%d/smaps_rollup' % pid) as handle:
        for line in handle:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    return 0


def totals_mb(pids):
    """(total PSS, total RSS) of ``pids`` in MB."""
    pss = rss = 0
    for pid in pids:
        try:
            pss += smaps_kb(pid, 'Pss')
            rss += smaps_kb(pid, 'Rss')
        except OSError:
            pass
    return pss / 1024, rss / 1024


def by_process(server):
    """Each process's PSS in MB, by role, and in brackets what of it is
    its own (private pages): what a total is made of, and how much of a
    shared state a process has copied."""
    state = set(processes.pids_where(
        lambda argv: b'placement.cmd.state_process' in argv))
    found = []
    for pid in server.pids():
        role = ('master' if pid == server.proc.pid
                else 'state' if pid in state else 'worker')
        try:
            own = (smaps_kb(pid, 'Private_Clean')
                   + smaps_kb(pid, 'Private_Dirty'))
            found.append('%s %.0f (%.0f)' % (
                role, smaps_kb(pid, 'Pss') / 1024, own / 1024))
        except OSError:
            pass
    return ', '.join(sorted(found))


def store_mb(pids):
    """(MB the host's stores of kept answers take in /dev/shm, MB of them
    the PSS of ``pids`` counts): their pages are taken whole when made
    (``answer_store``), but a PSS counts only the pages a process has
    touched, so a host's total is its PSS and the difference."""
    taken = 0
    for path in glob.glob(os.path.join(answer_store.DIRECTORY,
                                       'placement-answers-*')):
        try:
            taken += os.stat(path).st_blocks * 512
        except OSError:
            pass
    counted = 0
    for pid in pids:
        try:
            with open('/proc/%d/smaps' % pid) as handle:
                inside = False
                for line in handle:
                    if not line[:1].isupper():
                        inside = 'placement-answers-' in line
                    elif inside and line.startswith('Pss:'):
                        counted += int(line.split()[1]) * 1024
        except OSError:
            pass
    return taken / 2 ** 20, counted / 2 ** 20


def start(kind, directory, url, workers, max_worker_memory=None):
    """(harness.Server, port) of ``kind`` with ``workers`` workers (and
    placement-api's ``--max-worker-memory``, when given)."""
    os.makedirs(directory, exist_ok=True)
    conf = harness.write_config(directory, url, sync_on_startup=False)
    port = harness.free_port()
    bindir = os.path.dirname(sys.executable)
    if kind == 'placement-api':
        argv = [os.path.join(bindir, 'placement-api'), '--config-file',
                conf, '--bind', '127.0.0.1:%d' % port, '--workers',
                str(workers)]
        if max_worker_memory is not None:
            argv += ['--max-worker-memory', str(max_worker_memory)]
        env = dict(os.environ)
    else:
        ini = os.path.join(directory, 'uwsgi.ini')
        with open(ini, 'w') as handle:
            handle.write(wsgi_servers.KOLLA_UWSGI_INI.format(
                port=port, workers=workers))
        argv = [os.path.join(bindir, 'uwsgi'), '--ini', ini]
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=directory)
    return harness.Server('ours', port, argv, env, directory), port


def workers_of(server):
    """The server's workers: every process of its session but the master
    and the state keeper and readers (under ``lazy-apps``)."""
    state = set(processes.pids_where(
        lambda argv: b'placement.cmd.state_process' in argv))
    return sorted(pid for pid in server.pids()
                  if pid != server.proc.pid and pid not in state)


def nova_query(providers):
    return {query.label: query.path
            for query in candidates.flat_queries(providers)}


def warm(port, path, workers, rounds=6):
    """Nova's request from ``workers`` clients at once, ``rounds`` times
    over: every worker has answered some (its state read)."""
    def one(_):
        status, raw, seconds = candidates.Connection(port, 600).request(
            'GET', path)
        if status != 200:
            raise RuntimeError('%s %s' % (status, raw[:300]))
        return seconds
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(workers * rounds)))


def mix(port, providers, workers, seconds=30):
    """A day's traffic in ``seconds``, from ``workers`` clients at once:
    nova's default request and ``limit=50``, and what every nova-compute
    asks of its own provider (its tree, usages, traits, aggregates), for
    providers all over the cloud, then one full listing: every part of
    the state is read, as hours of traffic would read it."""
    queries = nova_query(providers)
    rng = random.Random(7)

    def one(number):
        node = candidates.uid('rp', 'flat-cn-%05d' % rng.randrange(
            providers))
        path = [queries['nova default'], queries['simple limit=50'],
                '/resource_providers?in_tree=%s' % node,
                '/resource_providers/%s/usages' % node,
                '/resource_providers/%s/traits' % node,
                '/resource_providers/%s/aggregates' % node][number % 6]
        status, raw, _ = candidates.Connection(port, 600).request('GET',
                                                                  path)
        if status != 200:
            raise RuntimeError('%s %s %s' % (path, status, raw[:300]))

    deadline = time.monotonic() + seconds
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        number = 0
        while time.monotonic() < deadline:
            list(pool.map(one, range(number, number + 60)))
            number += 60
        list(pool.map(lambda _: candidates.Connection(port, 600).request(
            'GET', '/resource_providers'), range(workers * 2)))


def every_node_once(port, providers, workers, seconds=180):
    """What each nova-compute asks of its own provider every minute, its
    allocations (and every fifth minute its tree), once for every
    provider, from ``workers`` clients at once (at most ``seconds``):
    what each worker keeps of them (``state.provider_allocations``,
    ``state.listing``) is then as full as a day of that traffic makes
    it, where the mix keeps little."""
    deadline = time.monotonic() + seconds

    def one(number):
        if time.monotonic() > deadline:
            return
        node = candidates.uid('rp', 'flat-cn-%05d' % number)
        paths = ['/resource_providers/%s/allocations' % node]
        if number % 5 == 0:
            paths.append('/resource_providers?in_tree=%s' % node)
        for path in paths:
            status, raw, _ = candidates.Connection(port, 600).request(
                'GET', path)
            if status != 200:
                raise RuntimeError('%s %s %s' % (path, status, raw[:300]))

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(providers), chunksize=100))


SETTLE_SECONDS = 15


class _PeakSampler(threading.Thread):
    """The server's highest total PSS, sampled every second."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.peak = 0.0
        self._done = threading.Event()

    def run(self):
        while not self._done.wait(1):
            self.peak = max(self.peak, totals_mb(self.server.pids())[0])

    def stop(self):
        self._done.set()
        self.join()


def median_ms(port, path, times=15):
    conn = candidates.Connection(port, 600)
    seconds = []
    for _ in range(times):
        status, raw, took = conn.request('GET', path)
        if status != 200:
            raise RuntimeError('%s %s' % (status, raw[:300]))
        seconds.append(took)
    return statistics.median(seconds) * 1000


def after_restart(server, port, path):
    """(the first answer's ms, the slowest's) of nova's request sent one
    at a time, at once, after one worker is killed, until the master has
    started another and it has had its share (three per worker) of the
    requests: with one worker, every one of them went to the new one."""
    before = set(workers_of(server))
    os.kill(min(before), signal.SIGKILL)
    conn_timeout = 600
    times = []
    deadline = time.monotonic() + 120
    replaced_at = None
    while time.monotonic() < deadline:
        if replaced_at is None and set(workers_of(server)) - before:
            replaced_at = len(times)
        try:
            status, raw, took = candidates.Connection(
                port, conn_timeout).request('GET', path)
        except OSError:
            continue    # the killed worker's connection
        if status == 200:
            times.append(took * 1000)
        if replaced_at is not None and (
                len(times) - replaced_at >= 3 * len(before)):
            return times[0], max(times)
    raise RuntimeError('no worker replaced within 120 s')


def measure(kind, url, root, workers, providers, max_worker_memory=None):
    queries = nova_query(providers)
    server, port = start(kind, os.path.join(root, '%s-%d' % (kind, workers)),
                         url, workers, max_worker_memory)
    try:
        warm(port, queries['nova default'], workers)
        warmed, _ = totals_mb(server.pids())
        print('  warmed, PSS (own) MB by process: %s' % by_process(server),
              flush=True)
        sampler = _PeakSampler(server)
        sampler.start()
        mix(port, providers, workers)
        sampler.stop()
        # Long enough for a worker past --max-worker-memory to be
        # replaced (it checks every 5 s) and its successor to answer.
        time.sleep(SETTLE_SECONDS)
        warm(port, queries['nova default'], workers, rounds=2)
        pss, rss = totals_mb(server.pids())
        print('  after the mix, PSS (own) MB by process: %s'
              % by_process(server), flush=True)
        every_node_once(port, providers, workers)
        kept, _ = totals_mb(server.pids())
        print('  after every node\'s own calls, PSS (own) MB by process: %s'
              % by_process(server), flush=True)
        taken, counted = store_mb(server.pids())
        print('  the store of kept answers: %.0f MB in %s, %.0f of them in '
              'the PSS; the host\'s total with all of it: %.0f MB' % (
                  taken, answer_store.DIRECTORY, counted,
                  kept + taken - counted), flush=True)
        nova = median_ms(port, queries['nova default'])
        limited = median_ms(port, queries['simple limit=50'])
        first, slowest = after_restart(server, port,
                                       queries['nova default'])
        print('%-13s %2d workers  PSS %5.0f MB warmed, %5.0f at most during '
              'the mix, %5.0f after it, %5.0f after every node\'s own '
              'calls  RSS %5.0f MB  nova %5.1f ms  limit=50 %4.1f ms  after '
              'a restart: first %6.1f ms, slowest %6.1f ms' % (
                  kind, workers, warmed, sampler.peak, pss, kept, rss, nova,
                  limited, first, slowest), flush=True)
        return pss
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=100000)
    parser.add_argument('--workers', default='1,2,5,10')
    parser.add_argument('--servers', default='placement-api,uwsgi')
    parser.add_argument('--rounds', type=int, default=0)
    parser.add_argument('--churn', type=int, default=500)
    parser.add_argument('--max-worker-memory', type=int,
                        help="placement-api's, in MB (default: its own)")
    args = parser.parse_args()
    cluster = pg_cluster.Cluster().start()
    try:
        cluster.create_database('memory')
        url = cluster.url('memory')
        started = time.perf_counter()
        worker_memory.insert(url, args.providers)
        harness.log('inserted %d compute nodes in %.0f s' % (
            args.providers, time.perf_counter() - started))
        counts = [int(n) for n in args.workers.split(',')]
        for kind in args.servers.split(','):
            if args.rounds:
                churn(kind, url, cluster.root, max(counts), args)
                continue
            pss = {n: measure(kind, url, cluster.root, n, args.providers,
                              args.max_worker_memory)
                   for n in counts}
            if 1 in pss:
                print('%-13s total PSS against 1 worker: %s' % (kind, ', '.join(
                    '%d: %.2fx' % (n, pss[n] / pss[1]) for n in counts)))
    finally:
        cluster.stop()


def churn(kind, url, root, workers, args):
    """Rounds of making and deleting providers and consumers; total PSS
    after each."""
    import churn_load  # noqa: E402  (its own module: the writes)
    server, port = start(kind, os.path.join(root, 'churn'), url, workers,
                         args.max_worker_memory)
    try:
        queries = nova_query(args.providers)
        path = queries['nova default']
        warm(port, path, workers)
        # Every page of the state touched first by every worker: its
        # copies of the parent's pages are then made, and what grows is
        # what it keeps.  The mix alone leaves it to chance whether each
        # worker answered a request that walks every provider (a full
        # listing, an unbounded request): a worker's first one copied
        # 40 MB in whichever round it came.
        mix(port, args.providers, workers)
        for walking in ('/resource_providers', queries['simple']):
            warm(port, walking, workers, rounds=3)
        previous = None
        for number in range(1, args.rounds + 1):
            churn_load.round_trip(port, args.churn, number)
            warm(port, path, workers)
            pss, _ = totals_mb(server.pids())
            growth = ('' if previous is None else '  %+.2f %%' % (
                100.0 * (pss - previous) / previous))
            print('round %2d  PSS %7.1f MB%s' % (number, pss, growth),
                  flush=True)
            previous = pss
    finally:
        server.stop()


if __name__ == '__main__':
    main()
