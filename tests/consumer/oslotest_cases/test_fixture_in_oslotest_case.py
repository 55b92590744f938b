"""The fixtures inside a consumer's real base test case:
``oslotest.base.BaseTestCase``, as nova's and osc-placement's functional
tests use it, with capture.Logging and capture.WarningsFixture.

Its ``NestedTempfile`` points ``tempfile`` at a directory of each test's
own and removes it when the test ends, so anything the fixtures keep
across tests (the template database) must not live there.  These cases
pass only when several run in one process: ``stestr`` runs this package
(``tests/consumer/test_runners.py``) and pytest collects it too.
"""

import tempfile
import uuid

from keystoneauth1 import adapter as ka
from keystoneauth1 import session as ks
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslotest import base
import requests

from placement.tests.functional.fixtures import capture
from placement.tests.functional.fixtures import placement as func_fixtures

_SYSTEM_TEMPDIR = tempfile.gettempdir()


class PlacementInOslotestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(capture.Logging())
        self.useFixture(capture.WarningsFixture())
        self.placement = self.useFixture(func_fixtures.PlacementFixture())
        self.client = ka.Adapter(ks.Session(auth=None), raise_exc=False)

    def _call(self, method, path, json=None):
        return self.client.request(
            self.placement.endpoint + path, method, json=json,
            headers={'x-auth-token': self.placement.token,
                     'openstack-api-version': 'placement 1.39'})

    def _only_provider_is(self, name):
        """The test's database is fresh: the provider this test makes
        is the only one, whatever the tests before it made."""
        resp = self._call('POST', '/resource_providers',
                          json={'name': name, 'uuid': str(uuid.uuid4())})
        self.assertEqual(200, resp.status_code, resp.text)
        resp = self._call('GET', '/resource_providers')
        self.assertEqual([name], [provider['name'] for provider in
                                  resp.json()['resource_providers']])
        resp = self._call('GET', '/resource_classes/VCPU')
        self.assertEqual(200, resp.status_code, resp.text)

    def test_first_case(self):
        self._only_provider_is('first')

    def test_second_case(self):
        self._only_provider_is('second')

    def test_third_case(self):
        self._only_provider_is('third')

    def test_each_case_has_a_temporary_directory_of_its_own(self):
        """What makes the cases above meaningful: NestedTempfile is in
        force, so the first case's directory was gone for the others."""
        self.assertNotEqual(_SYSTEM_TEMPDIR, tempfile.gettempdir())
        self._only_provider_is('fourth')

    def test_enforce_new_defaults_is_off_for_every_configuration(self):
        """As with upstream's fixture: the option's default is changed
        for the whole process, so a consumer's own configuration (here a
        new one) reads False too, unless it sets the option."""
        conf = cfg.ConfigOpts()
        for group, opts in policy_opts.list_opts():
            conf.register_opts(opts, group=group)
        conf([], default_config_files=[])
        self.assertFalse(conf.oslo_policy.enforce_new_defaults)

    def test_plain_requests_reach_the_endpoint(self):
        resp = requests.get(self.placement.endpoint)
        self.assertEqual(200, resp.status_code)
        self.assertEqual('1.39', resp.json()['versions'][0]['max_version'])
