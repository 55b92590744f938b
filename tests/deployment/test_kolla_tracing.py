"""Traces from kolla-ansible's own configuration: ``enable_osprofiler``
with its redis backend (kolla-ansible 22.2.0's valkey behind a Sentinel)
renders ``[profiler]`` into placement.conf, the ``placement_api``
container serves with it, and a request signed as nova's scheduler signs
it is in the backend afterwards."""

from tests import installed
from tests import redis_server
from tests.deployment import kolla
from tests.functional import test_tracing


def test_kolla_s_osprofiler_settings_yield_traces(kolla_image,
                                                  deployment_mariadb,
                                                  workdir):
    installed.require('Redis', redis_server.installed)
    with redis_server.running(sentinel=True) as (server_url, kolla_string):
        sentinel_port = kolla_string.split('@127.0.0.1:')[1].split('?')[0]
        deployment = kolla.Deployment(
            kolla_image, deployment_mariadb, workdir,
            database='placement_kolla_tracing', settings={
                'enable_osprofiler': 'yes',
                'osprofiler_backend': 'redis',
                'osprofiler_secret': test_tracing.KEY,
                'valkey_master_password': redis_server.PASSWORD,
                'valkey_sentinel_port': sentinel_port,
            })
        conf = (deployment.config / 'placement.conf').read_text()
        assert '[profiler]\nenabled = true\ntrace_sqlalchemy = true\n' \
            'hmac_keys = %s\nconnection_string = %s\n' % (
                test_tracing.KEY, kolla_string) in conf, conf
        status, output = deployment.run(KOLLA_BOOTSTRAP='')
        assert status == 0, output
        with deployment.api():
            test_tracing._seed(deployment.port)
            names = test_tracing._asked(deployment.port, server_url)
    assert names[0] == 'wsgi', names
    for name in ('state.reader', 'state.question', 'db'):
        assert name in names, names
