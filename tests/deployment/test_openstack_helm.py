"""openstack-helm's placement chart: the db-sync job, then the API pod.

From a checkout of the chart (``$PLACEMENT_TEST_HELM_CHART``; see
``helm.py`` for what is rendered and how): the ``placement-db-sync``
job's script (``db-sync.sh``: ``set -ex``, ``placement-manage db sync``)
with ``placement.conf`` as ``configmap-etc.yaml`` makes it, then the
``placement-api`` container's command, ``uwsgi --ini
/etc/placement/placement-api-uwsgi.ini``, on the ini rendered from
``values.yaml``'s ``conf.placement_api_uwsgi`` (processes 1,
enable-threads, thunder-lock, lazy-apps, ``hook-master-start =
unix_signal:15 gracefully_kill_them_all``, die-on-term, the stats server
with ``stats-http``, ``route-user-agent`` keeping the probes out of the
log ...), each in a confined host (``confined.py``) whose
``/etc/placement`` holds the files the pod mounts there, run as the
service's account (the chart's ``runAsUser``).

The deployment template's probes are then what the kubelet would do:
readiness ``GET /`` on the API port, liveness ``GET /`` on
``pod.probes.placement.api.liveness.port`` (the uwsgi stats server),
both with kube-probe's User-Agent; and ``kubectl delete pod``'s SIGTERM
must stop it gracefully (exit status 0) within the pod's
``terminationGracePeriodSeconds``.

The chart's values are overridden only where a test must: the database
URL (``conf.placement.placement_database.connection``, which the chart
builds from its endpoints otherwise), ``[api] auth_strategy =
noauth2`` (there is no keystone), and the addresses, which are the
loopback's and free ports instead of ``0.0.0.0:8778`` and
``0.0.0.0:1717`` (``http-socket`` preset, which the chart then keeps;
``stats``; the liveness port).  Upstream openstack-placement 16.0.0 runs
the same job and pod on a database of its own: the same exit statuses
and probe answers.
"""

import http.client
import pathlib
import re
import sys
import time

import pytest

from tests.deployment import confined
from tests.deployment import helm
from tests.deployment import sources
from tests.deployment.conftest import require_root
from tests.functional import server as functional_server
from tests.functional.server import request

ROOT = pathlib.Path(__file__).parents[2]
PROBE_AGENT = 'kube-probe/1.31'


@pytest.fixture(scope='module')
def chart():
    return sources.checkout('PLACEMENT_TEST_HELM_CHART',
                            "openstack-helm's placement chart")


def _probe(port):
    """A kubelet httpGet probe: its status (None if refused)."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=1)
    try:
        conn.request('GET', '/', headers={'User-Agent': PROBE_AGENT})
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def _pod(chart, venv, url):
    """The db-sync job and the API pod with ``venv``'s service: what
    happened, for the comparison."""
    api_port = functional_server.free_port()
    stats_port = functional_server.free_port()
    settings = helm.values(chart, {
        'conf': {
            'placement': {'placement_database': {'connection': url},
                          'api': {'auth_strategy': 'noauth2'}},
            'placement_api_uwsgi': {'uwsgi': {
                'http-socket': '127.0.0.1:%d' % api_port,
                'stats': '127.0.0.1:%d' % stats_port}}},
        'pod': {'probes': {'placement': {'api': {'liveness': {
            'port': stats_port}}}}}})
    conf = settings['conf']
    grace = settings['pod']['lifecycle']['termination_grace_period'][
        'api']['timeout']
    host = confined.Host(binds=[venv, *confined.venv_paths(venv), ROOT])
    found = {}
    try:
        etc = host.etc / 'placement'
        (etc / 'placement.conf').write_text(helm.oslo_conf(conf['placement']))
        (etc / 'placement-api-uwsgi.ini').write_text(
            helm.oslo_conf(conf['placement_api_uwsgi']))
        (etc / 'logging.conf').write_text(helm.oslo_conf(conf['logging']))
        (etc / 'policy.yaml').write_text('{}\n')
        (etc / 'placement.conf.d').mkdir()
        for path in etc.iterdir():
            path.chmod(0o755 if path.is_dir() else 0o444)
        (host.files / 'db-sync.sh').write_text(helm.db_sync_script(chart))
        (host.files / 'db-sync.sh').chmod(0o555)
        environment = {'PATH': '%s/bin:%s' % (venv, confined.PATH)}
        # The pods' runAsUser: the service's account.
        as_account = ['setpriv', '--reuid', confined.ACCOUNT, '--regid',
                      confined.ACCOUNT, '--init-groups']
        status, output = host.run(as_account + ['/srv/test/db-sync.sh'],
                                  environment)
        found['db-sync'] = status
        assert status == 0, output
        assert '+ placement-manage db sync' in output, output

        log = host.root / 'placement-api.log'
        process = host.start(
            as_account + ['uwsgi', '--ini',
                          '/etc/placement/placement-api-uwsgi.ini'],
            log, environment)
        # The probes' initialDelaySeconds, then every periodSeconds
        # until ready (here: every 0.2 s, up to a minute).
        time.sleep(5)
        deadline = time.monotonic() + 60
        while _probe(api_port) != 200:
            assert process.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.2)
        found['readiness'] = _probe(api_port)
        found['liveness'] = _probe(stats_port)
        status, body = request(api_port, 'GET', '/resource_providers')
        found['GET /resource_providers'] = status, body
        # route-user-agent's donotlog: uwsgi's request log has no probe.
        found['probes in uwsgi\'s request log'] = 'GET /' in re.findall(
            r'\] (GET \S+) =>', log.read_text())
        started = time.monotonic()
        found['exit on SIGTERM'] = host.terminate(timeout=grace)
        found['stopped within the grace period'] = \
            time.monotonic() - started < grace
        found['log'] = log.read_text()
        return found
    finally:
        host.remove()


def test_helm_db_sync_job_then_api_pod(chart, deployment_postgres,
                                       upstream_venv):
    require_root()
    results = {}
    for name, venv in (('ours', pathlib.Path(sys.prefix)),
                       ('upstream', upstream_venv)):
        database = 'placement_helm_%s' % name
        deployment_postgres.create_database(database)
        try:
            results[name] = _pod(chart, venv,
                                 deployment_postgres.url(database))
        finally:
            deployment_postgres.drop_database(database)
    ours = results['ours']
    log = ours.pop('log')
    assert ours == {
        'db-sync': 0, 'readiness': 200, 'liveness': 200,
        'GET /resource_providers': (200, {'resource_providers': []}),
        "probes in uwsgi's request log": False,
        'exit on SIGTERM': 0, 'stopped within the grace period': True,
    }, log[-4000:]
    assert 'graceful shutdown triggered' in log, log[-4000:]
    assert 'goodbye to uWSGI' in log, log[-4000:]
    upstream = results['upstream']
    upstream.pop('log')
    assert ours == upstream
