"""The database goes away for ten seconds under eight writing clients
(provider creations and allocation claims), on a PostgreSQL and a MariaDB
of the test's own: meanwhile every request is answered, within the pool
timeout, either normally or with a 503 in the OpenStack error format;
within five seconds of the database's return the service answers
normally again without a restart; and every write acknowledged with a
2xx, before, during or after the outage, is in the database afterwards."""

import http.client
import json
import random
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.storage import engine
from placement.storage import migration
from tests import installed
from tests import mariadb_server
from tests import pg_cluster
from tests.functional.server import running

WRITERS = 8
OUTAGE = 10
POOL_TIMEOUT = 10
PROVIDERS = 10


def _request(port, method, path, body=None):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
               'OpenStack-API-Version': 'placement 1.39'}
    if body is not None:
        headers['Content-Type'] = 'application/json'
    try:
        conn.request(method, path, body=json.dumps(body) if body else None,
                     headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    return response.status, json.loads(data) if data else None


class Load:
    """Writers that record what was acknowledged and how each answer was."""

    def __init__(self, port, providers):
        self.port = port
        self.providers = providers
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.created = []       # provider uuids acknowledged
        self.claimed = {}       # consumer uuid -> (provider uuid, amount)
        self.answers = []       # (start time, seconds, status, body)

    def _one(self, rng):
        started = time.monotonic()
        if rng.random() < 0.5:
            uuid = str(uuidlib.uuid4())
            status, body = _request(self.port, 'POST', '/resource_providers',
                                    {'name': 'new-' + uuid, 'uuid': uuid})
            if status == 200:
                with self.lock:
                    self.created.append(uuid)
        else:
            consumer = str(uuidlib.uuid4())
            provider = rng.choice(self.providers)
            amount = rng.randint(1, 4)
            status, body = _request(
                self.port, 'PUT', '/allocations/' + consumer,
                {'allocations': {provider: {'resources': {'VCPU': amount}}},
                 'project_id': 'p', 'user_id': 'u',
                 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
            if status == 204:
                with self.lock:
                    self.claimed[consumer] = (provider, amount)
        with self.lock:
            self.answers.append(
                (started, time.monotonic() - started, status, body))

    def _writer(self, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            self._one(rng)

    def run(self):
        self.threads = [threading.Thread(target=self._writer, args=(n,))
                        for n in range(WRITERS)]
        for thread in self.threads:
            thread.start()

    def join(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(120)


def _prepare(url):
    db = engine.Database(engine.create_engine(url))
    migration.upgrade(db.engine)
    db.dispose()


def _outage(url, tmp_path, halt, resume):
    _prepare(url)
    options = 'pool_timeout = %d\n' % POOL_TIMEOUT
    with running(url, tmp_path, workers=2,
                 database_options=options) as port:
        providers = []
        for n in range(PROVIDERS):
            status, body = _request(port, 'POST', '/resource_providers',
                                    {'name': 'host-%d' % n})
            assert status == 200
            providers.append(body['uuid'])
            status, _ = _request(
                port, 'PUT', '/resource_providers/%s/inventories'
                % body['uuid'], {'resource_provider_generation': 0,
                                 'inventories': {'VCPU': {'total': 100000}}})
            assert status == 200
        load = Load(port, providers)
        load.run()
        try:
            time.sleep(3)
            halted_at = time.monotonic()
            halt()
            time.sleep(OUTAGE)
            resume()
            back_at = time.monotonic()
            time.sleep(8)
        finally:
            load.join()
        log = (tmp_path / 'server.log').read_text()
    return load, halted_at, back_at, log


def _audit(url, load, halted_at, back_at, log):
    statuses = {status for _, _, status, _ in load.answers}
    assert statuses <= {200, 204, 503}, statuses
    assert 503 in statuses
    for started, seconds, status, body in load.answers:
        assert seconds < POOL_TIMEOUT + 2, (status, seconds)
        if status == 503:
            error = body['errors'][0]
            assert error['status'] == 503 and error['detail'], body
            # Only a request still in flight when the database began to
            # stop may fail: one that started earlier but waited (on a row
            # lock, on a busy machine) past that moment is such a request.
            assert started + seconds > halted_at, (
                started - halted_at, seconds, body)
    # Normal answers again within five seconds of the database's return.
    recovered = [started + seconds for started, seconds, status, _
                 in load.answers if started > back_at and status != 503]
    assert recovered and min(recovered) - back_at < 5
    late_failures = [started for started, _, status, _ in load.answers
                     if status == 503 and started > back_at + 5]
    assert not late_failures
    assert 'Unexpected error' not in log
    # Every acknowledged write is there.
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            uuids = set(conn.execute(sa.text(
                'SELECT uuid FROM resource_providers')).scalars())
            rows = conn.execute(sa.text(
                'SELECT a.consumer_id, rp.uuid, a.used FROM allocations a '
                'JOIN resource_providers rp ON rp.id = a.resource_provider_id'
            )).all()
    finally:
        db.dispose()
    assert set(load.created) <= uuids
    stored = {consumer: (provider, used) for consumer, provider, used in rows}
    for consumer, claim in load.claimed.items():
        assert stored.get(consumer) == claim, consumer
    assert len(load.created) > 20 and len(load.claimed) > 20


@pytest.mark.backends('postgresql')
def test_postgresql_outage_under_load(tmp_path):
    cluster = pg_cluster.Cluster().start()
    try:
        cluster.create_database('placement')
        url = cluster.url('placement')
        load, halted_at, back_at, log = _outage(
            url, tmp_path, cluster.halt, cluster.resume)
        _audit(url, load, halted_at, back_at, log)
    finally:
        cluster.stop()


@pytest.mark.backends('mysql')
def test_mariadb_outage_under_load(tmp_path):
    installed.require('MariaDB', mariadb_server.installed)
    server = mariadb_server.Server().start()
    try:
        server.create_database('placement')
        url = server.url('placement')
        load, halted_at, back_at, log = _outage(
            url, tmp_path, server.halt, lambda: server.start())
        _audit(url, load, halted_at, back_at, log)
    finally:
        server.stop()
