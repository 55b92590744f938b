"""Prometheus metrics against a live placement-api with two workers:
served on their own address only, summed across workers, by route
template; off by default."""

import http.client
import socket
import time

import pytest

from tests import scraped
from tests.functional.server import free_port
from tests.functional.server import request
from tests.functional.server import running


def _settled_scrape(port, seconds=10):
    """A scrape once no worker holds a connection, or the last one
    tried: a worker that started after the first answered reads the
    candidate state before serving, and may still be reading it."""
    deadline = time.monotonic() + seconds
    while True:
        text = scraped.scrape(port)
        if (scraped.sample(text, 'placement_db_connections_in_use') == 0
                or time.monotonic() > deadline):
            return text
        time.sleep(0.1)


@pytest.fixture
def metrics_port():
    return free_port()


def test_requests_latency_candidates_and_pool(database_url, tmp_path,
                                              metrics_port):
    config = '[metrics]\nenabled = True\nbind = 127.0.0.1:%d\n' % (
        metrics_port)
    with running(database_url, tmp_path, extra_config=config) as port:
        uuids = []
        for n in range(6):
            status, body = request(port, 'POST', '/resource_providers',
                                   {'name': 'rp%d' % n})
            assert status == 200
            uuids.append(body['uuid'])
        for uuid in uuids:
            status, body = request(port, 'GET', '/resource_providers/' + uuid)
            assert status == 200
        request(port, 'PUT', '/resource_providers/%s/inventories' % uuids[0],
                {'resource_provider_generation': 0,
                 'inventories': {'VCPU': {'total': 8}}})
        status, body = request(port, 'GET',
                               '/allocation_candidates?resources=VCPU:1')
        assert status == 200 and len(body['allocation_requests']) == 1
        request(port, 'GET', '/resource_providers/' + '0' * 32)   # a 404
        # The API port does not serve them.
        assert request(port, 'GET', '/metrics')[0] == 404

        text = _settled_scrape(metrics_port)
        # Six POSTs and six GETs, whichever of the two workers took them.
        total = 'placement_http_requests_total'
        assert scraped.sample(text, total, method='POST',
                              route='/resource_providers', status='200') == 6
        assert scraped.sample(text, total, method='GET',
                              route='/resource_providers/{uuid}',
                              status='200') == 6
        assert scraped.sample(text, total, method='GET',
                              route='/resource_providers/{uuid}',
                              status='404') == 1
        assert scraped.sample(
            text, 'placement_http_request_duration_seconds_count',
            method='POST', route='/resource_providers') == 6
        assert scraped.sample(
            text, 'placement_allocation_candidates_returned_count') == 1
        assert scraped.sample(
            text, 'placement_allocation_candidates_returned_sum') == 1
        # Connections are back in the pool between requests.
        assert scraped.sample(text, 'placement_db_connections_in_use') == 0


def test_off_by_default(database_url, tmp_path, metrics_port):
    # The port held, not listened on: whatever would serve the metrics
    # (and nothing else: another test's server) could not take it.
    with socket.socket() as held, running(database_url, tmp_path) as port:
        held.bind(('127.0.0.1', metrics_port))
        assert request(port, 'GET', '/')[0] == 200
        conn = http.client.HTTPConnection('127.0.0.1', metrics_port,
                                          timeout=5)
        with pytest.raises(ConnectionRefusedError):
            conn.request('GET', '/metrics')
        conn.close()
