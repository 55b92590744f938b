"""A live server for the exactness property, and the faults it goes
through between writes.

``placement-api`` (two workers forked from a parent that holds the
state), kolla-ansible's ``uwsgi.ini`` (``lazy-apps``: two workers that
ask the host's state readers), or the same without ``lazy-apps`` (the
master loads the application and forks from C, with no Python fork
hook).  ``fork`` kills a worker with SIGKILL and
waits for the server to start another (placement-api forks it from its
parent's state, brought up to date first; uwsgi loads the application
again); ``restart`` stops the whole server and starts it again on the
same database; under ``lazy-apps``, ``kill_keeper`` kills the state
keeper (its readers go on answering and start another) and
``kill_reader`` one of its readers (the keeper forks another).
"""

import contextlib
import os
import pathlib
import signal
import time

from tests import processes
from tests import wsgi_servers
from tests.functional import server

KINDS = ('placement-api', 'uwsgi', 'uwsgi-preload')
WORKERS = 2


class Live:

    def __init__(self, kind, database_url, directory):
        self.kind = kind
        self.database_url = database_url
        self.directory = pathlib.Path(directory)
        self.port = None
        self._process = None
        self._stack = None

    def start(self):
        self._stack = contextlib.ExitStack()
        if self.kind == 'placement-api':
            self.port, self._process = self._stack.enter_context(
                server.started(self.database_url, self.directory,
                               workers=WORKERS))
        else:
            self.port, self._process = self._stack.enter_context(
                wsgi_servers.started(self.kind, self.database_url,
                                     self.directory))
        self._wait_for_workers()
        return self

    def stop(self):
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def restart(self):
        self.stop()
        self.start()

    def call(self, method, path, body=None, version='1.39', headers=None):
        """(status, decoded body) of one request with the admin token."""
        status, _headers, decoded = server.exchange(
            self.port, method, path, body, version, headers)
        return status, decoded

    def events(self):
        """The faults this server can go through."""
        if self.kind == 'uwsgi':
            return ('fork', 'restart', 'state keeper killed',
                    'state reader killed')
        return ('fork', 'restart')

    def undergo(self, event):
        {'fork': self.fork, 'restart': self.restart,
         'state keeper killed': self.kill_keeper,
         'state reader killed': self.kill_reader}[event]()

    def fork(self):
        """A worker killed, and another in its place."""
        workers = self._workers()
        os.kill(workers[0], signal.SIGKILL)
        self._wait_for_workers(gone=workers[0])

    def kill_keeper(self):
        """The state keeper killed (its readers go on, and start
        another)."""
        found = self._state_processes()
        for pid in found:
            if processes.parent_of(pid) not in found:
                os.kill(pid, signal.SIGKILL)

    def kill_reader(self):
        """A state reader killed (its keeper forks another)."""
        found = self._state_processes()
        readers = [pid for pid in found if processes.parent_of(pid) in found]
        if readers:
            os.kill(readers[0], signal.SIGKILL)

    def _state_processes(self):
        return processes.pids_where(
            lambda argv: b'placement.cmd.state_process' in argv and any(
                arg.startswith(str(self.directory).encode())
                for arg in argv))

    def _workers(self):
        """The server's workers: its children but uwsgi's HTTP router,
        which serves no request (the state keeper is no child of it)."""
        found = [pid for pid in processes.children_of(self._process.pid)
                 if pid not in self._state_processes()]
        if self.kind.startswith('uwsgi'):
            router = self._router()
            found = [pid for pid in found if pid != router]
        return found

    def _router(self):
        """uwsgi's HTTP router: the child that has the listening TCP
        socket of the server's port open."""
        listening = _listening_inodes(self.port)
        for pid in processes.children_of(self._process.pid):
            if _sockets_of(pid) & listening:
                return pid
        return None

    def _wait_for_workers(self, gone=None, timeout=60):
        """Until the server has its workers again (none of them ``gone``),
        each with the application loaded, and answers."""
        deadline = time.monotonic() + timeout
        while True:
            workers = self._workers()
            if len(workers) == WORKERS and gone not in workers and (
                    self._loaded(workers)):
                try:
                    if self.call('GET', '/')[0] == 200:
                        return
                except OSError:
                    pass
            assert time.monotonic() < deadline, (
                'the server has workers %s, not %d' % (workers, WORKERS))
            time.sleep(0.1)


    def _loaded(self, workers):
        """Whether each of ``workers`` has loaded the application: under
        ``lazy-apps`` each says so in the log once it has (a worker
        still loading when the server is stopped is left to uwsgi's
        worker-reload-mercy, 60 s)."""
        if self.kind != 'uwsgi':
            return True
        log = (self.directory / 'server.log').read_text()
        return all(' ready in ' in line for pid in workers
                   for line in [_last_line_of(log, 'pid: %d ' % pid)])


def _last_line_of(text, marker):
    """The last line of ``text`` holding ``marker``, or ''."""
    at = text.rfind(marker)
    if at < 0:
        return ''
    return text[text.rfind('\n', 0, at) + 1:text.find('\n', at)]


def _listening_inodes(port):
    """The inodes of the sockets listening on loopback ``port``."""
    found = set()
    with open('/proc/net/tcp') as table:
        next(table)
        for line in table:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == '0A' and int(local.split(':')[1], 16) == port:
                found.add(inode)
    return found


def _sockets_of(pid):
    """The socket inodes ``pid`` has open."""
    found = set()
    directory = '/proc/%d/fd' % pid
    try:
        names = os.listdir(directory)
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(os.path.join(directory, name))
        except OSError:
            continue
        if target.startswith('socket:['):
            found.add(target[8:-1])
    return found
