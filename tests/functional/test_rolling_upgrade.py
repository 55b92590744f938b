"""A rolling restart of two API processes under load, across a change of
the change log's protocol, with allocation candidates exact throughout.

Deployment tools upgrade a region like this: ``placement-manage db
sync`` with the new release, then the API hosts restarted one at a
time, so that old and new processes serve the same database for a
while.  Here the new release is this code told that its protocol is
one more (``changes.PROTOCOL``), and its migration is simulated: the
stamp rows get the new number and rows are rewritten without a log
entry, which is what a writer following a protocol the old code does
not know looks like to it.

Throughout, one client raises a provider's VCPU total step by step
(through either process, or as the "migration" does) and one client per
process asks for allocation candidates: each answer must show a total at
least that of the last write acknowledged before it was sent, and no
more than that of the last write begun before it came back.
"""

import contextlib
import json
import subprocess
import sys
import threading
import time

import pytest

from placement.storage import changes
from tests.functional import server
from tests.functional import test_change_log_protocol as protocol_tests

RP_UUID = protocol_tests.RP_UUID
NEW = changes.PROTOCOL + 1
# The new release: this code, following protocol NEW.
_AS_NEW_RELEASE = ('import sys; from placement.storage import changes; '
                   'changes.PROTOCOL = %d; from placement.cmd import %%s; '
                   'sys.exit(%%s.main())' % NEW)
PHASE_SECONDS = 3


class _Total:
    """The VCPU total the writer has begun and has had acknowledged."""

    def __init__(self):
        self.lock = threading.Lock()
        self.begun = self.acknowledged = 8


class _Load:
    """A writer and one reader per port until stopped; what the readers
    found wrong, and how many answers they checked."""

    def __init__(self, database_url, ports):
        self.database_url = database_url
        self.ports = list(ports)
        self.total = _Total()
        self.unlogged = False   # the writer writes as the migration does
        self.wrong = []
        self.checked = 0
        self._stop = threading.Event()
        self._threads = []

    def start(self):
        self._threads = [threading.Thread(target=self._write)] + [
            threading.Thread(target=self._read, args=(index,))
            for index in range(len(self.ports))]
        for thread in self._threads:
            thread.start()

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def _write(self):
        turn = 0
        while not self._stop.is_set():
            turn += 1
            with self.total.lock:
                total = self.total.begun = self.total.begun + 1
            if self.unlogged:
                protocol_tests._set_total(self.database_url, total)
            else:
                port = self.ports[turn % len(self.ports)]
                if not _put_total(port, total):
                    continue    # a port being restarted: next turn
            with self.total.lock:
                self.total.acknowledged = max(self.total.acknowledged,
                                              total)
            time.sleep(0.01)

    def _read(self, index):
        while not self._stop.is_set():
            port = self.ports[index]
            with self.total.lock:
                low = self.total.acknowledged
            try:
                status, body = server.request(
                    port, 'GET', '/allocation_candidates?resources=VCPU:1')
            except OSError:
                continue        # being restarted
            with self.total.lock:
                high = self.total.begun
            if status == 503 and 'stopping' in str(body):
                continue        # a process being restarted: try again
            if status != 200:
                self.wrong.append(('status', port, status, body))
                continue
            seen = body['provider_summaries'][RP_UUID]['resources'][
                'VCPU']['capacity']
            self.checked += 1
            if not low <= seen <= high:
                self.wrong.append(('total', port, low, seen, high))


def _put_total(port, total):
    try:
        status, body = server.request(
            port, 'GET', '/resource_providers/%s' % RP_UUID)
        if status != 200:
            return False
        status, body = server.request(
            port, 'PUT', '/resource_providers/%s/inventories' % RP_UUID,
            {'resource_provider_generation': body['generation'],
             'inventories': {'VCPU': {'total': total, 'max_unit': 1}}})
    except OSError:
        return False
    return status == 200


def _health(port):
    return server.exchange(port, 'GET', '/healthcheck')[0]


def _new_release_status(config):
    """The change-log protocol check of ``placement-status upgrade check
    --json`` run as the new release."""
    result = subprocess.run(
        [sys.executable, '-c', _AS_NEW_RELEASE % ('status', 'status'),
         '--config-file', str(config), 'upgrade', 'check', '--json'],
        capture_output=True, text=True, timeout=120)
    checks = {check['check']: check
              for check in json.loads(result.stdout)['checks']}
    return checks['Change log protocol']


@contextlib.contextmanager
def _serving(database_url, directory, new_release=False):
    directory.mkdir(exist_ok=True)
    command = ([sys.executable, '-c', _AS_NEW_RELEASE % ('api', 'api')]
               if new_release else None)
    with server.running(database_url, directory, workers=1,
                        command=command) as port:
        yield port


@pytest.mark.backends('postgresql', 'mysql')
def test_a_rolling_restart_across_a_protocol_change_stays_exact(
        database_url, foreign, tmp_path):
    directories = [tmp_path / 'one', tmp_path / 'two']
    hosts = [contextlib.ExitStack(), contextlib.ExitStack()]
    with hosts[0], hosts[1]:
        ports = [host.enter_context(_serving(database_url, directory))
                 for host, directory in zip(hosts, directories)]
        assert server.request(ports[0], 'POST', '/resource_providers', {
            'name': 'cn', 'uuid': RP_UUID})[0] == 200
        assert _put_total(ports[0], 8)
        load = _Load(database_url, ports)
        load.start()
        try:
            time.sleep(PHASE_SECONDS)
            checked = load.checked
            # The new release's db sync: the protocol raised, and rows
            # rewritten in a way the old processes' log cannot show.
            protocol_tests._raise_protocol(foreign, NEW)
            load.unlogged = True
            time.sleep(PHASE_SECONDS)
            load.unlogged = False
            assert [_health(port) for port in load.ports] == [503, 503]
            assert load.checked > checked
            # The hosts restarted with the new release, one at a time.
            old_logs = []
            for index, healthy in ((0, [200, 503]), (1, [200, 200])):
                checked = load.checked
                hosts[index].close()
                old_logs.append(
                    (directories[index] / 'server.log').read_text())
                load.ports[index] = hosts[index].enter_context(_serving(
                    database_url, directories[index], new_release=True))
                time.sleep(PHASE_SECONDS)
                assert [_health(port) for port in load.ports] == healthy
                assert load.checked > checked
                check = _new_release_status(
                    directories[0] / 'placement.conf')
                if index == 0:
                    assert check['result'] == 1, check
                    assert 'protocol %d' % changes.PROTOCOL in \
                        check['details']
                else:
                    assert check['result'] == 0, check
        finally:
            load.stop()
    assert load.wrong == []
    # Each old process said why, once.
    assert [log.count('change log follows protocol %d' % NEW)
            for log in old_logs] == [1, 1]
