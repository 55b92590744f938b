"""This service behind a real keystone, with upstream's default (secure
RBAC) rules: tokens validated by keystonemiddleware, roles and scopes as
keystone issues them, ``[oslo_policy] enforce_scope`` off and on."""

import http.client
import json
import os
import uuid

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from tests import keystone_server
from tests import pg_cluster
from tests.functional.server import running

PASSWORD = 'secret'


@pytest.fixture(scope='module')
def keystone():
    server = keystone_server.Keystone(
        os.environ['PLACEMENT_TEST_KEYSTONE_VENV']).start()
    try:
        yield Identities(server)
    finally:
        server.stop()


class Identities:
    """Projects, users and role assignments made through keystone's API."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self.admin = ks_session.Session(auth=v3.Password(
            auth_url=self.url, username='admin',
            password=keystone_server.ADMIN_PASSWORD, project_name='admin',
            user_domain_id='default', project_domain_id='default'))
        self.projects = {name: self._project(name)
                         for name in ('service', 'demo', 'other')}
        self.roles = {name: self._role(name)
                      for name in ('admin', 'member', 'reader', 'service')}
        for user, project, role in (
                ('placement', 'service', 'service'),
                ('nova', 'service', 'service'),
                ('demo-admin', 'demo', 'admin'),
                ('demo-member', 'demo', 'member'),
                ('demo-reader', 'demo', 'reader'),
                ('other-reader', 'other', 'reader')):
            user_id = self._user(user)
            self._call('PUT', '/projects/%s/users/%s/roles/%s' % (
                self.projects[project], user_id, self.roles[role]))
        for user, role in (('system-admin', 'admin'),
                           ('system-reader', 'reader')):
            user_id = self._user(user)
            self._call('PUT', '/system/users/%s/roles/%s' % (
                user_id, self.roles[role]))

    def _call(self, method, path, body=None):
        response = self.admin.request(
            self.url + path, method, json=body,
            raise_exc=True)
        return response.json() if response.content else None

    def _project(self, name):
        return self._call('POST', '/projects', {'project': {
            'name': name, 'domain_id': 'default'}})['project']['id']

    def _role(self, name):
        found = self._call('GET', '/roles?name=%s' % name)['roles']
        if found:
            return found[0]['id']
        return self._call('POST', '/roles', {'role': {'name': name}}
                          )['role']['id']

    def _user(self, name):
        return self._call('POST', '/users', {'user': {
            'name': name, 'password': PASSWORD,
            'domain_id': 'default'}})['user']['id']

    def token(self, user, project=None, system=False):
        auth = v3.Password(
            auth_url=self.url, username=user, password=PASSWORD,
            user_domain_id='default',
            **({'system_scope': 'all'} if system else {
                'project_name': project, 'project_domain_id': 'default'}))
        return ks_session.Session(auth=auth).get_token()

    def revoke(self, token):
        self.admin.request(self.url + '/auth/tokens', 'DELETE',
                           headers={'X-Subject-Token': token},
                           raise_exc=True)

    def authtoken_config(self, enforce_scope):
        return ('[keystone_authtoken]\nwww_authenticate_uri = %s\n'
                'auth_url = %s\nauth_type = password\nusername = placement\n'
                'password = %s\nproject_name = service\n'
                'user_domain_id = default\nproject_domain_id = default\n'
                '[oslo_policy]\nenforce_scope = %s\n'
                % (self.url, self.url, PASSWORD, enforce_scope))


def call(port, method, path, token=None, body=None):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    headers = {'OpenStack-API-Version': 'placement 1.39',
               'Accept': 'application/json'}
    if token:
        headers['X-Auth-Token'] = token
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers['Content-Type'] = 'application/json'
    try:
        conn.request(method, path, payload, headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.fixture(scope='module', params=[True, False],
                ids=['enforce_scope', 'no_enforce_scope'])
def placement(request, keystone, tmp_path_factory):
    """Our server with keystone auth: (port, enforce_scope)."""
    cluster = pg_cluster.Cluster().start()
    cluster.create_database('placement')
    directory = tmp_path_factory.mktemp('placement')
    try:
        with running(cluster.url('placement'), directory,
                     database_options='sync_on_startup = True\n',
                     extra_config=keystone.authtoken_config(request.param),
                     auth_strategy='keystone') as port:
            yield port, request.param
    finally:
        cluster.stop()


def test_no_token_is_401_with_where_to_authenticate(placement, keystone):
    port, _ = placement
    status, headers, _body = call(port, 'GET', '/resource_providers')
    assert status == 401
    assert keystone.url.rsplit('/v3', 1)[0] in headers['WWW-Authenticate']
    # Version discovery and the OpenAPI document need no token.
    assert call(port, 'GET', '/')[0] == 200
    assert call(port, 'GET', '/openapi.json')[0] == 200


def test_bad_token_is_401(placement):
    port, _ = placement
    assert call(port, 'GET', '/resource_providers',
                token='gAAAAAB' + 'x' * 180)[0] == 401


def test_revoked_token_is_refused(placement, keystone):
    port, _ = placement
    token = keystone.token('nova', 'service')
    keystone.revoke(token)
    assert call(port, 'GET', '/resource_providers', token=token)[0] == 401


@pytest.mark.parametrize('user, project, allowed', [
    ('nova', 'service', True),             # the service role
    ('demo-admin', 'demo', True),          # a project-scoped admin
    ('demo-member', 'demo', False),
    ('demo-reader', 'demo', False),
])
def test_project_scoped_roles(placement, keystone, user, project, allowed):
    port, _ = placement
    token = keystone.token(user, project)
    status, _, body = call(port, 'GET', '/resource_providers', token=token)
    assert status == (200 if allowed else 403), body
    status, _, body = call(port, 'POST', '/resource_providers', token=token,
                           body={'name': 'rp-%s' % uuid.uuid4().hex[:8]})
    assert status == (200 if allowed else 403), body


def test_project_reader_sees_its_own_usages_only(placement, keystone):
    port, _ = placement
    demo = keystone.projects['demo']
    token = keystone.token('demo-reader', 'demo')
    assert call(port, 'GET', '/usages?project_id=' + demo,
                token=token)[0] == 200
    other = keystone.token('other-reader', 'other')
    assert call(port, 'GET', '/usages?project_id=' + demo,
                token=other)[0] == 403


@pytest.mark.parametrize('user, admin', [('system-admin', True),
                                         ('system-reader', False)])
def test_system_scope(placement, keystone, user, admin):
    """The rules are scoped to projects: with enforce_scope a system token
    is refused whatever its role; without, its role decides."""
    port, enforce_scope = placement
    token = keystone.token(user, system=True)
    status, _, body = call(port, 'GET', '/resource_providers', token=token)
    if enforce_scope or not admin:
        assert status == 403, body
    else:
        assert status == 200, body


@pytest.mark.skipif(not os.environ.get('PLACEMENT_TEST_CLIENT_VENV'),
                    reason='needs the clients venv (tests/clients)')
def test_openstack_cli_with_keystone_credentials(placement, keystone):
    """The CLI as operators use it: a password, the catalog, no endpoint
    named by hand."""
    import subprocess
    port, enforce_scope = placement
    service = keystone._call('POST', '/services', {'service': {
        'name': 'placement-%d' % port, 'type': 'placement'}})['service']
    for interface in ('public', 'internal'):
        keystone._call('POST', '/endpoints', {'endpoint': {
            'service_id': service['id'], 'interface': interface,
            'region_id': 'RegionOne',
            'url': 'http://127.0.0.1:%d' % port}})
    try:
        base = [os.path.join(os.environ['PLACEMENT_TEST_CLIENT_VENV'],
                             'bin', 'openstack'),
                '--os-auth-url', keystone.url, '--os-username', 'nova',
                '--os-password', PASSWORD, '--os-project-name', 'service',
                '--os-user-domain-id', 'default',
                '--os-project-domain-id', 'default',
                '--os-identity-api-version', '3',
                '--os-placement-api-version', '1.39']
        name = 'cli-%s' % uuid.uuid4().hex[:8]
        for args in (['resource', 'provider', 'create', name],
                     ['resource', 'provider', 'list', '--name', name]):
            proc = subprocess.run(base + args + ['-f', 'json'],
                                  capture_output=True, text=True,
                                  timeout=120)
            assert proc.returncode == 0, (args, proc.stderr[-800:])
        assert json.loads(proc.stdout)[0]['name'] == name
    finally:
        keystone._call('DELETE', '/services/%s' % service['id'])
