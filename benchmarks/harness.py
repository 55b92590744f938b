"""Side-by-side set-up shared by the benchmarks.

One throwaway PostgreSQL cluster (or MariaDB server, ``--backend
mysql``), a fresh database per server, our ``placement-api`` and upstream
openstack-placement (from its own cached venv, never a project
dependency) each under the same WSGI server with the same worker count,
both bound to 127.0.0.1 only: gunicorn (ours through ``placement-api``,
upstream's with its defaults), or ``wsgi_server='uwsgi'``, kolla-ansible's
uwsgi.ini for both (``tests/wsgi_servers.py``).  Everything started here is
stopped by ``Stack.close`` (also on Ctrl-C), by process id.
"""

import concurrent.futures
import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import sqlalchemy as sa

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests import mariadb_server  # noqa: E402  (needs REPO on sys.path)
from tests import pg_cluster  # noqa: E402
from tests import processes  # noqa: E402
from tests import wsgi_servers  # noqa: E402

UPSTREAM_VERSION = '16.0.0'
UPSTREAM_PACKAGES = ('openstack-placement==%s' % UPSTREAM_VERSION,
                     'gunicorn', 'pyuwsgi', 'psycopg2-binary', 'PyMySQL')
CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'placement-bench')
UPSTREAM_VENV = os.path.join(CACHE, 'upstream-venv')
WORKERS = 2
START_TIMEOUT = 90
# MariaDB flushing its redo log at every commit (its default, which
# tests/mariadb_server.py turns off).
MARIADB_DURABLE = ('--innodb-flush-log-at-trx-commit=1',)


def log(message):
    print(message, file=sys.stderr, flush=True)


def ensure_upstream_venv(path=UPSTREAM_VENV):
    """Upstream's server in a venv of its own, built once and reused.

    A marker file names the installed packages, so a changed pin rebuilds
    the venv instead of silently measuring another version.
    """
    marker = os.path.join(path, 'placement-bench.installed')
    wanted = ' '.join(UPSTREAM_PACKAGES)
    if os.path.exists(marker):
        with open(marker) as handle:
            if handle.read().strip() == wanted:
                return path
    log('Installing upstream (%s) into %s ...' % (wanted, path))
    subprocess.run([sys.executable, '-m', 'venv', '--clear', path],
                   check=True)
    subprocess.run([os.path.join(path, 'bin', 'pip'), 'install', '-q',
                    *UPSTREAM_PACKAGES], check=True)
    with open(marker, 'w') as handle:
        handle.write(wanted + '\n')
    return path


def percentile(values, fraction):
    """The value at ``fraction`` (0.5: the median) of ``values``; NaN
    when there are none."""
    ordered = sorted(values)
    if not ordered:
        return float('nan')
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def parallel(function, items, threads):
    """``function(item)`` for every item, ``threads`` at a time; the
    results, in the items' order."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(function, items))


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def add_backend_argument(parser):
    """Every benchmark's ``--backend``: the database Stack starts."""
    parser.add_argument('--backend', choices=('postgresql', 'mysql'),
                        default='postgresql',
                        help='the database both servers share: a throwaway '
                             'PostgreSQL cluster or MariaDB server')


def write_config(directory, database_url, sync_on_startup=True):
    """placement.conf and an empty policy.yaml, as both servers read them."""
    os.makedirs(directory, exist_ok=True)
    conf = os.path.join(directory, 'placement.conf')
    with open(conf, 'w') as handle:
        handle.write('[api]\nauth_strategy = noauth2\n'
                     '[placement_database]\nconnection = %s\n'
                     'sync_on_startup = %s\n' % (database_url,
                                                  sync_on_startup))
    with open(os.path.join(directory, 'policy.yaml'), 'w') as handle:
        handle.write('{}\n')
    return conf


def wait_until_serving(port, proc, log_path, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError('server exited with %s; see %s'
                               % (proc.returncode, log_path))
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=2)
        try:
            conn.request('GET', '/')
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError('server on port %d not ready after %ds; see %s'
                       % (port, timeout, log_path))


class Server:
    """One gunicorn master and its workers, in a session of their own."""

    def __init__(self, name, port, argv, env, directory):
        self.name = name
        self.port = port
        self.log_path = os.path.join(directory, 'server.log')
        with open(self.log_path, 'ab') as output:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=directory, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        try:
            wait_until_serving(port, self.proc, self.log_path)
        except BaseException:
            self.stop()
            raise

    def pids(self):
        """The master and its workers: every process of its session."""
        found = []
        for entry in os.listdir('/proc'):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.getsid(int(entry)) == self.proc.pid:
                        found.append(int(entry))
        return found

    def stop(self):
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _synced(bindir, directory, conf, ours):
    """The environment a server in ``bindir`` reads ``directory``'s
    configuration with, its database migrated once beforehand: a server
    that migrates in every worker at start (upstream, or any under uwsgi)
    would race itself on a fresh database.  Upstream's (not ``ours``)
    leaves out PYTHONPATH, which may name this checkout."""
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=directory)
    if not ours:
        env.pop('PYTHONPATH', None)
    subprocess.run([os.path.join(bindir, 'placement-manage'),
                    '--config-file', conf, 'db', 'sync'],
                   env=env, cwd=directory, check=True,
                   stdout=subprocess.DEVNULL)
    return env


def _cpu_seconds(pid):
    """utime + stime of one process, or None when it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            fields = handle.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _postgres_backends(database):
    """Pids of PostgreSQL backends serving ``database`` (by their title)."""
    return processes.pids_where(
        lambda title: len(title) >= 3 and title[0] == b'postgres:'
        and title[2] == database.encode())


class CpuMeter:
    """CPU seconds the server's processes and its database backends use.

    PostgreSQL backends are told apart by database name; MariaDB serves
    every database from one process, whose time counts for the server
    being measured (the benchmarks measure one server at a time).  A
    process that appears between two readings counts from zero, one that
    exits loses its time, so the figures are close, not exact, unless
    ``reaper`` is given: a callable returning the PostgreSQL server's
    (postmaster's) pid, whose reaped children's time then counts too, less
    what the exited backends had used before the first reading.  That
    matters for a server whose pool closes connections (our gthread
    workers' overflow): its backends live for a few requests each.  A
    backend seen once is then followed by pid for as long as it is in
    /proc: an exited one not yet reaped has lost its title (its cmdline
    reads empty) but not its time.  The database's share is under the
    key ``postgres`` whatever the backend.  The server's processes that
    exit are counted the same way, through the reaped time of the server
    processes that waited for them (a worker replaced mid-round).
    """

    def __init__(self, server, database, database_pids=None, reaper=None):
        self.server = server
        self.database = database
        self.database_pids = database_pids or (
            lambda: _postgres_backends(database))
        self.reaper = reaper
        self._known = set()

    def read(self):
        backends = set(self.database_pids())
        if self.reaper is not None:
            backends.update(pid for pid in self._known
                            if os.path.exists('/proc/%d' % pid))
            self._known = backends
        server = self._times(self.server.pids())
        found = {'server': server, 'postgres': self._times(backends),
                 'server_reaped': self._reaped(server)}
        if self.reaper is not None:
            found['reaped'] = _reaped_seconds(self.reaper())
        return found

    @staticmethod
    def _reaped(pids):
        """{pid: its waited-for children's CPU} of the server's processes:
        a worker replaced during a round (``placement-api`` replaces one
        past ``--max-worker-memory``) leaves its time in its parent's."""
        found = {}
        for pid in pids:
            try:
                found[pid] = _reaped_seconds(pid)
            except OSError:
                continue
        return found

    @staticmethod
    def _times(pids):
        times = {pid: _cpu_seconds(pid) for pid in pids}
        return {pid: t for pid, t in times.items() if t is not None}

    @staticmethod
    def used(before, after):
        used = {kind: sum(t - before[kind].get(pid, 0.0)
                          for pid, t in after[kind].items())
                for kind in ('server', 'postgres')}
        if 'reaped' in after:
            gone = sum(t for pid, t in before['postgres'].items()
                       if pid not in after['postgres'])
            used['postgres'] += after['reaped'] - before['reaped'] - gone
        # A server process that exited and was waited for by another of
        # them: its time since the first reading, from its parent's.
        reaped = sum(t - before['server_reaped'].get(pid, 0.0)
                     for pid, t in after['server_reaped'].items())
        if reaped:
            gone = sum(t for pid, t in before['server'].items()
                       if pid not in after['server'])
            used['server'] += max(0.0, reaped - gone)
        return used


def _reaped_seconds(pid):
    """cutime + cstime of ``pid``: its exited, waited-for children's CPU.
    """
    with open('/proc/%d/stat' % pid) as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf('SC_CLK_TCK')


def postmaster_pid(cluster):
    """A ``pg_cluster.Cluster``'s server pid, from its data directory."""
    with open(os.path.join(cluster.data, 'postmaster.pid')) as handle:
        return int(handle.readline())


class Stack:
    """A database server plus both servers; ``servers['ours'|'upstream']``.
    ``backend``: ``postgresql`` (a throwaway cluster) or ``mysql`` (a
    throwaway MariaDB).  ``durable`` makes the database flush every commit
    to disk (most benchmarks measure CPU, not the disk, and leave it off);
    ``environment`` holds extra variables the database server starts with
    (an ``LD_PRELOAD``); ``exited_backends`` makes the meters count the
    CPU of PostgreSQL backends that exit between two readings (see
    ``CpuMeter``)."""

    def __init__(self, workers=WORKERS, backend='postgresql', durable=False,
                 environment=None, exited_backends=False,
                 wsgi_server='gunicorn'):
        self.workers = workers
        self.wsgi_server = wsgi_server
        self.backend = backend
        self.durable = durable
        self.environment = environment
        self.exited_backends = exited_backends
        self.root = tempfile.mkdtemp(prefix='placement-bench-')
        self.cluster = None
        self.servers = {}
        self.meters = {}
        self._previous_sigterm = signal.SIG_DFL

    def __enter__(self):
        self._previous_sigterm = signal.signal(signal.SIGTERM,
                                               _raise_interrupt)
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info):
        try:
            self.close()
        finally:
            signal.signal(signal.SIGTERM, self._previous_sigterm)

    def _start(self):
        venv = ensure_upstream_venv()
        self.cluster = self._start_database()
        for name in ('ours', 'upstream'):
            database = 'bench_%s' % name
            self._create_database(database)
            server = self._start_server(name, venv,
                                        os.path.join(self.root, name),
                                        self.cluster.url(database))
            self.servers[name] = server
            self.meters[name] = CpuMeter(server, database,
                                         self._database_pids(),
                                         self._reaper())

    def _start_database(self):
        """The database server both servers share, started."""
        if self.backend == 'mysql':
            log('Starting MariaDB ...')
            return mariadb_server.Server(self.environment).start(
                MARIADB_DURABLE if self.durable else ())
        log('Starting PostgreSQL ...')
        return pg_cluster.Cluster(self.durable, self.environment).start()

    def _start_server(self, name, venv, directory, database_url):
        """Server ``name`` ('ours' or 'upstream') on ``database_url``,
        configured in ``directory``, once it answers."""
        conf = write_config(directory, database_url)
        port = free_port()
        bindir = (os.path.dirname(sys.executable) if name == 'ours'
                  else os.path.join(venv, 'bin'))
        if self.wsgi_server == 'uwsgi':
            argv, env = self._uwsgi(bindir, directory, conf, port,
                                    ours=name == 'ours')
        elif name == 'ours':
            argv, env = self._ours(conf, port)
        else:
            argv, env = self._upstream(bindir, directory, conf, port)
        log('Starting %s on 127.0.0.1:%d ...' % (name, port))
        return Server(name, port, argv, env, directory)

    def _database_pids(self):
        if self.backend == 'mysql':
            return lambda: [self.cluster.proc.pid]
        return None

    def _reaper(self):
        if self.exited_backends and self.backend == 'postgresql':
            return lambda: postmaster_pid(self.cluster)
        return None

    def _create_database(self, name):
        self.cluster.create_database(name)

    def _ours(self, conf, port):
        script = os.path.join(os.path.dirname(sys.executable),
                              'placement-api')
        return ([script, '--config-file', conf,
                 '--bind', '127.0.0.1:%d' % port,
                 '--workers', str(self.workers)], dict(os.environ))

    def _upstream(self, bindir, directory, conf, port):
        """Upstream's gunicorn, away from this checkout.

        gunicorn puts its working directory on sys.path, and from the
        checkout ``placement`` would be ours: it runs in the config
        directory instead.
        """
        env = _synced(bindir, directory, conf, ours=False)
        return ([os.path.join(bindir, 'gunicorn'),
                 '--bind', '127.0.0.1:%d' % port,
                 '--workers', str(self.workers),
                 'placement.wsgi.api:application'], env)

    def _uwsgi(self, bindir, directory, conf, port, ours):
        """kolla-ansible's uwsgi.ini, the server's own venv's uwsgi (run
        in the config directory, as ``_upstream`` says why)."""
        env = _synced(bindir, directory, conf, ours)
        ini = os.path.join(directory, 'uwsgi.ini')
        with open(ini, 'w') as handle:
            handle.write(wsgi_servers.KOLLA_UWSGI_INI.format(
                port=port, workers=self.workers))
        return [os.path.join(bindir, 'uwsgi'), '--ini', ini], env

    def analyze(self, name):
        """ANALYZE ``name``'s database, as autovacuum soon would after a
        load: without it the plans depend on whether autovacuum happened
        to run during the load (it does within a minute or so)."""
        engine = sa.create_engine(
            self.cluster.url(self.meters[name].database),
            isolation_level='AUTOCOMMIT')
        try:
            with engine.connect() as conn:
                if self.backend == 'mysql':
                    conn.exec_driver_sql('ANALYZE TABLE %s' % ', '.join(
                        sa.inspect(conn).get_table_names()))
                else:
                    conn.exec_driver_sql('ANALYZE')
        finally:
            engine.dispose()

    def database_version(self):
        """'PostgreSQL 15.18' or 'MariaDB 10.11.18-...'."""
        if self.backend == 'mysql':
            version = self.cluster.execute('SELECT VERSION()')[0][0]
            return 'MariaDB %s' % version.replace('-MariaDB', '')
        admin = sa.create_engine(self.cluster.url('postgres'))
        with admin.connect() as conn:
            version = conn.exec_driver_sql('SHOW server_version').scalar()
        admin.dispose()
        return 'PostgreSQL %s' % version

    def close(self):
        for server in self.servers.values():
            server.stop()
        self.servers = {}
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if os.environ.get('PLACEMENT_BENCH_KEEP_LOGS'):
            log('Server logs kept in %s' % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
