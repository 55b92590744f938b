"""A small closed-loop HTTP load generator for the benchmarks.

``clients`` threads, each with its own ``http.client`` connection (kept
alive when the server allows it; gunicorn's sync workers close it after
every response, and the connection then reopens by itself), take request
numbers from one shared counter until ``requests`` are done or
``max_seconds`` have passed.  It runs in a process of its own (see
``LoadProcess``) so the benchmark's bookkeeping never holds its GIL, and
it reports its own CPU time: on a small machine the client shares the
cores with the servers and the database.

``Client`` is the same kind of connection for scenarios that read the
answers (JSON in, JSON out); ``LoadProcess.call`` runs such a scenario,
any module-level function, in the load process.
"""

import collections
import http.client
import itertools
import json
import multiprocessing
import threading
import time

HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}


def headers(microversion=None, body=True):
    """``HEADERS``, at another microversion, without Content-Type if no body.
    """
    chosen = dict(HEADERS)
    if microversion is not None:
        chosen['OpenStack-API-Version'] = 'placement %s' % microversion
    if not body:
        del chosen['Content-Type']
    return chosen


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
        expected_status, microversion=None):
    """Send ``requests`` requests; body ``body_format % n`` for n = 0, 1...

    Only requests answered with ``expected_status`` count as completed;
    anything else is tallied in ``statuses`` and not timed.  A
    ``body_format`` of None sends no body (and no Content-Type);
    ``microversion`` replaces the default 1.39.
    """
    sent_headers = headers(microversion, body=body_format is not None)
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
                body = (None if body_format is None
                        else (body_format % number).encode())
                started = time.perf_counter()
                try:
                    conn.request(method, path, body=body,
                                 headers=sent_headers)
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


class Client:
    """One connection that sends JSON and decodes the JSON answers.

    ``call`` returns (status, decoded body or None, seconds); a transport
    error gives status None and the exception's class name as the body,
    and the connection reopens on the next call.
    """

    def __init__(self, port, timeout=60):
        self.conn = http.client.HTTPConnection('127.0.0.1', port,
                                               timeout=timeout)

    def call(self, method, path, body=None, microversion=None):
        payload = None if body is None else json.dumps(body).encode()
        sent_headers = headers(microversion, body=payload is not None)
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=payload,
                              headers=sent_headers)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()
            return None, type(exc).__name__, time.perf_counter() - started
        elapsed = time.perf_counter() - started
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = None
        return response.status, decoded, elapsed

    def close(self):
        self.conn.close()


def error_code(body):
    """The ``code`` of the first error in a Placement error body, or None.
    """
    try:
        return body['errors'][0].get('code')
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


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

    def call(self, function, *args, **kwargs):
        """``function(*args, **kwargs)`` in the load process.

        ``function`` must be importable there: a module-level function of
        the benchmark script (kept under ``if __name__ == '__main__'``).
        """
        return self._pool.apply(function, args, kwargs)
