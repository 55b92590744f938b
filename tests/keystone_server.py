"""A throwaway keystone for the tests that need real tokens.

Keystone (from the package registry) lives in a venv of its own, never in
the service's dependencies: ``$PLACEMENT_TEST_KEYSTONE_VENV`` names it
(``.ci/run`` and ``tox -e keystone`` build it).  The server gets an SQLite
database, fernet keys in a temporary directory, ``keystone-manage
db_sync``/``fernet_setup``/``credential_setup``/``bootstrap``, and its
WSGI application under gunicorn on a free loopback port; it starts in a
few seconds and is removed afterwards.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

ADMIN_PASSWORD = 'admin-secret'


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Keystone:

    def __init__(self, venv):
        self.venv = venv
        self.root = tempfile.mkdtemp(prefix='placement-test-keystone-')
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d/v3' % self.port
        self.config = os.path.join(self.root, 'keystone.conf')
        self.proc = None

    def _manage(self, *args):
        subprocess.run(
            [os.path.join(self.venv, 'bin', 'keystone-manage'),
             '--config-file', self.config, *args],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def start(self):
        user = group = 'root' if os.geteuid() == 0 else str(os.getuid())
        with open(self.config, 'w') as handle:
            handle.write(
                '[DEFAULT]\nlog_file = %s\n'
                '[database]\nconnection = sqlite:///%s\n'
                '[fernet_tokens]\nkey_repository = %s\n'
                '[fernet_receipts]\nkey_repository = %s\n'
                '[credential]\nkey_repository = %s\n'
                % tuple(os.path.join(self.root, name) for name in (
                    'keystone.log', 'keystone.db', 'fernet-keys',
                    'fernet-receipts', 'credential-keys')))
        self._manage('db_sync')
        for command in ('fernet_setup', 'credential_setup'):
            self._manage(command, '--keystone-user', user,
                         '--keystone-group', group)
        self._manage('bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                     '--bootstrap-admin-url', self.url,
                     '--bootstrap-internal-url', self.url,
                     '--bootstrap-public-url', self.url,
                     '--bootstrap-region-id', 'RegionOne')
        env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=self.config)
        env.pop('PYTHONPATH', None)
        # Keystone's configuration also parses the command line, which
        # under gunicorn is gunicorn's: the app loads with it emptied.
        with open(os.path.join(self.root, 'keystone_app.py'), 'w') as app:
            app.write('import sys\nsys.argv = sys.argv[:1]\n'
                      'from keystone.wsgi.api import application\n')
        log = open(os.path.join(self.root, 'gunicorn.log'), 'ab')
        self.proc = subprocess.Popen(
            [os.path.join(self.venv, 'bin', 'gunicorn'), '--bind',
             '127.0.0.1:%d' % self.port, '--workers', '2',
             '--chdir', self.root, 'keystone_app:application'],
            cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            self._wait()
        except BaseException:
            # A gunicorn whose workers fail respawns them for ever: never
            # leave one behind.
            self.stop()
            raise
        return self

    def _wait(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('keystone did not start: %s'
                                   % self.log_tail())
            time.sleep(0.2)

    def log_tail(self):
        for name in ('gunicorn.log', 'keystone.log'):
            try:
                with open(os.path.join(self.root, name)) as handle:
                    text = handle.read()[-2000:]
            except OSError:
                continue
            if text:
                return text
        return ''

    def stop(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
