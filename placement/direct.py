"""``PlacementDirect``: the API in-process, through a keystoneauth adapter.

For other projects' functional tests and tools (nova's report-client
tests, osc-placement-tree) that want to read and change Placement's data
through its REST API without running a server::

    with direct.PlacementDirect(conf, latest_microversion=True) as client:
        resp = client.get('/resource_providers/%s' % uuid)

``conf`` is an oslo.config ``ConfigOpts`` with this service's options
registered, parsed (``conf([], default_config_files=[])`` will do, as in
nova's configuration fixture), and ``[placement_database] connection``
set. Requests go through wsgi-intercept to the application built for
``conf``: no socket, no port. It needs the ``fixtures`` extra (``fixtures``,
``wsgi-intercept``), which the service itself never imports.
"""

import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from wsgi_intercept import interceptor

from placement import app as placement_app
from placement.tests import fixtures as db_fixtures
from placement.tests.functional.fixtures import placement as func_fixtures

# noauth2's token for a user with the admin role: direct callers are
# trusted tools, as for upstream.
ADMIN_TOKEN = 'admin'


def _adapter(url, latest_microversion):
    """A keystoneauth adapter on ``url`` that sends the admin token and
    hands 4xx and 5xx answers back as responses instead of raising.

    The default headers sit on the session, which applies them after a
    call's own ``microversion=`` (the adapter's would come before), so
    that an explicit microversion wins over ``latest``.
    """
    headers = {'X-Auth-Token': ADMIN_TOKEN}
    if latest_microversion:
        headers['OpenStack-API-Version'] = 'placement latest'
    session = ks_session.Session(auth=None, additional_headers=headers)
    return ks_adapter.Adapter(session, service_type='placement',
                              endpoint_override=url, raise_exc=False)


def _require_parsed(conf):
    """Refuse, at once and saying why, a configuration never parsed: the
    service looks for its policy file beside the configuration files,
    which such a configuration cannot tell, and would otherwise fail at
    the first request inside wsgi-intercept. Checked when the object is
    made, where the error reaches the caller as it is (fixtures wraps
    what its set-up raises)."""
    try:
        conf.find_file('policy.yaml')
    except cfg.NotInitializedError:
        raise ValueError(
            'PlacementDirect needs a parsed configuration: call it first, '
            'e.g. conf([], default_config_files=[])') from None


class PlacementDirect(fixtures.Fixture):
    """The service for the length of a ``with`` block (or a test, through
    ``useFixture``), answering at ``self.url``.

    Entering prepares the database as the service does when it starts
    (migrations when ``sync_on_startup`` is set, the standard resource
    classes and traits), serves ``conf`` with ``[api] auth_strategy``
    forced to ``noauth2``, and returns ``self.adapter``. Leaving removes
    the intercept and gives ``auth_strategy`` back the value it had.
    Options changed inside the block apply from the next request on.

    :param conf: the configuration to serve.
    :param latest_microversion: send ``OpenStack-API-Version: placement
        latest`` unless a call names its own ``microversion``; otherwise
        requests get the service's base microversion, 1.0.
    :param prefix: the path the service is mounted at (``placement``).
    """

    def __init__(self, conf, latest_microversion=False, prefix=None):
        super().__init__()
        _require_parsed(conf)
        self.conf = conf
        self.url = 'http://%s/%s' % (uuid.uuid4(), prefix or 'placement')
        self.adapter = _adapter(self.url, latest_microversion)

    def __enter__(self):
        super().__enter__()
        return self.adapter

    def _setUp(self):
        self._force_noauth2()
        db = db_fixtures.serving_database(self.conf, self)
        placement_app.prepare_database(self.conf, db)
        self.wsgi_app = func_fixtures.ApplicationFollowingConfig(self.conf,
                                                                 db)
        intercept = interceptor.RequestsInterceptor(lambda: self.wsgi_app,
                                                    url=self.url)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)

    def _force_noauth2(self):
        """Serve without keystone: the admin token is all callers send."""
        before = self.conf.api.auth_strategy
        self.conf.set_override('auth_strategy', 'noauth2', group='api')
        self.addCleanup(self._restore_auth_strategy, before)

    def _restore_auth_strategy(self, before):
        """Give the option back the value the caller had, whether it came
        from a file, a default or the caller's own override (oslo.config
        keeps one override per option and does not show it)."""
        self.conf.clear_override('auth_strategy', group='api')
        if self.conf.api.auth_strategy != before:
            self.conf.set_override('auth_strategy', before, group='api')
