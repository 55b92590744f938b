"""A throwaway MariaDB server for the test session.

Debian's ``mariadb-server`` binaries on a data directory bootstrapped with
``mariadb-install-db`` in a temp dir, listening on a free loopback port,
root without a password, durability off; removed afterwards.  As root the
server runs as the ``mysql`` account (mariadbd refuses to run as root
without being told to).  Databases use utf8mb4, the character set
deployments create Placement's database with.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pymysql

_SEARCH = ('/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin')


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def find_program(name):
    explicit = os.environ.get('PLACEMENT_TEST_MYSQL_BINDIR')
    directories = ([explicit] if explicit else []) + list(_SEARCH)
    found = shutil.which(name)
    if found:
        return found
    for directory in directories:
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK):
            return path
    raise RuntimeError('MariaDB binaries (%s) not found: install '
                       'mariadb-server or set PLACEMENT_TEST_MYSQL_BINDIR'
                       % name)


def installed():
    """Whether a server can be started here: its programs, and the
    ``mysql`` account it runs as under root (RuntimeError if not)."""
    for name in ('mariadbd', 'mariadb-install-db'):
        find_program(name)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam('mysql')
        except KeyError:
            raise RuntimeError('no mysql account to run mariadbd as')
    return True


class Server:
    """``environment``: extra variables mariadbd starts with (a
    benchmark's ``LD_PRELOAD``)."""

    def __init__(self, environment=None):
        self.environment = dict(environment or {})
        self.root = tempfile.mkdtemp(prefix='placement-test-mariadb-')
        self.data = os.path.join(self.root, 'data')
        self.socket = os.path.join(self.root, 'mysqld.sock')
        # Its own temporary files (information_schema queries write some)
        # in its own directory, not in /tmp beside every other process's.
        self.tmp = os.path.join(self.root, 'tmp')
        os.mkdir(self.tmp)
        self.port = None
        self.proc = None
        self.account = None
        if os.geteuid() == 0:
            self.account = pwd.getpwnam('mysql')
            os.chown(self.root, self.account.pw_uid, self.account.pw_gid)
            os.chown(self.tmp, self.account.pw_uid, self.account.pw_gid)

    def _options(self):
        return ['--no-defaults', '--datadir=%s' % self.data,
                '--socket=%s' % self.socket, '--tmpdir=%s' % self.tmp]

    def start(self, extra_options=(), port=None, wait=True):
        """Bootstrap the data directory (first start only) and run
        mariadbd with ``extra_options`` on ``port`` (a free one)."""
        user = ['--user=%s' % self.account.pw_name] if self.account else []
        if not os.path.exists(self.data):
            subprocess.run(
                [find_program('mariadb-install-db')] + self._options()
                + user + ['--auth-root-authentication-method=normal',
                          '--skip-test-db'],
                check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.port = port or self.port or _free_port()
        log = open(os.path.join(self.root, 'server.log'), 'ab')
        self.proc = subprocess.Popen(
            [find_program('mariadbd')] + self._options() + user + [
                '--bind-address=127.0.0.1', '--port=%d' % self.port,
                '--skip-name-resolve', '--skip-log-bin',
                '--character-set-server=utf8mb4',
                '--collation-server=utf8mb4_general_ci',
                '--innodb-flush-log-at-trx-commit=0',
                '--innodb-doublewrite=0', '--sync-binlog=0',
                '--innodb-buffer-pool-size=256M',
                '--max-connections=500',
                '--log-error=%s' % os.path.join(self.root, 'error.log'),
                '--pid-file=%s' % os.path.join(self.root, 'mysqld.pid'),
                *extra_options],
            env=dict(os.environ, **self.environment),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            try:
                self.wait()
            except BaseException:
                self.halt()
                raise
        return self

    def wait(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('mariadbd exited: %s'
                                   % self.error_log()[-2000:])
            try:
                self.connect().close()
                return
            except pymysql.err.OperationalError:
                time.sleep(0.2)
        raise RuntimeError('mariadbd not ready after %ds' % timeout)

    def error_log(self):
        try:
            with open(os.path.join(self.root, 'error.log')) as handle:
                return handle.read()
        except OSError:
            return ''

    def connect(self, database=None):
        return pymysql.connect(host='127.0.0.1', port=self.port, user='root',
                               database=database, autocommit=True,
                               charset='utf8mb4')

    def execute(self, *statements, database=None):
        conn = self.connect(database)
        try:
            with conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
                return cursor.fetchall()
        finally:
            conn.close()

    def create_database(self, name):
        self.execute('CREATE DATABASE %s CHARACTER SET utf8mb4 '
                     'COLLATE utf8mb4_general_ci' % name)

    def url(self, database):
        return ('mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4'
                % (self.port, database))

    def halt(self):
        """Stop the server, keeping its data (``start`` runs it again)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self):
        try:
            self.halt()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
