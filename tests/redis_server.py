"""A throwaway redis server, as kolla-ansible's osprofiler backend is:
Debian's ``redis-server`` on free loopback ports, nothing kept on disk,
stopped and removed afterwards; with ``sentinel``, behind a Sentinel as
kolla-ansible's valkey is (a password on the server, none on the
Sentinel, which names the server ``kolla``)."""

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

from tests.functional import server as functional_server

PASSWORD = 'valkey-secret'
SENTINEL_NAME = 'kolla'


def installed():
    """The path of ``redis-server``, or None."""
    found = shutil.which('redis-server')
    if found:
        return found
    if os.access('/usr/bin/redis-server', os.X_OK):
        return '/usr/bin/redis-server'
    return None


@contextlib.contextmanager
def running(sentinel=False):
    """A redis server: (its ``redis://`` URL, and with ``sentinel`` the
    URL kolla-ansible writes for it, through a Sentinel)."""
    directory = tempfile.mkdtemp(prefix='placement-redis-')
    port = functional_server.free_port()
    argv = [installed(), '--port', str(port), '--bind', '127.0.0.1',
            '--save', '', '--appendonly', 'no', '--dir', directory]
    url = 'redis://127.0.0.1:%d' % port
    if sentinel:
        argv += ['--requirepass', PASSWORD]
        url = 'redis://default:%s@127.0.0.1:%d' % (PASSWORD, port)
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, directory, True)
        stack.enter_context(_process(argv, port))
        if not sentinel:
            yield url, None
            return
        sentinel_port = functional_server.free_port()
        config = os.path.join(directory, 'sentinel.conf')
        with open(config, 'w') as handle:
            handle.write(
                'port %d\nbind 127.0.0.1\ndir %s\n'
                'sentinel monitor %s 127.0.0.1 %d 1\n'
                'sentinel auth-pass %s %s\n'
                % (sentinel_port, directory, SENTINEL_NAME, port,
                   SENTINEL_NAME, PASSWORD))
        stack.enter_context(_process([installed(), config, '--sentinel'],
                                     sentinel_port))
        yield url, ('redis://default:%s@127.0.0.1:%d?sentinel=%s&db=0'
                    '&socket_timeout=60&retry_on_timeout=yes'
                    % (PASSWORD, sentinel_port, SENTINEL_NAME))


@contextlib.contextmanager
def _process(argv, port):
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(('127.0.0.1', port), 1):
                    break
            except OSError:
                assert process.poll() is None, '%s exited' % argv
                assert time.monotonic() < deadline, '%s did not start' % argv
                time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)
