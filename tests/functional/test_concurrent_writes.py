"""Concurrent writers against a real multi-worker server.

Several gunicorn workers share one database, on each backend: writes must
neither fail with a server error (SQLite's "database is locked" would be a
500) nor lose an update (every accepted write bumps the generation exactly
once).  The load is bounded and goes to loopback only.
"""

import concurrent.futures
import uuid

import pytest

from tests.functional.server import request as _request
from tests.functional.server import running

THREADS = 8
WRITES_PER_THREAD = 12


@pytest.fixture
def server(database_url, tmp_path):
    """placement-api with two workers on the test's database."""
    with running(database_url, tmp_path) as port:
        yield port


def _contend_for_inventory(port, rp_uuid):
    """Read the generation, then try to write: returns the statuses."""
    statuses = []
    path = '/resource_providers/%s/inventories' % rp_uuid
    for attempt in range(WRITES_PER_THREAD):
        status, body = _request(port, 'GET', path)
        statuses.append(status)
        status, _ = _request(port, 'PUT', path, {
            'resource_provider_generation':
                body['resource_provider_generation'],
            'inventories': {'VCPU': {'total': 8 + attempt}}})
        statuses.append(status)
    return statuses


def _create_providers(port, thread):
    return [_request(port, 'POST', '/resource_providers',
                     {'name': 'rp-%d-%d' % (thread, n)})[0]
            for n in range(WRITES_PER_THREAD)]


def test_parallel_writers_get_answers_not_errors_and_lose_nothing(server):
    port = server
    status, shared = _request(port, 'POST', '/resource_providers',
                              {'name': 'shared', 'uuid': str(uuid.uuid4())})
    assert status == 200
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        creates = list(pool.map(lambda n: _create_providers(port, n),
                                range(THREADS)))
        contention = list(pool.map(
            lambda _n: _contend_for_inventory(port, shared['uuid']),
            range(THREADS)))

    assert {s for statuses in creates for s in statuses} == {200}
    status, listing = _request(port, 'GET', '/resource_providers')
    assert len(listing['resource_providers']) == 1 + THREADS * (
        WRITES_PER_THREAD)

    writes = [s for statuses in contention for s in statuses[1::2]]
    assert set(writes) <= {200, 409}, writes
    assert writes.count(200) >= 1
    status, provider = _request(port, 'GET',
                                '/resource_providers/' + shared['uuid'])
    # No lost update and no double count: one bump per accepted write.
    assert provider['generation'] == writes.count(200)
