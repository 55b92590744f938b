"""Scale-out on a three-node MariaDB Galera cluster.

Two API servers of ours (two gunicorn workers each) write through
different Galera nodes while the claims stress load of
``test_allocation_stress`` races them for tight inventory: conflicting
generation bumps on two nodes are settled by Galera's certification (the
loser's commit fails as a deadlock, which the transaction runner retries).
The audit is the stress test's: no 5xx, no overcommit at any moment the
watcher saw, every acknowledged write stored whole, one generation bump per
acknowledged write, on every node.

Then failover: a server whose database address (here a TCP forwarder, as
a virtual IP or load balancer would be) moves to another node when its
node is stopped keeps answering, and nothing acknowledged is lost.

The cluster (Debian's ``mariadb-server`` and ``galera-4``, rsync state
transfer) starts in about fifteen seconds; the race is bounded as in the
stress test.
"""

import collections
import concurrent.futures
import time

import pytest

from placement.storage import engine
from placement.storage import migration
from placement.storage import standard_sync
from tests import galera_cluster
from tests import installed
from tests import tcp_proxy
from tests.functional import test_allocation_stress as stress
from tests.functional.server import request
from tests.functional.server import running


@pytest.fixture(scope='module')
def cluster():
    installed.require('Galera', galera_cluster.installed)
    galera = galera_cluster.Cluster().start()
    try:
        galera.nodes[0].create_database('placement')
        db = engine.Database(engine.create_engine(
            galera.nodes[0].url('placement')))
        migration.upgrade(db.engine)
        db.write(standard_sync.sync_all)
        db.dispose()
        yield galera
    finally:
        galera.stop()


def _url(cluster, index):
    return cluster.nodes[index].url('placement')


def test_two_api_servers_on_two_nodes_never_overcommit(cluster, tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    # Causal reads: a client that wrote through one server sees its write
    # through the other at once.
    causal = 'mysql_wsrep_sync_wait = 1\n'
    with running(_url(cluster, 1), tmp_path / 'a',
                 database_options=causal) as port_a, \
            running(_url(cluster, 2), tmp_path / 'b',
                    database_options=causal) as port_b:
        start_generations = stress.create_providers(port_a)
        deadline = time.monotonic() + stress.TIME_BUDGET
        providers = sorted(start_generations)
        writers = [stress.Writer(port_a if n % 2 else port_b, n, providers,
                                 deadline) for n in range(stress.THREADS)]
        watch = stress.CapacityWatch(_url(cluster, 0))
        watch.start()
        try:
            with concurrent.futures.ThreadPoolExecutor(
                    stress.THREADS) as pool:
                list(pool.map(stress.Writer.run, writers))
        finally:
            watch.stop.set()
            watch.join(timeout=30)
        outcomes = [o for w in writers for o in w.outcomes]
        consumers = [c for w in writers for c in w.consumers]
        print('load:', stress.summary(outcomes))

        stress.check_answers(outcomes)
        assert watch.error is None and watch.polls > 0, watch.error
        assert not watch.overcommits, watch.overcommits
        bumps = sum((w.bumps for w in writers), collections.Counter())
        for port in (port_a, port_b):
            stress.check_consumers(port, consumers)
            stress.check_providers(port, consumers, start_generations, bumps)
        for index in range(3):
            stress.check_tables(_url(cluster, index) + '&init_command='
                                'SET+SESSION+wsrep_sync_wait%3D1', consumers)


def test_service_keeps_answering_when_its_node_stops(cluster, tmp_path):
    proxy = tcp_proxy.Proxy(cluster.ports[1]['mysql'])
    url = 'mysql+pymysql://root@127.0.0.1:%d/placement?charset=utf8mb4' % (
        proxy.port)
    try:
        with running(url, tmp_path) as port:
            created = []

            def create(name):
                status, body = request(port, 'POST', '/resource_providers',
                                       {'name': name})
                assert status == 200, (status, body)
                created.append(body['uuid'])

            for n in range(5):
                create('before-%d' % n)
            # The node goes away; the failover address moves to another.
            cluster.nodes[1].halt()
            proxy.point_at(cluster.ports[2]['mysql'])
            for n in range(20):
                create('after-%d' % n)
            status, body = request(port, 'GET', '/resource_providers')
            assert status == 200, body
            names = {rp['name'] for rp in body['resource_providers']}
            assert {'before-%d' % n for n in range(5)} <= names
            assert {'after-%d' % n for n in range(20)} <= names
    finally:
        proxy.close()
        cluster.restart(1)
    assert cluster.size() == 3
