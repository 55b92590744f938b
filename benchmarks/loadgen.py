"""A small closed-loop HTTP load generator for the benchmarks.

``clients`` threads, each with its own ``http.client`` connection (kept
alive when the server allows it; gunicorn's sync workers close it after
every response, and the connection then reopens by itself), take request
numbers from one shared counter until ``requests`` are done or
``max_seconds`` have passed.  It runs in a process of its own (see
``LoadProcess``) so the benchmark's bookkeeping never holds its GIL, and
it reports its own CPU time: on a small machine the client shares the
cores with the servers and the database.
"""

import collections
import http.client
import itertools
import multiprocessing
import threading
import time

HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}


class Round:
    """The outcome of one burst of requests against one server."""

    def __init__(self, elapsed, latencies, statuses, client_cpu):
        self.elapsed = elapsed
        self.latencies = latencies
        self.statuses = statuses
        self.client_cpu = client_cpu

    @property
    def completed(self):
        return len(self.latencies)

    @property
    def rate(self):
        return self.completed / self.elapsed if self.elapsed else 0.0


def run(port, method, path, body_format, requests, clients, max_seconds,
        expected_status):
    """Send ``requests`` requests; body ``body_format % n`` for n = 0, 1...

    Only requests answered with ``expected_status`` count as completed;
    anything else is tallied in ``statuses`` and not timed.
    """
    numbers = itertools.count()
    lock = threading.Lock()
    latencies = []
    statuses = collections.Counter()
    deadline = time.monotonic() + max_seconds

    def client():
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
        mine, outcomes = [], collections.Counter()
        try:
            while time.monotonic() < deadline:
                with lock:
                    number = next(numbers)
                if number >= requests:
                    break
                body = (body_format % number).encode()
                started = time.perf_counter()
                try:
                    conn.request(method, path, body=body, headers=HEADERS)
                    response = conn.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    outcomes[type(exc).__name__] += 1
                    continue
                if response.status == expected_status:
                    mine.append(time.perf_counter() - started)
                outcomes[response.status] += 1
        finally:
            conn.close()
        with lock:
            latencies.extend(mine)
            statuses.update(outcomes)

    cpu_before = time.process_time()
    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return Round(elapsed, latencies, dict(statuses),
                 time.process_time() - cpu_before)


class LoadProcess:
    """One long-lived child process that runs ``run`` on request.

    Leaving the block on an error (Ctrl-C included) kills the child at
    once rather than waiting for its burst to end.
    """

    def __enter__(self):
        self._pool = multiprocessing.get_context('spawn').Pool(1)
        return self

    def __exit__(self, exc_type, *exc_info):
        if exc_type is None:
            self._pool.close()
        else:
            self._pool.terminate()
        self._pool.join()

    def run(self, *args, **kwargs):
        return self._pool.apply(run, args, kwargs)
