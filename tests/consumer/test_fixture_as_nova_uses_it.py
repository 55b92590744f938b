"""The installed test fixtures, used the way nova's functional tests use
them: testtools test cases, a ``PlacementFixture`` subclass that points
the database at a per-test one in ``_configure_placement`` and talks to
``self.endpoint`` through a keystoneauth adapter (and plain ``requests``)
routed by wsgi-intercept, options changed after ``setUp``, and one
``Database`` shared by two fixtures. Each case runs on an empty SQLite
file, PostgreSQL database and MariaDB database, which the fixture
migrates."""

import gc
import uuid
import weakref

import fixtures
from keystoneauth1 import adapter as ka
from keystoneauth1 import session as ks
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import requests
from requests import adapters
import testtools

from placement import conf as placement_conf
from placement.tests import fixtures as placement_db
from placement.tests.functional.fixtures import placement as func_fixtures
from tests.consumer import backends


class NovaPlacementFixture(func_fixtures.PlacementFixture):
    """What nova's own fixture adds: its database, and a keystoneauth
    client that sends the token itself and names the endpoint."""

    def __init__(self, connection, **kwargs):
        super().__init__(**kwargs)
        self.connection = connection

    def _configure_placement(self, conf_fixture):
        conf_fixture.config(group='placement_database',
                            connection=self.connection)

    def setUp(self):
        super().setUp()
        # keystoneauth's keep-alive socket options break wsgi-intercept;
        # nova swaps in plain requests' pool manager the same way.
        self.useFixture(fixtures.MonkeyPatch(
            'keystoneauth1.session.TCPKeepAliveAdapter.init_poolmanager',
            adapters.HTTPAdapter.init_poolmanager))
        self._client = ka.Adapter(ks.Session(auth=None), raise_exc=False)

    def call(self, method, url, version='1.39', json=None):
        headers = {'x-auth-token': self.token,
                   'openstack-api-version': 'placement %s' % version}
        return self._client.request(url, method, json=json,
                                    endpoint_override=self.endpoint,
                                    headers=headers)


def _allocations(resp):
    return [request['allocations']
            for request in resp.json()['allocation_requests']]


class _NovaStyleTests(backends.OnEachBackend):
    """The cases; a subclass per backend names it in ``backend``."""

    def _placement(self, **kwargs):
        return self.useFixture(NovaPlacementFixture(self.connection,
                                                    **kwargs))

    def _provider(self, placement, name, parent=None, **inventory):
        body = {'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        resp = placement.call('POST', '/resource_providers', json=body)
        self.assertEqual(200, resp.status_code, resp.text)
        provider = resp.json()['uuid']
        if inventory:
            resp = placement.call(
                'PUT', '/resource_providers/%s/inventories' % provider,
                json={'resource_provider_generation': 0, 'inventories': {
                    rc: {'total': total} for rc, total in inventory.items()}})
            self.assertEqual(200, resp.status_code, resp.text)
        return provider

    def test_claim_through_keystoneauth(self):
        placement = self._placement()
        self.assertTrue(placement.endpoint.endswith('/placement'))
        compute = self._provider(placement, 'cn1', VCPU=8, MEMORY_MB=2048)
        resp = placement.call(
            'GET', '/allocation_candidates?resources=VCPU:2,MEMORY_MB:512')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([{compute: {'resources': {
            'VCPU': 2, 'MEMORY_MB': 512}}}], _allocations(resp))
        consumer = str(uuid.uuid4())
        resp = placement.call('PUT', '/allocations/%s' % consumer, json={
            'allocations': {compute: {'resources': {'VCPU': 2}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        self.assertEqual(204, resp.status_code, resp.text)
        resp = placement.call('GET', '/resource_providers/%s/usages'
                              % compute)
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 0},
                         resp.json()['usages'])
        # Links carry the mount point the endpoint names.
        resp = placement.call('GET', '/resource_providers/%s' % compute)
        self.assertEqual('/placement/resource_providers/%s' % compute,
                         resp.json()['links'][0]['href'])

    def test_plain_requests_and_noauth2(self):
        placement = self._placement()
        resp = requests.get(placement.endpoint)
        self.assertEqual(200, resp.status_code)
        self.assertEqual('1.39', resp.json()['versions'][0]['max_version'])
        resp = requests.get(placement.endpoint + '/resource_providers')
        self.assertEqual(401, resp.status_code)
        resp = requests.get(placement.endpoint + '/resource_providers',
                            headers={'x-auth-token': 'user:project'})
        self.assertEqual(403, resp.status_code)
        self.assertEqual(403, resp.json()['errors'][0]['status'])
        # Scope is not enforced: a system-scoped admin is served.
        resp = requests.get(placement.endpoint + '/resource_providers',
                            headers={'x-auth-token': 'admin',
                                     'openstack-system-scope': 'all'})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertFalse(
            placement.conf_fixture.conf.oslo_policy.enforce_new_defaults)

    def test_options_changed_after_setup_apply_to_the_next_request(self):
        placement = self._placement()
        for root in ('a', 'b'):
            parent = self._provider(placement, root, VCPU=8)
            for child in ('1', '2'):
                self._provider(placement, root + child, parent=parent,
                               VGPU=1)

        def roots():
            resp = placement.call(
                'GET', '/allocation_candidates?resources1=VGPU:1')
            self.assertEqual(200, resp.status_code, resp.text)
            return [resp.json()['provider_summaries'][uuid][
                'parent_provider_uuid']
                for request in resp.json()['allocation_requests']
                for uuid in request['allocations']]

        self.assertEqual(4, len(roots()))
        conf_fixture = placement.conf_fixture
        conf_fixture.config(group='placement', max_allocation_candidates=2)
        conf_fixture.config(group='workarounds',
                            optimize_for_wide_provider_trees=True)
        depth_first = roots()
        self.assertEqual(2, len(depth_first))
        self.assertEqual(1, len(set(depth_first)))
        conf_fixture.config(
            group='placement',
            allocation_candidates_generation_strategy='breadth-first')
        self.assertEqual(2, len(set(roots())))
        # One the application reads only when it is built.
        origin = {'Origin': 'http://nova.example'}
        resp = requests.get(placement.endpoint, headers=origin)
        self.assertNotIn('Access-Control-Allow-Origin', resp.headers)
        conf_fixture.config(group='cors',
                            allowed_origin=['http://nova.example'])
        resp = requests.get(placement.endpoint, headers=origin)
        self.assertEqual('http://nova.example',
                         resp.headers['Access-Control-Allow-Origin'])

    def test_one_database_shared_by_two_fixtures(self):
        """As nova's report-client tests: the test registers the options
        and owns the database; two fixtures serve it."""
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf_fixture = self.useFixture(config_fixture.Config(conf))
        conf_fixture.config(group='placement_database',
                            connection=self.connection)
        self.useFixture(placement_db.Database(conf_fixture,
                                              set_config=True))
        first, second = [
            self.useFixture(NovaPlacementFixture(
                self.connection, conf_fixture=conf_fixture, db=False,
                register_opts=False))
            for _ in range(2)]
        self.assertNotEqual(first.endpoint, second.endpoint)
        query = '/allocation_candidates?resources=VCPU:1'
        self.assertEqual([], _allocations(second.call('GET', query)))
        compute = self._provider(first, 'cn1', VCPU=4)
        self.assertEqual([{compute: {'resources': {'VCPU': 1}}}],
                         _allocations(second.call('GET', query)))

    def test_cleanup_removes_the_intercept(self):
        placement = NovaPlacementFixture(self.connection)
        placement.setUp()
        self.assertEqual(200, requests.get(placement.endpoint).status_code)
        placement.cleanUp()
        self.assertRaises(requests.ConnectionError, requests.get,
                          placement.endpoint, timeout=5)


class TestOnSQLite(_NovaStyleTests, testtools.TestCase):
    backend = 'sqlite'


class TestOnPostgreSQL(_NovaStyleTests, testtools.TestCase):
    backend = 'postgresql'


class TestOnMariaDB(_NovaStyleTests, testtools.TestCase):
    backend = 'mysql'


class TestFreshDatabases(testtools.TestCase):
    """Without a configured connection each Database is a new, migrated
    SQLite database, and the configuration is left alone unless asked."""

    def _config(self):
        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        return self.useFixture(config_fixture.Config(conf))

    def test_each_fixture_its_own_data(self):
        first = self.useFixture(func_fixtures.PlacementFixture())
        second = self.useFixture(func_fixtures.PlacementFixture())
        headers = {'x-auth-token': 'admin'}
        resp = requests.post(first.endpoint + '/resource_providers',
                             json={'name': 'only-in-first'},
                             headers=headers)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([], requests.get(
            second.endpoint + '/resource_providers',
            headers=headers).json()['resource_providers'])
        resp = requests.get(first.endpoint + '/traits?name=in:HW_CPU_X86_AVX2',
                            headers=dict(headers, **{
                                'openstack-api-version': 'placement 1.6'}))
        self.assertEqual(['HW_CPU_X86_AVX2'], resp.json()['traits'])

    def test_set_config(self):
        conf_fixture = self._config()
        self.useFixture(placement_db.Database(conf_fixture))
        self.assertIsNone(conf_fixture.conf.placement_database.connection)
        conf_fixture = self._config()
        self.useFixture(placement_db.Database(conf_fixture,
                                              set_config=True))
        self.assertTrue(conf_fixture.conf.placement_database.connection
                        .startswith('sqlite:///'))

    def test_a_finished_fixture_frees_its_database(self):
        """A suite makes one per test: none may outlive its test, with
        the candidates state read from it."""
        placement = func_fixtures.PlacementFixture()
        placement.setUp()
        resp = requests.get(
            placement.endpoint + '/allocation_candidates?resources=VCPU:1',
            headers={'x-auth-token': 'admin',
                     'openstack-api-version': 'placement 1.39'})
        self.assertEqual(200, resp.status_code)
        database = weakref.ref(placement.wsgi_app.db)
        placement.cleanUp()
        del placement
        gc.collect()
        self.assertIsNone(database())


def test_a_configuration_thrown_away_hands_its_database_to_no_other():
    """A ``Database`` fixture whose configuration is dropped without the
    fixture's cleanup (a consumer's test that dies half set up) leaves
    no entry behind for a later configuration that Python gives the
    same id()."""
    conf = cfg.ConfigOpts()
    conf_fixture = config_fixture.Config(conf)
    conf_fixture.setUp()
    database = placement_db.Database(conf_fixture)
    database.setUp()
    assert placement_db.database_for(conf) is database.db
    dead_id = id(conf)
    database.db.dispose()
    del conf, conf_fixture, database
    gc.collect()
    assert dead_id not in placement_db._DATABASES
