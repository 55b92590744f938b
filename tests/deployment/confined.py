"""A confined host: a private mount and PID namespace over this machine.

``Host`` is what a deployment tool sees as "the host" it configures,
without it touching the real one: bubblewrap's namespaces (PID, IPC,
mounts; the network is the machine's) whose

- ``/etc`` is a copy of the machine's with the service's system account
  (``placement``, a free system uid/gid) and ``/etc/placement``
  (root:placement, 0750), as a package of the service would add them;
- ``/var`` has the machine's directories with their owners and modes but
  none of their files (``/var/lib/puppet``, ``/var/log/apache2`` ... as
  the installed packages made them), and ``/var/lib/dpkg`` read-only,
  so that package managers see what is installed and install nothing;
- ``/usr`` is the machine's, read-only, with chosen directories under
  overlays (``mount -t overlay`` in a mount namespace of ``unshare``'s,
  upper directories of the test's), for files a package of the service
  would put there and files the tool writes there;
- ``binds`` (venvs, Pythons, checkouts) are mounted read-only where they
  are, their parent directories made traversable (0755) so that the
  service's account can reach them.

All of it lives in one temporary directory, removed by ``remove``.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

from tests import processes

ACCOUNT = 'placement'
PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def venv_paths(venv):
    """Host paths a venv needs, each to be mounted where it is: the venv
    and the Python it was made from (``pyvenv.cfg``'s ``home``, as named
    and its real path); none under ``/usr``, which is mounted anyway."""
    venv = pathlib.Path(venv)
    paths = {venv}
    for line in (venv / 'pyvenv.cfg').read_text().splitlines():
        key, _, value = line.partition('=')
        if key.strip() == 'home':
            home = pathlib.Path(value.strip())
            paths.update({home.parent, home.resolve().parent})
    return paths


def minimal(paths):
    """``paths`` less those inside another one, and those the confined
    root has anyway (``/usr`` and its links)."""
    kept = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if any(path != other and other in path.parents for other in kept):
            continue
        if path.parts[1] in ('usr', 'bin', 'lib', 'lib64', 'sbin'):
            continue
        kept.append(path)
    return kept


def _directory_skeleton(source, target, depth):
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
    """``binds``: host paths to mount read-only where they are;
    ``overlays``: directories under ``/usr`` to make writable (each a
    fresh overlay, its upper directory ``upper(path)``); ``writable``:
    which of them the commands may write to (the others are written to
    by the test only, through ``upper``)."""

    def __init__(self, binds=(), overlays=(), writable=()):
        self.root = pathlib.Path(tempfile.mkdtemp(
            prefix='placement-confined-host-'))
        self.root.chmod(0o755)
        self.binds = minimal(pathlib.Path(path) for path in binds)
        self.etc = self.root / 'etc'
        shutil.copytree('/etc', self.etc, symlinks=True,
                        ignore_dangling_symlinks=True)
        shutil.rmtree(self.etc / 'placement', ignore_errors=True)
        ids = {int(line.split(':')[2])
               for name in ('passwd', 'group')
               for line in (self.etc / name).read_text().splitlines()
               if line}
        self.uid = _free_system_id(ids)
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
        (self.var / 'lib' / 'placement').mkdir(exist_ok=True)
        os.chown(self.var / 'lib' / 'placement', self.uid, self.uid)
        for name, target in (('run', '/run'), ('lock', '/run/lock')):
            if (self.var / name).is_symlink():
                continue
            shutil.rmtree(self.var / name, ignore_errors=True)
            (self.var / name).symlink_to(target)
        self.overlays = {}
        for lower in overlays:
            name = lower.strip('/').replace('/', '-')
            upper = self.root / ('%s-upper' % name)
            work = self.root / ('%s-work' % name)
            upper.mkdir()
            work.mkdir()
            self.overlays[lower] = (upper, work)
        self.writable = list(writable)
        self.files = self.root / 'files'
        self.files.mkdir()
        self.process = None

    def upper(self, lower):
        """The host directory holding what is added to ``lower``."""
        return self.overlays[lower][0]

    def argv(self, command, environment=None):
        """``command`` (argv) in the confined host, with ``PATH``,
        ``HOME`` and ``LANG`` and ``environment`` only."""
        bwrap = ['bwrap', '--unshare-pid', '--unshare-ipc',
                 '--die-with-parent', '--ro-bind', '/usr', '/usr']
        for path in self.writable:
            bwrap += ['--bind', path, path]
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
                  '--tmpfs', '/tmp', '--perms', '0755', '--dir', '/root',
                  '--perms', '0755', '--dir', '/srv',
                  '--ro-bind', str(self.files), '/srv/test']
        for path in self.binds:
            for parent in reversed(path.parents[:-1]):
                bwrap += ['--perms', '0755', '--dir', str(parent)]
            bwrap += ['--ro-bind', str(path), str(path)]
        env = {'PATH': PATH, 'HOME': '/root', 'LANG': 'C.UTF-8'}
        env.update(environment or {})
        bwrap += ['--chdir', '/', '--clearenv']
        for key, value in env.items():
            bwrap += ['--setenv', key, value]
        bwrap += list(command)
        if not self.overlays:
            return bwrap
        overlay = ''.join(
            'mount -t overlay overlay -o lowerdir=%s,upperdir=%s,'
            'workdir=%s %s && ' % (lower, upper, work, lower)
            for lower, (upper, work) in self.overlays.items())
        return ['unshare', '--mount', '--propagation', 'private', '--',
                '/bin/sh', '-c', overlay + 'exec "$@"', 'sh'] + bwrap

    def run(self, command, environment=None, timeout=600):
        """Run ``command`` to its end: (exit status, output)."""
        proc = subprocess.run(
            self.argv(command, environment), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
            timeout=timeout, start_new_session=True)
        return proc.returncode, proc.stdout

    def start(self, command, log, environment=None):
        """Start ``command`` (a server) writing to ``log``: its Popen,
        kept to be stopped by ``stop`` or ``remove``."""
        with open(log, 'w') as out:
            self.process = subprocess.Popen(
                self.argv(command, environment), stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        return self.process

    def main_pid(self):
        """The host pid of the command the server's bubblewrap runs (the
        container's main process: what ``docker stop`` and the kubelet
        signal), the child of bubblewrap's init in the new PID
        namespace (``unshare`` and its shell exec bubblewrap, so the
        started process is bubblewrap itself); None once it is gone."""
        for init in processes.children_of(self.process.pid):
            for main in processes.children_of(init):
                return main
        return None

    def terminate(self, timeout=30):
        """SIGTERM to the main process only (a container's stop), then
        ``stop``: the exit status (None when it had to be killed)."""
        if self.process is not None and self.process.poll() is None:
            pid = self.main_pid()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.stop(timeout=1)

    def stop(self, timeout=30):
        """SIGTERM to the server's process group, SIGKILL to what is
        left after ``timeout``; its exit status (None if killed)."""
        if self.process is None:
            return None
        status = self.process.poll()
        if status is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                status = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        self.process = None
        return status

    def remove(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
