"""A confined Debian host that puppet-placement configures.

``Host`` runs ``puppet apply`` with Debian's own puppet modules
(``puppet-module-placement`` 8.0.0 and what it depends on:
``openstacklib``, ``oslo``, ``puppetlabs-apache``, ``inifile``,
``stdlib`` ... from ``/usr/share/puppet/modules``) and then Debian's
Apache as the modules configured it, all inside a private mount and PID
namespace, so that the host's own ``/etc``, ``/var`` and ``/usr/bin``
are not changed:

- ``/etc`` is a copy of the host's with what the Debian packages of the
  service would add: the ``placement`` system account and
  ``/etc/placement`` (root:placement, 0750);
- ``/var`` has the host's directories (with their owners and modes, but
  none of their files: ``/var/lib/puppet``, ``/var/log/apache2`` ... as
  the packages made them) and ``/var/lib/dpkg``, read-only, so that
  puppet's package resources see what is installed (Apache, Debian's
  ``libapache2-mod-wsgi-py3``) and install nothing;
- ``/usr`` is the host's, read-only, with ``/usr/bin`` and
  ``/usr/lib/cgi-bin`` under overlays (``mount -t overlay`` in a mount
  namespace of ``unshare``'s; the upper directories are temporary ones
  of the test): ``/usr/bin`` holds what a package of this service
  installs there, ``placement-manage`` (the command
  ``placement::db::sync``'s exec runs, from ``/usr/bin``) and the WSGI
  script at the path Debian's module takes it from; puppet writes the
  copy of that script into ``/usr/lib/cgi-bin/placement``.

Debian bookworm's puppet-placement 8.0.0 names ``/usr/bin/placement-api``
as ``wsgi_script_source`` (``placement::params``): the WSGI script
distributions built with pbr's ``wsgi_scripts`` then.  Upstream 16.0.0
ships no such script; puppet-placement now copies
``<python's site-packages>/placement/wsgi/api.py`` instead.  Here
``/usr/bin/placement-api`` is a link to that file in the service's venv,
so the module's own ``openstacklib::wsgi::apache`` copies exactly the
file current puppet-placement copies, to ``/usr/lib/cgi-bin/placement/
placement-api`` (``wsgi_script_path`` + ``wsgi_script_file``), and
Apache's ``WSGIScriptAlias`` serves the copy.

The service's Python is a venv of Debian's ``/usr/bin/python3`` (the
Python Debian's mod_wsgi is built for) with this project installed from
a copy of the checkout; ``placement::wsgi::apache``'s
``custom_wsgi_process_options`` gives mod_wsgi's daemons its
``python-home``, as deployments with a venv do.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

from tests import wsgi_servers
from tests.functional import server as functional_server

ROOT = pathlib.Path(__file__).parents[2]
# The placement account Debian's placement-common package makes (a
# system uid/gid: any free one).
ACCOUNT = 'placement'
STARTUP_TIMEOUT = 90


def service_venv(directory):
    """A venv of Debian's Python with this project (a copy, readable by
    every account) in ``directory``; its path."""
    venv = pathlib.Path(directory) / 'venv'
    wsgi_servers._run(['/usr/bin/python3', '-m', 'venv', str(venv)])
    wsgi_servers._run([str(venv / 'bin' / 'pip'), 'install', '--quiet',
                       '--disable-pip-version-check',
                       str(wsgi_servers._source_copy(
                           pathlib.Path(directory) / 'source'))])
    return venv


def api_script(venv):
    return next(pathlib.Path(venv).glob(
        'lib/python3*/site-packages/placement/wsgi/api.py'))


def _directory_skeleton(source, target, depth):
    """The directories (not the files) of ``source`` down to ``depth``,
    with their owners and modes: the confined host's ``/var`` as the
    installed packages made it (``/var/lib/puppet``, ``/var/log/apache2``
    ...), empty."""
    target.mkdir(exist_ok=True)
    stat = source.stat()
    os.chown(target, stat.st_uid, stat.st_gid)
    target.chmod(stat.st_mode & 0o7777)
    if depth == 0:
        return
    try:
        entries = list(source.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            _directory_skeleton(entry, target / entry.name, depth - 1)


def _free_system_id(existing):
    for candidate in range(999, 100, -1):
        if candidate not in existing:
            return candidate
    raise RuntimeError('no free system id')


class Host:
    """The confined host's state (host directories, kept between the
    runs of one test): ``venv`` is the service's."""

    def __init__(self, venv):
        self.venv = pathlib.Path(venv)
        self.root = pathlib.Path(tempfile.mkdtemp(
            prefix='placement-puppet-host-'))
        self.root.chmod(0o755)
        self.etc = self.root / 'etc'
        shutil.copytree('/etc', self.etc, symlinks=True,
                        ignore_dangling_symlinks=True)
        shutil.rmtree(self.etc / 'placement', ignore_errors=True)
        uids = {int(line.split(':')[2]) for line in
                (self.etc / 'passwd').read_text().splitlines() if line}
        gids = {int(line.split(':')[2]) for line in
                (self.etc / 'group').read_text().splitlines() if line}
        self.uid = _free_system_id(uids | gids)
        with open(self.etc / 'group', 'a') as group:
            group.write('%s:x:%d:\n' % (ACCOUNT, self.uid))
        with open(self.etc / 'passwd', 'a') as passwd:
            passwd.write('%s:x:%d:%d::/var/lib/placement:/usr/sbin/nologin\n'
                         % (ACCOUNT, self.uid, self.uid))
        (self.etc / 'placement').mkdir()
        os.chown(self.etc / 'placement', 0, self.uid)
        (self.etc / 'placement').chmod(0o750)
        self.var = self.root / 'var'
        _directory_skeleton(pathlib.Path('/var'), self.var, depth=3)
        (self.var / 'lib' / 'dpkg').mkdir(parents=True, exist_ok=True)
        for name, target in (('run', '/run'), ('lock', '/run/lock')):
            if not (self.var / name).is_symlink():
                shutil.rmtree(self.var / name, ignore_errors=True)
                (self.var / name).symlink_to(target)
        (self.var / 'lib' / 'placement').mkdir(exist_ok=True)
        os.chown(self.var / 'lib' / 'placement', self.uid, self.uid)
        # Overlays: /usr/bin holds what the service's package installs
        # there; /usr/lib/cgi-bin is where puppet copies the script to.
        self.overlays = {}
        for lower in ('/usr/bin', '/usr/lib/cgi-bin'):
            name = lower.strip('/').replace('/', '-')
            upper = self.root / ('%s-upper' % name)
            work = self.root / ('%s-work' % name)
            upper.mkdir()
            work.mkdir()
            self.overlays[lower] = (upper, work)
        upper = self.overlays['/usr/bin'][0]
        (upper / 'placement-manage').symlink_to(
            self.venv / 'bin' / 'placement-manage')
        (upper / 'placement-api').symlink_to(api_script(self.venv))
        self.files = self.root / 'files'
        self.files.mkdir()
        self.process = None

    def argv(self, command):
        """``command`` (argv) in the confined host."""
        bwrap = ['bwrap', '--unshare-pid', '--unshare-ipc',
                 '--die-with-parent', '--ro-bind', '/usr', '/usr',
                 # The overlay puppet writes to, writable.
                 '--bind', '/usr/lib/cgi-bin', '/usr/lib/cgi-bin']
        for name in ('bin', 'sbin', 'lib', 'lib64', 'lib32', 'libx32'):
            host = pathlib.Path('/') / name
            if host.is_symlink():
                bwrap += ['--symlink', os.readlink(host), '/' + name]
            elif host.is_dir():
                bwrap += ['--ro-bind', str(host), '/' + name]
        bwrap += ['--bind', str(self.etc), '/etc',
                  '--bind', str(self.var), '/var',
                  '--ro-bind', '/var/lib/dpkg', '/var/lib/dpkg',
                  '--tmpfs', '/run', '--dir', '/run/lock',
                  '--proc', '/proc', '--dev', '/dev',
                  '--ro-bind', '/sys', '/sys',
                  '--tmpfs', '/tmp', '--dir', '/root',
                  '--ro-bind', str(self.venv.parent), str(self.venv.parent),
                  '--ro-bind', str(self.files), '/srv/test',
                  '--chdir', '/', '--clearenv',
                  '--setenv', 'PATH',
                  '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                  '/sbin:/bin',
                  '--setenv', 'HOME', '/root',
                  '--setenv', 'LANG', 'C.UTF-8'] + list(command)
        overlay = ''.join(
            'mount -t overlay overlay -o lowerdir=%s,upperdir=%s,'
            'workdir=%s %s && ' % (lower, upper, work, lower)
            for lower, (upper, work) in self.overlays.items())
        overlay += 'exec "$@"'
        return ['unshare', '--mount', '--propagation', 'private', '--',
                '/bin/sh', '-c', overlay, 'sh'] + bwrap

    def apply(self, manifest, timeout=600):
        """``puppet apply --detailed-exitcodes`` of ``manifest`` (text):
        (exit status, output)."""
        (self.files / 'site.pp').write_text(manifest)
        proc = subprocess.run(
            self.argv(['puppet', 'apply', '--detailed-exitcodes',
                       '--color=false', '--modulepath',
                       '/usr/share/puppet/modules', '/srv/test/site.pp']),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL, timeout=timeout,
            start_new_session=True)
        return proc.returncode, proc.stdout

    def run(self, command, timeout=300):
        proc = subprocess.run(
            self.argv(command), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
            timeout=timeout, start_new_session=True)
        return proc.returncode, proc.stdout

    @contextlib.contextmanager
    def apache(self, port):
        """Debian's Apache on the configuration puppet wrote, as
        ``apache2ctl`` runs it (in the foreground): the port's server
        once ``GET /`` answers, stopped by SIGTERM (a graceful stop)."""
        log = self.root / 'apache.log'
        with open(log, 'w') as out:
            self.process = subprocess.Popen(
                self.argv(['/usr/sbin/apache2ctl', '-DFOREGROUND']),
                stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            functional_server.wait_until_up(port, self.process, log,
                                            STARTUP_TIMEOUT)
            yield
        finally:
            self._stop()

    def _stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)

    def log(self, relative):
        """A file of the confined host's ``/var`` or ``/etc``."""
        path = self.root / relative
        return path.read_text() if path.exists() else ''

    def remove(self):
        self._stop()
        shutil.rmtree(self.root, ignore_errors=True)
