"""``placement.direct.PlacementDirect`` used the way nova's functional
tests and osc-placement-tree use it: a testtools test case registers the
service's options on an oslo.config fixture, sets the database up with
the ``Database`` fixture (or only points ``connection`` at it) and calls
the API through the adapter the ``with`` block hands out. Each case runs
on an empty SQLite file, PostgreSQL database and MariaDB database."""

import gc
import uuid
import weakref

from keystoneauth1 import exceptions as ks_exceptions
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import testtools

from placement import conf as placement_conf
from placement import direct
from placement.tests import fixtures as placement_db
from tests.consumer import backends


class _DirectTests(backends.OnEachBackend):
    """The cases; a subclass per backend names it in ``backend``."""

    def setUp(self):
        super().setUp()
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        self.conf_fixture = self.useFixture(config_fixture.Config(conf))
        self.conf_fixture.config(group='placement_database',
                                 connection=self.connection)
        conf([], default_config_files=[])
        self.conf = conf

    def _migrated_database(self):
        self.useFixture(placement_db.Database(self.conf_fixture,
                                              set_config=True))

    def _provider(self, client, name, **inventory):
        resp = client.post('/resource_providers', json={'name': name},
                           microversion='1.20')
        self.assertEqual(200, resp.status_code, resp.text)
        provider = resp.json()['uuid']
        resp = client.put(
            '/resource_providers/%s/inventories' % provider,
            json={'resource_provider_generation': 0, 'inventories': {
                rc: {'total': total} for rc, total in inventory.items()}})
        self.assertEqual(200, resp.status_code, resp.text)
        return provider

    def test_claim_at_the_latest_microversion(self):
        self._migrated_database()
        with direct.PlacementDirect(self.conf,
                                    latest_microversion=True) as client:
            compute = self._provider(client, 'cn1', VCPU=8, MEMORY_MB=2048)
            resp = client.get('/allocation_candidates'
                              '?resources=VCPU:2,MEMORY_MB:512')
            self.assertEqual(200, resp.status_code, resp.text)
            self.assertEqual('placement 1.39',
                             resp.headers['openstack-api-version'])
            [request] = resp.json()['allocation_requests']
            self.assertEqual({compute: {'resources': {
                'VCPU': 2, 'MEMORY_MB': 512}}}, request['allocations'])
            consumer = str(uuid.uuid4())
            resp = client.put('/allocations/%s' % consumer, json=dict(
                request, project_id=str(uuid.uuid4()),
                user_id=str(uuid.uuid4()), consumer_generation=None,
                consumer_type='INSTANCE'))
            self.assertEqual(204, resp.status_code, resp.text)
            resp = client.get('/resource_providers/%s/usages' % compute)
            self.assertEqual({'VCPU': 2, 'MEMORY_MB': 512},
                             resp.json()['usages'])
            resp = client.get('/resource_providers/%s' % compute)
            self.assertEqual('/placement/resource_providers/%s' % compute,
                             resp.json()['links'][0]['href'])

    def test_errors_come_back_as_responses(self):
        self._migrated_database()
        with direct.PlacementDirect(self.conf,
                                    latest_microversion=True) as client:
            resp = client.get('/resource_providers/%s' % uuid.uuid4())
            self.assertEqual(404, resp.status_code)
            self.assertEqual(404, resp.json()['errors'][0]['status'])
            compute = self._provider(client, 'cn1', VCPU=8)
            resp = client.put(
                '/resource_providers/%s/inventories' % compute,
                json={'resource_provider_generation': 0,
                      'inventories': {'VCPU': {'total': 4}}})
            self.assertEqual(409, resp.status_code)
            self.assertEqual('placement.concurrent_update',
                             resp.json()['errors'][0]['code'])
            resp = client.post('/resource_providers', json={'nmae': 'x'})
            self.assertEqual(400, resp.status_code)
            # A caller may still ask keystoneauth to raise.
            self.assertRaises(ks_exceptions.NotFound, client.get,
                              '/resource_providers/%s' % uuid.uuid4(),
                              raise_exc=True)

    def test_base_microversion_unless_latest_is_asked_for(self):
        self._migrated_database()
        with direct.PlacementDirect(self.conf) as client:
            resp = client.post('/resource_providers', json={'name': 'cn1'})
            self.assertEqual(201, resp.status_code, resp.text)
            self.assertEqual('placement 1.0',
                             resp.headers['openstack-api-version'])
            self.assertEqual(b'', resp.content)
            self.assertEqual(404, client.get(
                '/allocation_candidates?resources=VCPU:1').status_code)
            resp = client.get('/allocation_candidates?resources=VCPU:1',
                              microversion='1.10')
            self.assertEqual(200, resp.status_code, resp.text)

    def test_a_call_s_microversion_wins_over_latest(self):
        self._migrated_database()
        with direct.PlacementDirect(self.conf,
                                    latest_microversion=True) as client:
            resp = client.get('/resource_providers', microversion='1.14')
            self.assertEqual('placement 1.14',
                             resp.headers['openstack-api-version'])

    def test_auth_strategy_is_noauth2_only_inside_the_block(self):
        """The caller's own settings, this one included, are as they were
        afterwards; others apply inside the block, changes too."""
        self._migrated_database()
        self.conf_fixture.config(group='api', auth_strategy='keystone')
        self.conf_fixture.config(group='placement',
                                 max_allocation_candidates=1)
        with direct.PlacementDirect(self.conf,
                                    latest_microversion=True) as client:
            self.assertEqual('noauth2', self.conf.api.auth_strategy)
            for name in ('cn1', 'cn2'):
                self._provider(client, name, VCPU=8)
            query = '/allocation_candidates?resources=VCPU:1'
            resp = client.get(query)
            self.assertEqual(200, resp.status_code, resp.text)
            self.assertEqual(1, len(resp.json()['allocation_requests']))
            self.conf_fixture.config(group='placement',
                                     max_allocation_candidates=-1)
            resp = client.get(query)
            self.assertEqual(2, len(resp.json()['allocation_requests']))
        self.assertEqual('keystone', self.conf.api.auth_strategy)
        self.assertEqual(-1, self.conf.placement.max_allocation_candidates)
        self.conf.clear_override('auth_strategy', group='api')
        with direct.PlacementDirect(self.conf):
            self.assertEqual('noauth2', self.conf.api.auth_strategy)
        self.assertEqual('keystone', self.conf.api.auth_strategy)
        self.conf_fixture.config(group='api', auth_strategy='noauth2')
        with direct.PlacementDirect(self.conf):
            pass
        self.assertEqual('noauth2', self.conf.api.auth_strategy)

    def test_leaving_removes_the_intercept(self):
        self._migrated_database()
        placement = direct.PlacementDirect(self.conf)
        with placement as client:
            self.assertEqual(200, client.get('/').status_code)
        self.assertRaises(ks_exceptions.ConnectFailure, client.get, '/',
                          connect_retries=0, timeout=5)

    def test_prefix_and_urls_unique(self):
        self._migrated_database()
        first = direct.PlacementDirect(self.conf, prefix='placement-direct')
        self.assertTrue(first.url.endswith('/placement-direct'))
        self.assertNotEqual(first.url, direct.PlacementDirect(self.conf).url)
        with first as client:
            resp = client.post('/resource_providers', json={'name': 'cn1'})
            self.assertTrue(resp.headers['location'].endswith(
                '/placement-direct/resource_providers/%s'
                % resp.headers['location'].rsplit('/', 1)[1]))

    def test_migrates_as_the_service_does_without_a_database_fixture(self):
        """Only ``connection`` set, as a tool would: the empty database is
        migrated when ``sync_on_startup`` says so, and two blocks in turn
        see the same data."""
        self.conf_fixture.config(group='placement_database',
                                 sync_on_startup=True)
        with direct.PlacementDirect(self.conf,
                                    latest_microversion=True) as client:
            compute = self._provider(client, 'cn1', VCPU=8)
            resp = client.get('/traits?name=in:HW_CPU_X86_AVX2')
            self.assertEqual(['HW_CPU_X86_AVX2'], resp.json()['traits'])
        placement = direct.PlacementDirect(self.conf,
                                           latest_microversion=True)
        with placement as client:
            resp = client.get('/resource_providers/%s/inventories'
                              % compute)
            self.assertEqual(200, resp.status_code, resp.text)
            self.assertEqual(8, resp.json()['inventories']['VCPU']['total'])
        # Nothing outlives the block: the engine and the candidates
        # state read through it are freed.
        database = weakref.ref(placement.wsgi_app.db)
        del placement
        gc.collect()
        self.assertIsNone(database())

    def test_a_configuration_never_parsed_is_refused(self):
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf.set_override('connection', self.connection,
                          group='placement_database')
        error = self.assertRaises(ValueError, direct.PlacementDirect, conf)
        self.assertIn('conf([], default_config_files=[])', str(error))
        self.assertEqual('keystone', conf.api.auth_strategy)

    def test_as_a_fixture(self):
        self._migrated_database()
        placement = self.useFixture(direct.PlacementDirect(
            self.conf, latest_microversion=True))
        resp = placement.adapter.get('/resource_providers')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([], resp.json()['resource_providers'])


class TestOnSQLite(_DirectTests, testtools.TestCase):
    backend = 'sqlite'


class TestOnPostgreSQL(_DirectTests, testtools.TestCase):
    backend = 'postgresql'


class TestOnMariaDB(_DirectTests, testtools.TestCase):
    backend = 'mysql'
