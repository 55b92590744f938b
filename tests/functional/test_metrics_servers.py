"""``[metrics]`` under the WSGI servers deployment tools run
(``tests/wsgi_servers.py``: kolla-ansible's uwsgi, uwsgi loading the
application before it forks, gunicorn ``--preload``, mod_wsgi), each
with two workers on PostgreSQL.

Under each, the metrics are served on ``[metrics] bind`` and never on
the API port, summed across the workers, with openstack-exporter's
placement gauges equal to what the API says.  The host's metrics process
(``placement.cmd.metrics_process``) is a new way to fail: killed, a
worker starts another; stopped, the API does not notice; the state
readers it asks stopped, a scrape still answers in time, without the
state's gauges; the server stopped, it goes, with its directory.
"""

import http.client
import os
import re
import signal
import time

import pytest

from tests import processes
from tests import scraped
from tests import wsgi_servers
from tests.functional.server import free_port
from tests.functional.server import request

CONFIG = '''[metrics]
enabled = True
bind = 127.0.0.1:%d
'''
_SERVED_BY = re.compile(r' (\d+) INFO placement\.requestlog ')
_ROUTE = '/resource_providers/{uuid}'


@pytest.fixture(scope='module', params=wsgi_servers.KINDS)
def served(request, serve_wsgi):
    """(kind, API port, metrics port, log path) of a server of each kind
    with metrics on, on a database of its own."""
    metrics_port = free_port()
    with serve_wsgi(request.param, CONFIG % metrics_port) as (port, log):
        yield request.param, port, metrics_port, log


def _metrics_process(log_path):
    """The pid of the server's metrics process (started with the
    server's configuration file), once it is the only one: workers that
    start at once may each start one, and all but one leave."""
    deadline = time.monotonic() + 30
    while True:
        found = _running_metrics(log_path)
        if len(found) == 1:
            return found[0]
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def _scrape_when(metrics_port, condition, seconds=30):
    """The first scrape whose text meets ``condition``."""
    deadline = time.monotonic() + seconds
    text = None
    while True:
        try:
            text = scraped.scrape(metrics_port)
        except OSError:
            pass
        else:
            if condition(text):
                return text
        assert time.monotonic() < deadline, text
        time.sleep(0.2)


def _provider(port, name, inventories):
    status, body = request(port, 'POST', '/resource_providers',
                           {'name': name})
    assert status == 200, body
    uuid = body['uuid']
    status, body = request(
        port, 'PUT', '/resource_providers/%s/inventories' % uuid,
        {'resource_provider_generation': 0, 'inventories': inventories})
    assert status == 200, body
    return uuid


def _gets(metrics_text):
    return scraped.sample(metrics_text, 'placement_http_requests_total',
                          method='GET', route=_ROUTE, status='200') or 0


def test_served_summed_and_the_exporter_s_gauges(served):
    kind, port, metrics_port, log_path = served
    name = 'cn-%s' % kind
    uuid = _provider(port, name, {
        'VCPU': {'total': 16, 'reserved': 2, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 4096}})
    status, body = request(
        port, 'PUT', '/allocations/%s' % ('%032x' % 7),
        {'allocations': {uuid: {'resources': {'VCPU': 3, 'MEMORY_MB': 512}}},
         'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
        version='1.28')
    assert status == 204, body
    before = _gets(_scrape_when(metrics_port, lambda text: True))
    for _ in range(40):
        assert request(port, 'GET', '/resource_providers/' + uuid)[0] == 200
    # Both workers answered some of them (uwsgi closes each connection).
    pids = {int(pid) for pid in _SERVED_BY.findall(log_path.read_text())}
    assert len(pids) == wsgi_servers.WORKERS, pids
    text = _scrape_when(metrics_port,
                        lambda text: _gets(text) - before >= 40)
    assert _gets(text) - before == 40

    status, body = request(port, 'GET',
                           '/resource_providers/%s/inventories' % uuid)
    generation = body['resource_provider_generation']
    status, usages = request(port, 'GET',
                             '/resource_providers/%s/usages' % uuid)
    for resource_class, inventory in body['inventories'].items():
        labels = {'hostname': name, 'resourcetype': resource_class}
        for gauge, expected in (
                ('resource_total', inventory['total']),
                ('resource_reserved', inventory['reserved']),
                ('resource_allocation_ratio', inventory['allocation_ratio']),
                ('resource_generation', generation),
                ('resource_usage', usages['usages'][resource_class])):
            assert scraped.sample(text, 'openstack_placement_' + gauge,
                                  **labels) == expected, (gauge, labels)
    assert scraped.sample(text, 'openstack_placement_up') == 1

    # Never on the API port.
    status, _body = request(port, 'GET', '/metrics')
    assert status == 404


def test_a_killed_metrics_process_is_replaced(served):
    _kind, port, metrics_port, log_path = served
    first = _metrics_process(log_path)
    before = _gets(_scrape_when(metrics_port, lambda text: True))
    os.kill(first, signal.SIGKILL)
    # A worker looks for it as it answers, at most every 5 s.
    deadline = time.monotonic() + 30
    while True:
        assert request(port, 'GET', '/')[0] == 200
        replaced = [pid for pid in _running_metrics(log_path)
                    if pid != first]
        if replaced:
            break
        assert time.monotonic() < deadline, 'not replaced'
        time.sleep(0.2)
    # The counts survive it: they are in the workers' files.
    text = _scrape_when(metrics_port, lambda text: _gets(text) >= before)
    assert _gets(text) >= before


def _running_metrics(log_path):
    config = str(log_path.parent / 'placement.conf').encode()
    return processes.pids_where(
        lambda words: b'placement.cmd.metrics_process' in words
        and config in words)


def test_a_stopped_metrics_process_never_slows_the_api(served):
    _kind, port, metrics_port, log_path = served
    uuid = _provider(port, 'stopped-%s' % time.monotonic_ns(),
                     {'VCPU': {'total': 4}})
    pid = _metrics_process(log_path)
    os.kill(pid, signal.SIGSTOP)
    try:
        slowest = 0.0
        for _ in range(50):
            started = time.monotonic()
            assert request(port, 'GET', '/resource_providers/' + uuid)[0] \
                == 200
            slowest = max(slowest, time.monotonic() - started)
        assert slowest < 1.0
        # The scrape waits on it; a scraper's timeout ends the wait.
        conn = http.client.HTTPConnection('127.0.0.1', metrics_port,
                                          timeout=1)
        with pytest.raises(OSError):
            conn.request('GET', '/metrics')
            conn.getresponse().read()
        conn.close()
    finally:
        os.kill(pid, signal.SIGCONT)
    _scrape_when(metrics_port, lambda text: True)


def test_stopped_state_readers_leave_the_gauges_out_in_time(serve_wsgi):
    """Under kolla's uwsgi the metrics process asks the host's state
    readers, with their deadline: stopped (keeper and readers), a scrape
    still answers within seconds, the request metrics in it and the
    state's gauges not (openstack_placement_up 0); replaced, they are
    back."""
    metrics_port = free_port()
    with serve_wsgi('uwsgi', CONFIG % metrics_port) as (port, log_path):
        _provider(port, 'cn', {'VCPU': {'total': 8}})
        _scrape_when(metrics_port, lambda text: scraped.sample(
            text, 'openstack_placement_up') == 1)
        state = processes.pids_where(
            lambda words: b'placement.cmd.state_process' in words
            and str(log_path.parent / 'placement.conf').encode() in words)
        assert state
        for pid in state:
            os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            text = scraped.scrape(metrics_port)
            assert time.monotonic() - started < 5
            assert scraped.sample(text, 'openstack_placement_up') == 0
            assert not scraped.series(text,
                                      'openstack_placement_resource_total')
            assert scraped.series(text, 'placement_http_requests_total')
        finally:
            for pid in state:
                os.kill(pid, signal.SIGCONT)
        # The workers' and the metrics process's clients replace what
        # stayed silent, or it answers again.
        for _ in range(5):
            request(port, 'GET', '/resource_providers')
        text = _scrape_when(metrics_port, lambda text: scraped.sample(
            text, 'openstack_placement_up') == 1)
        assert scraped.sample(text, 'openstack_placement_resource_total',
                              hostname='cn', resourcetype='VCPU') == 8


def test_a_bad_capacity_request_leaves_out_only_its_gauges(serve_wsgi):
    """placement-api refuses to start on a capacity_request that does not
    parse; a WSGI server's workers do not read it, and its metrics
    process serves everything else, saying why in the server's log."""
    metrics_port = free_port()
    config = CONFIG % metrics_port + (
        'capacity_request = small=VCPU:1\n'
        'capacity_request = broken=VCPU:x\n')
    with serve_wsgi('uwsgi', config) as (port, log_path):
        _provider(port, 'cn', {'VCPU': {'total': 8}})
        text = _scrape_when(metrics_port, lambda text: scraped.sample(
            text, 'openstack_placement_up') == 1)
        assert scraped.series(text, 'placement_http_requests_total')
        assert not scraped.series(text, 'placement_capacity_total')
        assert 'capacity_request: ' in log_path.read_text()


@pytest.mark.parametrize('kind', ['uwsgi', 'gunicorn-preload'])
def test_the_metrics_process_goes_with_the_server(serve_wsgi, kind):
    metrics_port = free_port()
    with serve_wsgi(kind, CONFIG % metrics_port) as (port, log_path):
        assert request(port, 'GET', '/')[0] == 200
        _scrape_when(metrics_port, lambda text: True)
        pid = _metrics_process(log_path)
        directory = _samples_directory(pid)
        assert os.path.isdir(directory)
    deadline = time.monotonic() + 20
    while os.path.exists('/proc/%d' % pid) or os.path.exists(directory):
        assert time.monotonic() < deadline, (pid, directory)
        time.sleep(0.2)


def test_the_metrics_process_leaves_once_the_server_is_gone(serve_wsgi):
    """The server killed outright (its workers too, nothing told): the
    metrics process leaves on its own, and removes its directory."""
    metrics_port = free_port()
    with serve_wsgi('uwsgi-preload', CONFIG % metrics_port) as (
            port, log_path):
        assert request(port, 'GET', '/')[0] == 200
        _scrape_when(metrics_port, lambda text: True)
        pid = _metrics_process(log_path)
        directory = _samples_directory(pid)
        group = os.getpgid(pid)
        helpers = (b'placement.cmd.metrics_process',
                   b'placement.cmd.state_process')
        for other in processes.pids_where(
                lambda words: not any(h in words for h in helpers)):
            if _group(other) == group:
                os.kill(other, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while os.path.exists('/proc/%d' % pid):
            assert time.monotonic() < deadline, 'still running'
            time.sleep(0.5)
        assert not os.path.exists(directory)


def _group(pid):
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _samples_directory(pid):
    with open('/proc/%d/cmdline' % pid, 'rb') as handle:
        words = handle.read().decode().split('\0')
    return words[words.index('--directory') + 1]
