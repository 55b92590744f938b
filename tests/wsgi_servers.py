"""This service under the WSGI servers deployment tools run it, for tests.

``serving(kind, database_url, directory)`` writes ``placement.conf`` in
``directory``, makes the schema with ``placement-manage db sync`` (as
kolla-ansible does before starting the API), starts the server on a free
loopback port with the configuration found the way that server's
deployments pass it, waits until ``GET /`` answers 200, and yields the
port; the whole process group is stopped afterwards.  Everything the
server prints goes to ``directory/server.log``: the request log's lines
carry the pid of the worker that answered and the request id.

Kinds:

- ``uwsgi``: kolla-ansible's ``uwsgi.ini`` for placement-api, key for key
  (its log file and plugin paths left out), ``module =
  placement.wsgi.api:application`` with ``lazy-apps``: each worker loads
  the application itself; configuration from ``$OS_PLACEMENT_CONFIG_DIR``.
- ``uwsgi-preload``: the same without ``lazy-apps``: the master loads the
  application, then forks the workers.
- ``uwsgi-wsgi-file``: kolla's settings with devstack's way of naming the
  application, ``wsgi-file = .../placement/wsgi/api.py`` (not in
  ``KINDS``: one test checks it loads).
- ``gunicorn-preload``: ``gunicorn --preload`` on
  ``placement.wsgi.api:application``, the variable passed with ``--env``.
- ``mod_wsgi``: ``mod_wsgi-express`` (Apache httpd with daemon processes)
  serving the file ``placement/wsgi/api.py`` as its WSGI script, as
  packaged deployments point ``WSGIScriptAlias`` at it.  Apache will not
  run its children as root, so they run as ``www-data`` from a venv of
  Debian's own Python in a world-readable directory
  (``mod_wsgi_venv``); see there.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from tests.functional import server as functional_server

ROOT = pathlib.Path(__file__).parents[1]
KINDS = ('uwsgi', 'uwsgi-preload', 'gunicorn-preload', 'mod_wsgi')
WORKERS = 2
STARTUP_TIMEOUT = 90

KOLLA_UWSGI_INI = '''[uwsgi]
add-header = Connection: close
buffer-size = 65535
die-on-term = true
enable-threads = true
exit-on-reload = false
http = 127.0.0.1:{port}
lazy-apps = true
master = true
module = placement.wsgi.api:application
processes = {workers}
thunder-lock = true
worker-reload-mercy = 60
'''

API_SCRIPT = ROOT / 'placement' / 'wsgi' / 'api.py'
# Apache's children and mod_wsgi's daemons run as this account.
APACHE_ACCOUNT = 'www-data'


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def write_config(directory, database_url, extra=''):
    """``placement.conf`` (noauth2, the database, proxy headers parsed
    for the tests behind a proxy) and an empty ``policy.yaml``."""
    (directory / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n'
        '[oslo_middleware]\nenable_proxy_headers_parsing = True\n%s'
        % (database_url, extra))
    (directory / 'policy.yaml').write_text('{}\n')


def _run(argv, timeout=900):
    """Run a set-up command; a failure says what it printed."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError('%s failed (exit %d): %s' % (
            ' '.join(argv), proc.returncode, proc.stdout[-4000:]))


def sync_database(directory):
    _run([_bin('placement-manage'), '--config-file',
          str(directory / 'placement.conf'), 'db', 'sync'])


def _command(kind, port, directory, python_env):
    """(argv, extra environment) that start ``kind`` on ``port``."""
    config_dir = {'OS_PLACEMENT_CONFIG_DIR': str(directory)}
    if kind in ('uwsgi', 'uwsgi-preload', 'uwsgi-wsgi-file'):
        ini = KOLLA_UWSGI_INI.format(port=port, workers=WORKERS)
        if kind == 'uwsgi-preload':
            ini = ini.replace('lazy-apps = true\n', '')
        if kind == 'uwsgi-wsgi-file':
            ini = ini.replace('module = placement.wsgi.api:application',
                              'wsgi-file = %s' % API_SCRIPT)
        (directory / 'uwsgi.ini').write_text(ini)
        return [_bin('uwsgi'), '--ini', str(directory / 'uwsgi.ini')], \
            config_dir
    if kind == 'gunicorn-preload':
        return [_bin('gunicorn'), '--preload', '--workers', str(WORKERS),
                '--bind', '127.0.0.1:%d' % port,
                '--env', 'OS_PLACEMENT_CONFIG_DIR=%s' % directory,
                'placement.wsgi.api:application'], {}
    if kind == 'mod_wsgi':
        venv = python_env
        script = next(venv.glob('lib/python3*/site-packages/placement/wsgi/'
                                'api.py'))
        return [str(venv / 'bin' / 'mod_wsgi-express'), 'start-server',
                str(script), '--port', str(port),
                '--processes', str(WORKERS), '--threads', '4',
                '--server-root', str(directory / 'apache'),
                '--locale', 'C.UTF-8', '--log-to-terminal',
                '--httpd-executable', _apache_server(),
                '--user', APACHE_ACCOUNT, '--group', APACHE_ACCOUNT], \
            config_dir
    raise ValueError(kind)


@contextlib.contextmanager
def serving(kind, database_url, directory, python_env=None,
            extra_config=''):
    """``kind`` serving ``database_url``: its port.  ``python_env`` is the
    ``mod_wsgi_venv`` for ``mod_wsgi``; ``extra_config`` as ``started``'s."""
    with started(kind, database_url, directory, python_env,
                 extra_config) as (port, _):
        yield port


@contextlib.contextmanager
def started(kind, database_url, directory, python_env=None, extra_config=''):
    """``serving``, giving (its port, the server's process);
    ``extra_config``: more sections of ``placement.conf``."""
    directory = pathlib.Path(directory)
    write_config(directory, database_url, extra_config)
    sync_database(directory)
    port = functional_server.free_port()
    argv, env = _command(kind, port, directory, python_env)
    log_path = directory / 'server.log'
    with open(log_path, 'w') as log:
        process = subprocess.Popen(
            argv, cwd=directory, stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, **env), start_new_session=True)
        try:
            functional_server.wait_until_up(port, process, log_path,
                                            STARTUP_TIMEOUT)
            yield port, process
        finally:
            _stop(process)


def _stop(process):
    """SIGTERM to the group (uwsgi's die-on-term, gunicorn's and Apache's
    shutdown), SIGKILL to what is left after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    # Apache's own children outlive apachectl's exit by a moment.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def readable_directory(prefix):
    """A new directory every account may read: mod_wsgi's daemons run as
    ``APACHE_ACCOUNT`` and must read the venv, the configuration and
    Apache's server root (pytest's own temporary directories are
    private to root)."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o755)
    return directory


def mod_wsgi_venv(directory):
    """A venv of Debian's Python (``/usr/bin/python3``) in ``directory``
    with mod_wsgi and this package (a copy, not an editable link: the
    checkout may sit where the Apache account cannot read).  Its path, or
    None where Apache's or Debian Python's development files are missing.

    Debian's Python, not the one running the tests: that one may live
    under a home directory the Apache account cannot enter (pyenv's under
    /root).  mod_wsgi is built afresh (``--no-cache-dir``): pip's cache
    may hold a wheel of the same name built against another Python's
    libpython.
    """
    if not _apache_server() or not os.access('/usr/bin/python3', os.X_OK):
        return None
    venv = pathlib.Path(directory) / 'venv'
    _run(['/usr/bin/python3', '-m', 'venv', str(venv)])
    pip = [str(venv / 'bin' / 'pip'), 'install', '--quiet',
           '--disable-pip-version-check']
    _run(pip + ['--no-cache-dir', 'mod_wsgi'])
    _run(pip + [str(_source_copy(pathlib.Path(directory) / 'source'))])
    return venv


def _apache_server():
    """Apache's server program as apxs names it, or None where apxs or the
    program is missing: Debian's apache2-dev (apxs) does not bring
    apache2-bin, and mod_wsgi-express then starts ``httpd``, which is
    nowhere."""
    apxs = shutil.which('apxs') or '/usr/bin/apxs'
    if not os.access(apxs, os.X_OK):
        return None
    directory, name = (
        subprocess.run([apxs, '-q', variable], capture_output=True,
                       text=True, check=True).stdout.strip()
        for variable in ('SBINDIR', 'PROGNAME'))
    program = os.path.join(directory, name)
    return program if os.access(program, os.X_OK) else None


def _source_copy(target):
    """What building this package reads, copied to ``target``: setuptools
    builds in the source tree's ``build/``, and two test processes
    (pytest-xdist's workers) building from the checkout at once broke
    each other's builds."""
    target.mkdir()
    for name in ('setup.cfg', 'pyproject.toml', 'README.rst'):
        shutil.copy2(ROOT / name, target / name)
    ignore = shutil.ignore_patterns('__pycache__')
    for name in ('placement', 'migrations'):
        shutil.copytree(ROOT / name, target / name, ignore=ignore)
    return target


@contextlib.contextmanager
def serving_on_postgres(kind, postgres, python_env=None, extra_config=''):
    """``serving`` on a new database of the ``pg_cluster.Cluster``
    ``postgres``, in a new readable directory, both removed afterwards:
    (port, log path)."""
    name = 'wsgi_%s' % uuid.uuid4().hex
    postgres.create_database(name)
    directory = readable_directory('placement-wsgi-server-')
    try:
        with serving(kind, postgres.url(name), directory,
                     python_env, extra_config) as port:
            yield port, directory / 'server.log'
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        postgres.drop_database(name)
