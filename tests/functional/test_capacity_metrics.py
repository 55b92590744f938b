"""The placement_capacity gauges against a live placement-api: requests
named in [metrics] capacity_request, refreshed on an interval (a scrape
reads the last values), and a bad one stops the start with its reason."""

import os
import subprocess
import sys
import time

from tests import scraped
from tests.functional.server import request
from tests.functional.server import running
from tests.functional.test_metrics import metrics_port  # noqa: F401

CONFIG = '''[metrics]
enabled = True
bind = 127.0.0.1:%d
capacity_interval = 1
capacity_request = small=VCPU:1,MEMORY_MB:1024
capacity_request = big=resources=VCPU:4&required=HW_CPU_X86_AVX2
capacity_request = ghost=CUSTOM_NOT_YET:1
'''


def _provider(port, name, traits=(), **inventory):
    status, body = request(port, 'POST', '/resource_providers',
                           {'name': name})
    assert status == 200
    status, answer = request(
        port, 'PUT', '/resource_providers/%s/inventories' % body['uuid'],
        {'resource_provider_generation': 0,
         'inventories': {rc: {'total': total}
                         for rc, total in inventory.items()}})
    assert status == 200, answer
    if traits:
        status, answer = request(
            port, 'PUT', '/resource_providers/%s/traits' % body['uuid'],
            {'resource_provider_generation': 1, 'traits': list(traits)})
        assert status == 200, answer
    return body['uuid']


def _wait_for(metrics_port, name, value, **labels):
    """The text of the first scrape where the sample has ``value``."""
    deadline = time.monotonic() + 20
    while True:
        text = scraped.scrape(metrics_port)
        if scraped.sample(text, name, **labels) == value:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.2)


def test_named_requests_are_counted_and_refreshed(
        database_url, tmp_path, metrics_port):  # noqa: F811
    config = CONFIG % metrics_port
    with running(database_url, tmp_path, extra_config=config) as port:
        cn1 = _provider(port, 'cn1', VCPU=8, MEMORY_MB=4096)
        cn2 = _provider(port, 'cn2', ['HW_CPU_X86_AVX2'], VCPU=16,
                        MEMORY_MB=2048)
        text = _wait_for(metrics_port, 'placement_capacity_total', 6,
                         request='small')
        assert scraped.sample(text, 'placement_capacity', request='small',
                              root=cn1) == 4
        assert scraped.sample(text, 'placement_capacity', request='small',
                              root=cn2) == 2
        assert scraped.sample(text, 'placement_capacity', request='big',
                              root=cn1) == 0
        assert scraped.sample(text, 'placement_capacity_total',
                              request='big') == 4
        assert scraped.sample(text, 'placement_capacity_limited_by_sharing',
                              request='small') == 0
        # A class that does not exist (yet) leaves its request out.
        assert scraped.sample(text, 'placement_capacity_total',
                              request='ghost') is None
        # Scrapes between two refreshes read the same computation.
        stamp = scraped.sample(
            text, 'placement_capacity_refreshed_timestamp_seconds')
        assert stamp is not None
        # A change shows at the next refresh.
        _provider(port, 'cn3', VCPU=2, MEMORY_MB=2048)
        _wait_for(metrics_port, 'placement_capacity_total', 8,
                  request='small')


def test_a_bad_request_stops_the_start(database_url, tmp_path,
                                       metrics_port):  # noqa: F811
    config = tmp_path / 'placement.conf'
    config.write_text(
        '[api]\nauth_strategy = noauth2\n[placement_database]\n'
        'connection = %s\n[metrics]\nenabled = True\nbind = 127.0.0.1:%d\n'
        'capacity_request = broken=VCPU:x\n' % (database_url, metrics_port))
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'placement-api'),
         '--config-file', str(config), '--bind', '127.0.0.1:1'],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert ('[metrics] capacity_request broken: ' in result.stderr
            and 'VCPU expected positive integer amount' in result.stderr)
