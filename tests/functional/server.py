"""A real ``placement-api`` process for functional tests, and a tiny client.

``running(database_url, directory)`` starts the service with gunicorn
workers on the test's database, on a free loopback port, waits until it
answers and stops its whole process group afterwards; its log is
``directory/server.log``.  ``request`` sends one request with the admin
token on a fresh connection, as independent clients would (``exchange``
gives the answer's headers too).
"""

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

STARTUP_TIMEOUT = 60


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def request(port, method, path, body=None, version='1.39'):
    """(status, body): the body decoded from JSON, else its text, or None."""
    status, _headers, decoded = exchange(port, method, path, body, version)
    return status, decoded


def exchange(port, method, path, body=None, version='1.39', headers=None):
    """(status, response headers, body decoded as ``request`` does);
    ``headers`` are sent besides (and over) the usual ones."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    sent = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
            'OpenStack-API-Version': 'placement %s' % version}
    sent.update(headers or {})
    payload = None
    if body is not None:
        payload = json.dumps(body)
        sent['Content-Type'] = 'application/json'
    try:
        conn.request(method, path, body=payload, headers=sent)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    if not data:
        return response.status, response.headers, None
    try:
        return response.status, response.headers, json.loads(data)
    except ValueError:
        return (response.status, response.headers,
                data.decode('utf-8', 'replace'))


@contextlib.contextmanager
def running(database_url, directory, **options):
    """placement-api with ``workers`` workers on ``database_url``: its
    port (``started``'s options)."""
    with started(database_url, directory, **options) as (port, _process):
        yield port


@contextlib.contextmanager
def started(database_url, directory, workers=2, database_options='',
            extra_config='', auth_strategy='noauth2', extra_args=(),
            command=None):
    """placement-api with ``workers`` workers on ``database_url``: (its
    port, its process).  ``database_options``: more [placement_database]
    lines; ``extra_config``: more sections; ``extra_args``: more
    command-line arguments; ``command``: the program and its first
    arguments, if not the placement-api script."""
    config = directory / 'placement.conf'
    config.write_text(
        '[api]\nauth_strategy = %s\n'
        '[placement_database]\nconnection = %s\n%s%s'
        % (auth_strategy, database_url, database_options, extra_config))
    (directory / 'policy.yaml').write_text('{}\n')
    port = free_port()
    log_path = directory / 'server.log'
    with open(log_path, 'w') as log:
        process = subprocess.Popen(
            list(command or [os.path.join(os.path.dirname(sys.executable),
                                          'placement-api')]) +
            ['--config-file', str(config), '--bind', '127.0.0.1:%d' % port,
             '--workers', str(workers)] + list(extra_args),
            cwd=directory, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            wait_until_up(port, process, log_path)
            yield port, process
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def wait_until_up(port, process, log_path, timeout=STARTUP_TIMEOUT):
    """Return once ``GET /`` on ``port`` answers 200; fail, with the end
    of the server's log, if ``process`` exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if request(port, 'GET', '/')[0] == 200:
                return
        except OSError:
            pass
        assert process.poll() is None, log_path.read_text()[-4000:]
        assert time.monotonic() < deadline, (
            'server did not come up: %s' % log_path.read_text()[-4000:])
        time.sleep(0.1)
