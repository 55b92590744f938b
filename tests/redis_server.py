"""A throwaway redis server, as kolla-ansible's osprofiler backend is:
Debian's ``redis-server`` on a free loopback port, nothing kept on disk,
stopped and removed afterwards."""

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time

from tests.functional import server as functional_server


def installed():
    """The path of ``redis-server``, or None."""
    return shutil.which('redis-server') or (
        '/usr/bin/redis-server' if shutil.os.access(
            '/usr/bin/redis-server', shutil.os.X_OK) else None)


@contextlib.contextmanager
def running():
    """A redis server: its ``redis://`` URL."""
    directory = tempfile.mkdtemp(prefix='placement-redis-')
    port = functional_server.free_port()
    process = subprocess.Popen(
        [installed(), '--port', str(port), '--bind', '127.0.0.1',
         '--save', '', '--appendonly', 'no', '--dir', directory],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(('127.0.0.1', port), 1):
                    break
            except OSError:
                assert process.poll() is None, 'redis-server exited'
                assert time.monotonic() < deadline, 'redis did not start'
                time.sleep(0.05)
        yield 'redis://127.0.0.1:%d' % port
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)
