"""GET /healthcheck: oslo.middleware's health check with our database
backend, answered before authentication; 503 while the database is away
and 200 again, without a restart, once it is back."""

import http.client
import json
import time

import pytest
import webtest

from placement import app as placement_app
from placement.storage import engine
from placement.storage import migration
from tests import pg_cluster
from tests.functional.server import running


def test_healthy_without_a_token(app):
    resp = app.get('/healthcheck')
    assert resp.status_int == 200
    assert resp.text == 'OK'
    assert app.head('/healthcheck').status_int == 204
    # Everything else still wants a token.
    app.get('/resource_providers', status=401)


def test_details_only_when_configured(conf, db):
    app = webtest.TestApp(placement_app.build_app(conf, db, prepare=False))
    body = app.get('/healthcheck',
                   headers={'Accept': 'application/json'}).json
    assert body['reasons'] == ['OK']
    assert 'details' not in json.dumps(body)
    conf.set_override('detailed', True, group='healthcheck')
    app = webtest.TestApp(placement_app.build_app(conf, db, prepare=False))
    body = app.get('/healthcheck',
                   headers={'Accept': 'application/json'}).json
    assert body['detailed'] is True
    assert [r['reason'] for r in body['reasons']] == ['OK']


def test_the_check_can_be_turned_off(conf, db):
    conf.set_override('backends', [], group='healthcheck')
    app = webtest.TestApp(placement_app.build_app(conf, db, prepare=False))
    # No backend left to ask: healthy, with nothing to report.
    resp = app.get('/healthcheck')
    assert resp.status_int == 200 and resp.text == ''


@pytest.fixture
def outage_cluster():
    cluster = pg_cluster.Cluster().start()
    yield cluster
    cluster.stop()


def _probe(port, method='GET'):
    """A load balancer's probe: no token, a fresh connection."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    try:
        conn.request(method, '/healthcheck')
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_503_while_the_database_is_down_and_200_once_back(
        outage_cluster, tmp_path):
    """Against a live server (two workers) on a PostgreSQL that stops and
    comes back."""
    outage_cluster.create_database('placement')
    url = outage_cluster.url('placement')
    db = engine.Database(engine.create_engine(url))
    migration.upgrade(db.engine)
    db.dispose()
    with running(url, tmp_path) as port:
        assert _probe(port) == (200, 'OK')
        outage_cluster.halt()
        started = time.monotonic()
        for _ in range(4):   # both workers, whichever answers
            assert _probe(port) == (503, 'database unreachable')
        assert _probe(port, 'HEAD') == (503, '')
        assert time.monotonic() - started < 30
        outage_cluster.resume()
        assert [_probe(port) for _ in range(4)] == [(200, 'OK')] * 4
