"""The alert rules and the Grafana dashboard this repository ships
(etc/prometheus/placement-alerts.yml, etc/grafana/placement-dashboard.json)
against Prometheus itself.

promtool checks the rules and runs their cases
(tests/prometheus/placement-alerts.test.yml), which must name every
alert.  Then Debian's Prometheus scrapes the service, under placement-api
and under kolla-ansible's uwsgi (whose workers' metrics the host's
metrics process serves), with the rules loaded: the gauges it stores are
what the API says, a provider whose inventory was lowered under its
allocations raises PlacementProviderOverCapacity, and every query of the
dashboard is one Prometheus accepts and answers with data.
"""

import contextlib
import json
import pathlib
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from tests import installed
from tests.functional.server import free_port
from tests.functional.server import request
from tests.functional.server import running

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / 'etc' / 'prometheus' / 'placement-alerts.yml'
RULE_CASES = ROOT / 'tests' / 'prometheus' / 'placement-alerts.test.yml'
DASHBOARD = ROOT / 'etc' / 'grafana' / 'placement-dashboard.json'
CONFIG = '''[metrics]
enabled = True
bind = 127.0.0.1:%d
capacity_request = small=VCPU:1,MEMORY_MB:512
capacity_interval = 1
audit_interval = 1
'''
PROMETHEUS_CONFIG = '''global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: placement
    static_configs:
      - targets: ['127.0.0.1:%d']
'''


def _program(name):
    return installed.require(
        'Prometheus', lambda: shutil.which(name) or (
            '/usr/bin/' + name
            if pathlib.Path('/usr/bin', name).exists() else None))


def _alerts(rules_text):
    return {rule['alert']
            for group in yaml.safe_load(rules_text)['groups']
            for rule in group['rules'] if 'alert' in rule}


def test_promtool_checks_the_rules_and_runs_their_cases():
    promtool = _program('promtool')
    checked = subprocess.run([promtool, 'check', 'rules', str(RULES)],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The cases name the rules file relative to themselves.
    tested = subprocess.run([promtool, 'test', 'rules', RULE_CASES.name],
                            cwd=RULE_CASES.parent, capture_output=True,
                            text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_case_that_fires_it():
    cases = yaml.safe_load(RULE_CASES.read_text())
    fired = {alert['alertname']
             for case in cases['tests']
             for alert in case.get('alert_rule_test', ())
             if alert.get('exp_alerts')}
    assert _alerts(RULES.read_text()) - fired == set()


def _dashboard_queries():
    """Every panel's query, with Grafana's ``$__rate_interval`` as a
    plain range."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in dashboard['panels']:
        for target in panel.get('targets', ()):
            assert panel['datasource']['uid'] == '${datasource}', panel
            queries.append((panel['title'], target['expr'].replace(
                '$__rate_interval', '1m')))
    return queries


def test_the_dashboard_s_panels_ask_the_chosen_prometheus():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v['name']: v for v in dashboard['templating']['list']}
    assert variables['datasource']['query'] == 'prometheus'
    assert len(_dashboard_queries()) > 20


class Prometheus:
    """Debian's prometheus on a free port, scraping ``target_port`` every
    second with the shipped rules, in ``directory``."""

    def __init__(self, directory, target_port):
        self.port = free_port()
        config = directory / 'prometheus.yml'
        config.write_text(PROMETHEUS_CONFIG % (RULES, target_port))
        self.log = directory / 'prometheus.log'
        with open(self.log, 'w') as log:
            self.process = subprocess.Popen(
                [_program('prometheus'), '--config.file', str(config),
                 '--storage.tsdb.path', str(directory / 'data'),
                 '--web.listen-address', '127.0.0.1:%d' % self.port],
                stdout=log, stderr=subprocess.STDOUT)
        self._wait(lambda: self._get('/-/ready', raw=True))

    def stop(self):
        self.process.terminate()
        self.process.wait(30)

    def _get(self, path, raw=False):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d%s'
                                        % (self.port, path),
                                        timeout=10) as response:
                data = response.read()
        except OSError:
            return None
        return data if raw else json.loads(data)

    def query(self, expression):
        """(status, result) of an instant query."""
        answer = self._get('/api/v1/query?' + urllib.parse.urlencode(
            {'query': expression}))
        if answer is None:
            # A query Prometheus refuses answers 400 with its reason.
            return 'refused', expression
        return answer['status'], answer['data']['result']

    def values(self, expression):
        """{frozenset of labels without __name__: value}."""
        _status, result = self.query(expression)
        return {frozenset((k, v) for k, v in sample['metric'].items()
                          if k not in ('__name__', 'instance', 'job')):
                float(sample['value'][1]) for sample in result}

    def alerts(self):
        return self._get('/api/v1/alerts')['data']['alerts']

    def _wait(self, condition, seconds=60):
        deadline = time.monotonic() + seconds
        while True:
            found = condition()
            if found:
                return found
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]
            time.sleep(0.5)

    def wait_for(self, condition, seconds=60):
        return self._wait(condition, seconds)


@contextlib.contextmanager
def _prometheus(directory, target_port):
    server = Prometheus(directory, target_port)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=('placement-api', 'uwsgi'))
def served(request, tmp_path, database_url):
    """(API port, metrics port) of a server with metrics on: placement-api
    on ``database_url``, or kolla-ansible's uwsgi.ini on a PostgreSQL
    database of its own."""
    _program('prometheus')
    metrics_port = free_port()
    if request.param == 'placement-api':
        with running(database_url, tmp_path,
                     extra_config=CONFIG % metrics_port) as port:
            yield port, metrics_port
    else:
        serve = request.getfixturevalue('serve_wsgi')
        with serve('uwsgi', CONFIG % metrics_port) as (port, _log):
            yield port, metrics_port


def _seed(port):
    """cn1 with 8 VCPU, 6 of them allocated, then its inventory lowered
    to 4 under them; cn2 with 16 VCPU and 4096 MB, 2 VCPU allocated:
    cn1's uuid."""
    uuids = {}
    for name, inventories in (
            ('cn1', {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}}),
            ('cn2', {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096}})):
        status, body = request(port, 'POST', '/resource_providers',
                               {'name': name})
        assert status == 200, body
        uuids[name] = body['uuid']
        status, body = request(
            port, 'PUT', '/resource_providers/%s/inventories' % body['uuid'],
            {'resource_provider_generation': 0, 'inventories': inventories})
        assert status == 200, body
    for consumer, (name, vcpus) in enumerate((('cn1', 6), ('cn2', 2))):
        status, body = request(
            port, 'PUT', '/allocations/%032x' % (consumer + 1),
            {'allocations': {uuids[name]: {'resources': {'VCPU': vcpus}}},
             'project_id': 'p', 'user_id': 'u',
             'consumer_generation': None}, version='1.28')
        assert status == 204, body
    status, body = request(
        port, 'PUT', '/resource_providers/%s/inventories/VCPU' % uuids['cn1'],
        {'resource_provider_generation': 2, 'total': 4})
    assert status == 200, body
    return uuids['cn1']


@pytest.mark.backends('postgresql')
def test_prometheus_stores_the_gauges_alerts_and_draws_the_dashboard(
        served, tmp_path):
    port, metrics_port = served
    cn1 = _seed(port)
    for _ in range(20):
        assert request(port, 'GET', '/allocation_candidates?'
                       'resources=VCPU:1')[0] == 200
    assert request(port, 'GET', '/resource_providers/nowhere')[0] == 404
    stale = request(port, 'PUT', '/resource_providers/%s/traits' % cn1,
                    {'resource_provider_generation': 0, 'traits': []})
    assert stale[0] == 409, stale
    with _prometheus(tmp_path, metrics_port) as prometheus:
        total = prometheus.wait_for(lambda: prometheus.values(
            'openstack_placement_resource_total{resourcetype="VCPU"}'))
        assert total == {
            frozenset({('hostname', 'cn1'), ('resourcetype', 'VCPU')}): 4,
            frozenset({('hostname', 'cn2'), ('resourcetype', 'VCPU')}): 16}
        # The recording rules' next evaluation after the first scrape.
        assert prometheus.wait_for(lambda: prometheus.values(
            'placement:usage:by_class{resourcetype="VCPU"}')) == {
                frozenset({('resourcetype', 'VCPU')}): 8}
        assert prometheus.values('openstack_placement_up') == {
            frozenset(): 1}
        requests = prometheus.values(
            'sum by (status) (placement_http_requests_total)')
        assert requests[frozenset({('status', '200')})] >= 20
        assert requests[frozenset({('status', '404')})] == 1

        over = prometheus.wait_for(lambda: [
            alert for alert in prometheus.alerts()
            if alert['labels']['alertname'] == 'PlacementProviderOverCapacity'
        ])
        assert [(alert['labels']['hostname'], alert['labels']['resourcetype'],
                 alert['state'], float(alert['value'])) for alert in over] \
            == [('cn1', 'VCPU', 'pending', 6)]
        assert 'GET /audit' in over[0]['annotations']['description']

        # The counters' rates need two scrapes a few seconds apart.
        time.sleep(5)
        for title, expression in _dashboard_queries():
            status, result = prometheus.query(expression)
            assert status == 'success', (title, expression, result)
            # Every panel draws something: counters no request has
            # moved yet (retries, fallbacks, server errors) draw 0.
            assert result, (title, expression)
