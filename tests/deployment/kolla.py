"""kolla's placement-api container, run from kolla's own scripts.

kolla 23.0.0's images start every container with ``kolla_start``
(``docker/base/start.sh``: errexit, pipefail, nounset, xtrace), which
runs ``sudo -E kolla_set_configs`` (``docker/base/set_configs.py``:
copies the files ``/var/lib/kolla/config_files/config.json`` lists into
place, sets their owners and modes, writes the command to
``/run_command``), ``sudo kolla_copy_cacerts``, ``sudo
kolla_install_projects``, sources ``kolla_extend_start`` (placement-base's
``extend_start.sh``, the log directory) which sources
``/usr/local/bin/kolla_placement_extend_start`` (placement-api's: the
``KOLLA_BOOTSTRAP``, ``KOLLA_UPGRADE`` and ``KOLLA_OSM`` branches), and
then ``exec``'s the command.

``Container`` runs exactly those files, taken from kolla's sdist at run
time (``sources.kolla()``), with the modes the Dockerfiles give them,
under bubblewrap: a private mount, PID and IPC namespace whose root is
made for the container and removed afterwards, so that kolla's absolute
paths (``/etc/placement``, ``/run_command``, ``/var/log/kolla``,
``/usr/local/bin/kolla_*``, ``/etc/sudoers``) are the container's and
the host is not touched.  The container's root holds:

- ``/usr`` (read-only) from the host, for bash, coreutils and sudo, with
  ``/usr/local`` the image's own: ``bin/`` has kolla's scripts;
- ``/etc``: a copy of the host's, with kolla's ``docker/base/sudoers``
  (mode 0440) and the ``kolla`` and ``placement`` users and groups made
  as kolla's base Dockerfile makes them (uid and gid from kolla's
  ``common/users.py``; ``placement`` in group ``kolla``, home
  ``/var/lib/placement``), and ``/etc/placement`` holding this
  project's ``etc/placement`` files (placement-base's Dockerfile copies
  the source's);
- ``/var/lib/kolla/venv``: the test venv (this project installed in it,
  uwsgi from the pyuwsgi wheel), first on ``PATH`` as in kolla's images
  (and in the sudoers ``secure_path``); the venv's own paths (its
  Python, this checkout) are mounted where they are on the host;
- kolla-ansible's volumes: the node's ``/etc/kolla/placement-api/``
  read-only at ``/var/lib/kolla/config_files`` and the ``kolla_logs``
  volume (a directory kept between containers, as the named volume is)
  at ``/var/log/kolla``.

The network is the host's (kolla-ansible runs placement with
``network_mode: host``); the database is a throwaway MariaDB on the
loopback.  The container runs as root, as placement-api's image does (it
sets no ``USER``); uwsgi drops to ``placement`` (``uid = placement`` in
kolla-ansible's ini).  ``LANG`` is ``C.UTF-8``: kolla's images generate
``en_US.UTF-8``, which the host may lack.
"""

import contextlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tests import processes
from tests.deployment import confined
from tests.deployment import kolla_ansible
from tests.deployment import sources
from tests.functional import server as functional_server

ROOT = pathlib.Path(__file__).parents[2]
VENV_IN_IMAGE = '/var/lib/kolla/venv'
PATH = ('/var/lib/kolla/venv/bin:/usr/local/sbin:/usr/local/bin:'
        '/usr/sbin:/usr/bin:/sbin:/bin')
# docker/base/Dockerfile.j2 and docker/placement/*/Dockerfile.j2: where
# each script goes and its mode.
SCRIPTS = {
    'base/start.sh': ('kolla_start', 0o755),
    'base/set_configs.py': ('kolla_set_configs', 0o755),
    'base/copy_cacerts.sh': ('kolla_copy_cacerts', 0o755),
    'base/install_projects.sh': ('kolla_install_projects', 0o755),
    'placement/placement-base/extend_start.sh': ('kolla_extend_start',
                                                 0o644),
    'placement/placement-api/extend_start.sh': (
        'kolla_placement_extend_start', 0o644),
}
STARTUP_TIMEOUT = 120
# uwsgi's line when a worker has loaded the application.
_APP_READY = "WSGI app 0 (mountpoint='') ready"


def bwrap():
    return shutil.which('bwrap')


def _users(kolla):
    """{name: uid} of kolla's users (``kolla/common/users.py``: each
    ``<name>-user`` with the same uid and gid)."""
    namespace = {}
    exec(compile((kolla / 'kolla' / 'common' / 'users.py').read_text(),
                 'users.py', 'exec'), namespace)
    return {name[:-len('-user')]: spec['uid']
            for name, spec in namespace['USERS'].items()}


def _venv_paths(venv):
    """Host paths ``venv`` needs, mounted at the same place: the venv
    and the Python it was made from (``confined.venv_paths``) and this
    checkout (an editable install of this project)."""
    return confined.minimal(confined.venv_paths(venv) | {ROOT})


class Image:
    """The placement-api image's files, built once in ``directory``."""

    def __init__(self, kolla, directory):
        self.kolla = pathlib.Path(kolla)
        self.directory = pathlib.Path(directory)
        self.users = _users(self.kolla)
        docker = self.kolla / 'kolla' / 'docker'
        self.bin = self.directory / 'usr-local-bin'
        self.bin.mkdir(parents=True)
        self.bin.chmod(0o755)
        for source, (name, mode) in SCRIPTS.items():
            shutil.copyfile(docker / source, self.bin / name)
            (self.bin / name).chmod(mode)
        self.sudoers = docker / 'base' / 'sudoers'

    def make_etc(self, target):
        """The container's ``/etc``: the host's, with kolla's sudoers,
        users and ``/etc/placement``."""
        shutil.copytree('/etc', target, symlinks=True,
                        ignore_dangling_symlinks=True)
        for name in ('placement', 'kolla'):
            shutil.rmtree(target / name, ignore_errors=True)
        shutil.copyfile(self.sudoers, target / 'sudoers')
        (target / 'sudoers').chmod(0o440)
        kolla_gid = self.users['kolla']
        uid = self.users['placement']
        with open(target / 'group', 'a') as group:
            group.write('kolla:x:%d:placement\n' % kolla_gid)
            group.write('placement:x:%d:\n' % uid)
        with open(target / 'passwd', 'a') as passwd:
            passwd.write('kolla:x:%d:%d::/home/kolla:/usr/sbin/nologin\n'
                         % (kolla_gid, kolla_gid))
            passwd.write('placement:x:%d:%d::/var/lib/placement:'
                         '/usr/sbin/nologin\n' % (uid, uid))
        placement = target / 'placement'
        placement.mkdir()
        for path in (ROOT / 'etc' / 'placement').iterdir():
            shutil.copy(path, placement / path.name)


class Container:
    """One run of the image: ``environment`` (kolla-ansible's, e.g.
    ``KOLLA_BOOTSTRAP``) over the image's; the node's config directory
    and the ``kolla_logs`` volume (both host directories); ``venv`` the
    Python environment at ``/var/lib/kolla/venv`` (this project's test
    venv, or upstream's to compare with)."""

    def __init__(self, image, config_directory, logs_volume, environment,
                 output, venv=sys.prefix):
        self.image = image
        self.root = pathlib.Path(tempfile.mkdtemp(
            prefix='placement-kolla-container-'))
        self.output = pathlib.Path(output)
        etc = self.root / 'etc'
        image.make_etc(etc)
        var = self.root / 'var'
        home = var / 'lib' / 'placement'
        home.mkdir(parents=True)
        os.chown(home, image.users['placement'], image.users['placement'])
        (var / 'lib' / 'kolla' / 'config_files').mkdir(parents=True)
        (var / 'lib' / 'kolla' / 'venv').mkdir()
        (var / 'log' / 'kolla').mkdir(parents=True)
        logs_volume = pathlib.Path(logs_volume)
        if not logs_volume.exists():
            # The named volume, first mounted: what the image had at
            # /var/log/kolla (root:kolla, 2775).
            logs_volume.mkdir(parents=True)
            os.chown(logs_volume, 0, image.users['kolla'])
            logs_volume.chmod(0o2775)
        argv = [bwrap(), '--unshare-pid', '--unshare-ipc',
                '--die-with-parent',
                '--ro-bind', '/usr', '/usr']
        for name in ('bin', 'sbin', 'lib', 'lib64', 'lib32', 'libx32'):
            host = pathlib.Path('/') / name
            if host.is_symlink():
                argv += ['--symlink', os.readlink(host), '/' + name]
            elif host.is_dir():
                argv += ['--ro-bind', str(host), '/' + name]
        argv += ['--tmpfs', '/usr/local',
                 '--ro-bind', str(image.bin), '/usr/local/bin',
                 '--bind', str(etc), '/etc',
                 '--proc', '/proc', '--dev', '/dev',
                 '--tmpfs', '/tmp', '--tmpfs', '/run',
                 '--bind', str(var), '/var',
                 '--symlink', '/run', '/var/run',
                 '--ro-bind', str(config_directory),
                 '/var/lib/kolla/config_files',
                 '--bind', str(logs_volume), '/var/log/kolla',
                 '--ro-bind', str(venv), VENV_IN_IMAGE]
        for path in _venv_paths(venv):
            for parent in reversed(path.parents[:-1]):
                argv += ['--perms', '0755', '--dir', str(parent)]
            argv += ['--ro-bind', str(path), str(path)]
        env = {'PATH': PATH, 'LANG': 'C.UTF-8', 'HOME': '/root',
               'KOLLA_BASE_DISTRO': 'debian'}
        env.update(environment)
        argv += ['--chdir', '/', '--clearenv']
        for key, value in env.items():
            argv += ['--setenv', key, value]
        argv.append('/usr/local/bin/kolla_start')
        self.argv = argv
        self.process = None
        self.exit_status = None

    def run(self, timeout=600):
        """Run to the end (a bootstrap container): (exit status, output)."""
        try:
            with open(self.output, 'w') as out:
                proc = subprocess.run(self.argv, stdout=out,
                                      stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL,
                                      timeout=timeout,
                                      start_new_session=True)
            return proc.returncode, self.output.read_text()
        finally:
            self.remove()

    def start(self):
        out = open(self.output, 'w')
        try:
            self.process = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            out.close()
        return self

    def main_pid(self):
        """The host pid of the command start.sh exec'd (the container's
        main process, which ``docker stop`` signals): the child of
        bubblewrap's init in the new PID namespace."""
        init = processes.children_of(self.process.pid)
        for pid in init:
            found = processes.children_of(pid)
            if found:
                return found[0]
        return None

    def stop(self, timeout=60):
        """``docker stop``: SIGTERM to the main process, SIGKILL to all
        that is left after ``timeout``; the container's exit status
        (None when it had to be killed), also kept in ``exit_status``."""
        if self.process is None:
            return None
        try:
            pid = self.main_pid()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            try:
                self.exit_status = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
            return self.exit_status
        finally:
            self.remove()

    def remove(self):
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


def wait_until_serving(port, container, timeout=STARTUP_TIMEOUT):
    """Return once ``GET /`` on ``port`` answers 200; fail with the
    container's output if it exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if functional_server.request(port, 'GET', '/')[0] == 200:
                return
        except OSError:
            pass
        if container.process.poll() is not None:
            raise AssertionError('the container exited (%s): %s' % (
                container.process.returncode,
                container.output.read_text()[-4000:]))
        if time.monotonic() > deadline:
            raise AssertionError('not serving after %ds: %s' % (
                timeout, container.output.read_text()[-4000:]))
        time.sleep(0.2)


def xtrace_commands(output):
    """The commands start.sh's xtrace shows it running (``+ cmd``)."""
    return [line.lstrip('+ ') for line in output.splitlines()
            if re.match(r'^\++ ', line)]


class Deployment:
    """One kolla-ansible deployment of placement on one host: the
    database and its user made as the role's ``bootstrap.yml`` makes
    them (``mysql_db``, ``mysql_user`` with ``<db>.*:ALL`` from ``%``),
    the node's config directory rendered from kolla-ansible's files
    (``kolla_ansible.NodeConfig``), the ``kolla_logs`` volume, and the
    containers kolla-ansible starts from the image.  ``venv``: what the
    image has at ``/var/lib/kolla/venv``; ``custom``: the operator's
    files in ``node_custom_config`` (the tests' always turn keystone off,
    ``[api] auth_strategy = noauth2``: there is none); ``settings``: more
    of the deployment's variables (``globals.yml``, ``passwords.yml``)."""

    PASSWORD = 'placement-database-secret'
    WORKERS = 2

    def __init__(self, image, mariadb, directory, database='placement',
                 venv=sys.prefix, custom=None, settings=None):
        self.image = image
        self.directory = pathlib.Path(directory)
        self.venv = venv
        self.database = database
        mariadb.execute(
            'CREATE DATABASE IF NOT EXISTS %s' % database,
            "CREATE USER IF NOT EXISTS 'placement'@'%%' IDENTIFIED BY '%s'"
            % self.PASSWORD,
            "GRANT ALL PRIVILEGES ON %s.* TO 'placement'@'%%'" % database)
        self.port = functional_server.free_port()
        overrides = {'placement.conf': '[api]\nauth_strategy = noauth2\n'}
        overrides.update(custom or {})
        self.node = kolla_ansible.NodeConfig(sources.kolla_ansible(), {
            # globals.yml
            'kolla_base_distro': 'debian',
            'kolla_internal_vip_address': '127.0.0.1',
            'network_interface': 'lo',
            'database_address': '127.0.0.1',
            'database_port': mariadb.port,
            'placement_api_port': self.port,
            'placement_database_name': database,
            'openstack_service_workers': self.WORKERS,
            # passwords.yml
            'database_password': 'unused-root-secret',
            'placement_database_password': self.PASSWORD,
            'placement_keystone_password': 'unused-keystone-secret',
            'nova_api_database_password': 'unused-nova-secret',
            'memcache_secret_key': 'unused-memcache-secret',
            **(settings or {}),
        }, overrides)
        self.config = self.node.write(self.directory / 'etc-kolla')
        self.logs = self.directory / 'kolla_logs'
        self.runs = 0

    def url(self):
        """The database URL kolla's placement.conf names."""
        for line in (self.config / 'placement.conf').read_text().splitlines():
            if line.startswith('connection = '):
                return line.split(' = ', 1)[1]
        raise LookupError('no connection in placement.conf')

    def container(self, **environment):
        """A new container from the image with kolla-ansible's
        environment for it (``KOLLA_CONFIG_STRATEGY`` as kolla-ansible's
        ``config_strategy`` default, COPY_ALWAYS)."""
        self.runs += 1
        env = {'KOLLA_CONFIG_STRATEGY': 'COPY_ALWAYS'}
        env.update(environment)
        return Container(self.image, self.config, self.logs, env,
                         self.directory / ('container-%d.log' % self.runs),
                         venv=self.venv)

    def run(self, **environment):
        """A one-shot container (``restart_policy: oneshot``, ``detach:
        false``), e.g. ``run(KOLLA_BOOTSTRAP='')``: (exit status,
        output)."""
        return self.container(**environment).run()

    @contextlib.contextmanager
    def api(self):
        """The ``placement_api`` container, serving: the Container.

        It is stopped (``docker stop``) only once every uwsgi worker has
        loaded the application: SIGTERM while a ``lazy-apps`` worker is
        still loading it leaves uwsgi's graceful shutdown hung past
        ``worker-reload-mercy`` (pyuwsgi 2.0.30 with kolla-ansible's ini;
        upstream 16.0.0 the same), which a long-running API never
        meets."""
        ready = self.log('placement-api-uwsgi.log').count(_APP_READY)
        container = self.container().start()
        try:
            wait_until_serving(self.port, container)
            yield container
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while (self.log('placement-api-uwsgi.log').count(_APP_READY)
                   - ready < self.WORKERS):
                assert time.monotonic() < deadline, self.log(
                    'placement-api-uwsgi.log')[-3000:]
                time.sleep(0.2)
        finally:
            container.stop()

    def log(self, name):
        """A file of the ``kolla_logs`` volume's ``placement/``."""
        path = self.logs / 'placement' / name
        return path.read_text() if path.exists() else ''
