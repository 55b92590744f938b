"""Faults of a host's state processes under kolla-ansible's uwsgi.ini, as
clients see them.

    .venv/bin/python benchmarks/state_faults.py [--providers 200,10000]
        [--workers 2] [--clients 4] [--backend sqlite|postgresql]

For each size, inserts the candidates benchmark's flat deployment
(``--providers`` compute nodes, 5 sharing storage providers, 10 %
carrying an instance) with SQL, starts this service under kolla's
``uwsgi.ini`` (``lazy-apps``: the workers ask the state readers the
first of them started), and has ``--clients`` clients send nova's
request with ``limit=5`` (``GET /allocation_candidates?resources=VCPU:1
&limit=5``) one after the other without pause, while the state's
processes go through, one phase after the other:

- nothing (5 s);
- the keeper stopped (SIGSTOP) for 8 s, then 5 s after it continued;
- the reader of the first worker's slot stopped for 8 s (the keeper kills
  it after 2 s and forks another), then 5 s after it continued;
- 8 s after the keeper was killed (SIGKILL: its readers go on answering,
  one of them starts another keeper, which reads the state and takes
  their slots back);
- 8 s after a reader was killed (the keeper forks another);
- 8 s with two more clients each asking for a listing of every provider
  (74 MB of JSON at 100,000 providers), one after the other.

Each request is counted in the phase it ended in: how many, how many
not 200, the slowest.  Nothing here compares with upstream, which keeps
no state to lose.
"""

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402
import harness  # noqa: E402
import host_memory  # noqa: E402
import worker_memory  # noqa: E402

from tests import pg_cluster  # noqa: E402
from tests import processes  # noqa: E402

QUERY = '/allocation_candidates?resources=VCPU:1&limit=5'


class Clients:
    """Closed-loop clients; each answer tallied in the current phase."""

    def __init__(self, port):
        self.port = port
        self.phase = 'start'
        self.tally = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def start(self, count, path=QUERY):
        for _ in range(count):
            thread = threading.Thread(target=self._loop, args=(path,),
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def _loop(self, path):
        conn = candidates.Connection(self.port, 600)
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                status, _raw, _took = conn.request('GET', path)
            except OSError:
                status = 'refused'
                conn = candidates.Connection(self.port, 600)
            seconds = time.monotonic() - began
            with self._lock:
                entry = self.tally.setdefault(
                    (self.phase, path), [0, 0, 0.0])
                entry[0] += 1
                entry[1] += status != 200
                entry[2] = max(entry[2], seconds)

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()


def state_processes(directory):
    """(the keeper's pid, its readers' pids) of the server in
    ``directory``."""
    found = processes.pids_where(
        lambda argv: b'placement.cmd.state_process' in argv and any(
            arg.startswith(directory.encode()) for arg in argv))
    keepers = [pid for pid in found if processes.parent_of(pid) not in found]
    readers = [pid for pid in found if processes.parent_of(pid) in found]
    return (keepers[0] if keepers else None), readers


def phases(clients, directory, port):
    """Run the phases; [(phase, seconds)] in order."""
    def during(name, seconds):
        clients.phase = name
        time.sleep(seconds)

    during('none', 5)
    keeper, readers = state_processes(directory)
    os.kill(keeper, signal.SIGSTOP)
    try:
        during('keeper stopped (SIGSTOP) 8 s', 8)
    finally:
        os.kill(keeper, signal.SIGCONT)
    during('5 s after it continued', 5)
    reader = readers[0]
    os.kill(reader, signal.SIGSTOP)
    try:
        during('a reader stopped (SIGSTOP) 8 s', 8)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(reader, signal.SIGCONT)
    during('5 s after (it was replaced)', 5)
    keeper, _readers = state_processes(directory)
    os.kill(keeper, signal.SIGKILL)
    during('8 s after the keeper was killed', 8)
    _keeper, readers = state_processes(directory)
    os.kill(readers[0], signal.SIGKILL)
    during('8 s after a reader was killed', 8)
    clients.phase = '8 s with 2 clients listing every provider'
    clients.start(2, '/resource_providers')
    time.sleep(8)
    clients.phase = 'end'


def report(providers, clients):
    print('\n%d compute nodes: %s' % (providers, QUERY))
    print('%-44s %9s %8s %9s' % ('phase', 'requests', 'non-200',
                                 'slowest s'))
    for (phase, path), (count, failed, slowest) in clients.tally.items():
        if phase in ('start', 'end'):
            continue
        label = phase if path == QUERY else '  (the listings themselves)'
        print('%-44s %9d %8d %9.2f' % (label, count, failed, slowest))


def run(providers, args):
    with contextlib.ExitStack() as stack:
        if args.backend == 'postgresql':
            cluster = pg_cluster.Cluster().start()
            stack.callback(cluster.stop)
            cluster.create_database('faults')
            url = cluster.url('faults')
            root = cluster.root
        else:
            root = tempfile.mkdtemp(prefix='placement-faults-')
            url = 'sqlite:///%s' % os.path.join(root, 'faults.sqlite')
        started = time.perf_counter()
        worker_memory.insert(url, providers)
        harness.log('inserted %d compute nodes in %.0f s' % (
            providers, time.perf_counter() - started))
        directory = os.path.join(root, 'uwsgi')
        server, port = host_memory.start('uwsgi', directory, url,
                                         args.workers)
        stack.callback(server.stop)
        host_memory.warm(port, QUERY, args.workers)
        clients = Clients(port)
        clients.start(args.clients)
        try:
            phases(clients, directory, port)
        finally:
            clients.stop()
        report(providers, clients)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', default='200,10000')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--clients', type=int, default=4)
    parser.add_argument('--backend', choices=('sqlite', 'postgresql'),
                        default='postgresql')
    args = parser.parse_args()
    for providers in (int(n) for n in args.providers.split(',')):
        run(providers, args)


if __name__ == '__main__':
    main()
