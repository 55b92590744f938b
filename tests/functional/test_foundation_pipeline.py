"""The request pipeline seen from inside a handler.

A probe resource is added to the real route table (everything else is the
application as ``build_app`` assembles it), so these tests pin down what
the foundation gives every handler -- identity, policy, version gates, body
helpers, error mapping -- without depending on any resource's code.
"""

import json
import wsgiref.util

import falcon
import pytest
import webtest

from placement import app as placement_app
from placement import error_codes
from placement.handlers import base
from placement.policies import resource_provider as rp_policies
from placement.policies import usage as usage_policies
from placement.storage import exceptions as storage_exc

SCHEMA = {'type': 'object', 'properties': {'name': {'type': 'string'}},
          'required': ['name'], 'additionalProperties': False}


class Probe(base.Resource):
    """GET reports who is asking (after checking ``?rule=``); PUT echoes
    a validated JSON body; both live only from microversion 1.5."""

    @base.operation('Who is asking', since='1.5')
    def on_get(self, req, resp):
        rule = req.get_param('rule')
        target = None
        if req.get_param('project'):
            target = {'project_id': req.get_param('project')}
        if rule:
            req.context.can(rule, target)
        credentials = req.context.credentials
        base.send_json(req, resp, {
            'user_id': credentials.user_id,
            'project_id': credentials.project_id,
            'roles': credentials.roles,
            'system_scope': credentials.system_scope,
            'request_id': credentials.request_id,
            'global_request_id': credentials.global_request_id,
            'remote_addr': req.remote_addr,
            'microversion': list(req.context.microversion),
        })

    @base.require_json
    @base.operation('Echo a body', since='1.5', body=SCHEMA)
    def on_put(self, req, resp):
        base.send_json(req, resp, base.read_body(req))

    @base.operation('Nothing', until='1.9', outside=405)
    def on_delete(self, req, resp):
        resp.status = falcon.HTTP_204


class Failure(base.Resource):
    """GET raises what ``?kind=`` names, as a handler bug or storage would."""

    FAILURES = {
        'bug': lambda: RuntimeError('a handler bug'),
        'not_found': lambda: storage_exc.NotFound('No such thing.'),
        'duplicate': lambda: storage_exc.Duplicate('Name taken.'),
        'concurrent': lambda: storage_exc.ConcurrentUpdate('Generation.'),
        'invalid': lambda: storage_exc.InvalidInput('Bad value.'),
        'read_only': lambda: storage_exc.ReadOnly('Standard.'),
        'storage': lambda: storage_exc.StorageError('Odd state.'),
    }

    def on_get(self, req, resp):
        raise self.FAILURES[req.get_param('kind')]()


@pytest.fixture
def build(conf, db, monkeypatch):
    """Build the application with the probe routes, after any overrides."""
    real_routes = placement_app.routes
    monkeypatch.setattr(placement_app, 'routes', lambda: real_routes() + [
        ('/probe', Probe()), ('/failure', Failure())])

    def build_probe_app():
        return webtest.TestApp(
            placement_app.build_app(conf, db, prepare=False))
    return build_probe_app


@pytest.fixture
def probe(build):
    return build()


def call(app, method='GET', url='/probe', token='admin', version='1.39',
         status=200, headers=None, **kwargs):
    all_headers = {'OpenStack-API-Version': 'placement %s' % version}
    if token is not None:
        all_headers['X-Auth-Token'] = token
    all_headers.update(headers or {})
    return app.request(url, method=method, headers=all_headers,
                       status=status, **kwargs)


def error_of(resp):
    return resp.json['errors'][0]


# -- noauth2 identity --------------------------------------------------------

def test_admin_token_is_project_scoped_admin(probe):
    seen = call(probe).json
    assert seen['user_id'] == 'admin'
    assert seen['project_id'] == 'admin'
    assert seen['roles'] == ['admin']
    assert seen['system_scope'] is None


def test_user_and_project_from_token(probe):
    seen = call(probe, token='alice:proj1').json
    assert (seen['user_id'], seen['project_id'], seen['roles']) == (
        'alice', 'proj1', [])


def test_roles_from_header_replace_the_admin_default(probe):
    seen = call(probe, headers={'X-Roles': 'reader,member'}).json
    assert seen['roles'] == ['reader', 'member']


def test_system_scope_has_no_project(probe):
    seen = call(probe, headers={'OpenStack-System-Scope': 'all',
                                'X-Roles': 'admin'}).json
    assert seen['system_scope'] == 'all'
    assert seen['project_id'] is None


def test_request_ids_reach_the_handler(probe):
    inbound = 'req-0b6bc21c-5a1b-4bcb-9d5f-2a4d4b5b4a0e'
    resp = call(probe, headers={'X-OpenStack-Request-ID': inbound})
    assert resp.json['request_id'] == resp.headers['x-openstack-request-id']
    assert resp.json['global_request_id'] == inbound


def test_malformed_global_request_id_is_ignored(probe):
    resp = call(probe, headers={'X-OpenStack-Request-ID': 'not-an-id'})
    assert resp.json['global_request_id'] is None


# -- policy ------------------------------------------------------------------

@pytest.mark.parametrize('token, headers', [
    ('admin', {}),
    ('nova:service-project', {'X-Roles': 'service'}),
])
def test_default_policy_admits_admin_and_service(probe, token, headers):
    call(probe, url='/probe?rule=%s' % rp_policies.LIST, token=token,
         headers=headers)


def test_default_policy_refuses_a_plain_member(probe):
    resp = call(probe, url='/probe?rule=%s' % rp_policies.LIST,
                token='alice:proj1', headers={'X-Roles': 'member'},
                status=403)
    error = error_of(resp)
    assert error['title'] == 'Forbidden'
    assert error['detail'] == (
        'Access was denied to this resource.\n\n Policy does not allow '
        'placement:resource_providers:list to be performed.  ')
    assert error['code'] == error_codes.DEFAULT


def test_system_scoped_admin_is_refused_by_project_scoped_rules(probe):
    resp = call(probe, url='/probe?rule=%s' % rp_policies.LIST,
                headers={'X-Roles': 'admin', 'OpenStack-System-Scope': 'all'},
                status=403)
    assert error_of(resp)['detail'] == (
        'Access was denied to this resource.\n\n '
        'placement:resource_providers:list  ')


def test_enforce_scope_false_skips_the_scope_check(conf, build):
    conf.set_override('enforce_scope', False, group='oslo_policy')
    call(build(), url='/probe?rule=%s' % rp_policies.LIST,
         headers={'X-Roles': 'admin', 'OpenStack-System-Scope': 'all'})


def test_project_reader_reads_only_its_own_usages(probe):
    reader = {'X-Roles': 'reader'}
    call(probe, url='/probe?rule=%s&project=proj1'
         % usage_policies.TOTAL_USAGES, token='alice:proj1', headers=reader)
    call(probe, url='/probe?rule=%s&project=proj2'
         % usage_policies.TOTAL_USAGES, token='alice:proj1', headers=reader,
         status=403)


def test_policy_file_overrides_defaults(conf, build, tmp_path):
    policy_file = tmp_path / 'override.yaml'
    policy_file.write_text('"placement:resource_providers:list": '
                           '"role:reader"\n')
    conf.set_override('policy_file', str(policy_file), group='oslo_policy')
    probe = build()
    url = '/probe?rule=%s' % rp_policies.LIST
    call(probe, url=url, token='alice:proj1', headers={'X-Roles': 'reader'})
    call(probe, url=url, status=403)  # admin lacks the reader role here


# -- version gates -----------------------------------------------------------

def test_gated_responder_is_404_below_its_version(probe):
    error = error_of(call(probe, version='1.4', status=404))
    assert error['detail'] == 'The resource could not be found.\n\n   '
    assert call(probe, version='1.5').json['microversion'] == [1, 5]


def test_gated_with_405_answers_method_not_allowed_above_it(probe):
    call(probe, method='DELETE', version='1.9', status=204)
    resp = call(probe, method='DELETE', version='1.10', status=405)
    # As upstream answers a method its version lacks: no methods named.
    assert 'Allow' not in resp.headers
    assert error_of(resp)['detail'] == (
        'The method DELETE is not allowed for this resource. \n\n ')


# -- bodies --------------------------------------------------------------------

def test_json_body_round_trip(probe):
    resp = call(probe, method='PUT', body=b'{"name": "x"}',
                content_type='application/json')
    assert resp.json == {'name': 'x'}


def test_json_with_charset_is_json(probe):
    call(probe, method='PUT', body=b'{"name": "x"}',
         content_type='application/json; charset=UTF-8')


def test_missing_content_type_is_415(probe):
    resp = call(probe, method='PUT', status=415)
    assert error_of(resp)['detail'] == (
        'The request media type None is not supported by this server. '
        '\n\n The media type None is not supported, use application/json')


def test_malformed_json_is_400(probe):
    resp = call(probe, method='PUT', body=b'{"name": ',
                content_type='application/json', status=400)
    assert 'Malformed JSON: ' in error_of(resp)['detail']


def test_schema_violation_is_400(probe):
    resp = call(probe, method='PUT', body=b'{"name": 1}',
                content_type='application/json', status=400)
    assert ("JSON does not validate: 1 is not of type 'string'"
            in error_of(resp)['detail'])


def test_content_length_must_be_an_integer(probe):
    # webtest refuses to send this, so call the WSGI application directly.
    environ = {'REQUEST_METHOD': 'PUT', 'PATH_INFO': '/probe',
               'CONTENT_LENGTH': 'ten', 'CONTENT_TYPE': 'application/json',
               'HTTP_X_AUTH_TOKEN': 'admin'}
    wsgiref.util.setup_testing_defaults(environ)
    started = []
    body = b''.join(probe.app(
        environ, lambda status, headers, exc_info=None: started.append(
            status)))
    assert started == ['400 Bad Request']
    assert json.loads(body)['errors'][0]['detail'].endswith(
        'content-length header must be an integer  ')


def test_accept_excluding_json_is_406_before_the_handler(probe):
    resp = call(probe, headers={'Accept': 'text/html'}, status=406)
    assert 'Only application/json is provided' in resp.text


# -- failures ------------------------------------------------------------------

@pytest.mark.parametrize('kind, status, code', [
    ('not_found', 404, error_codes.DEFAULT),
    ('duplicate', 409, error_codes.DUPLICATE_NAME),
    ('concurrent', 409, error_codes.CONCURRENT_UPDATE),
    ('invalid', 400, error_codes.DEFAULT),
    ('read_only', 400, error_codes.DEFAULT),
    ('storage', 500, error_codes.DEFAULT),
])
def test_storage_errors_map_to_http(probe, kind, status, code):
    resp = call(probe, url='/failure?kind=%s' % kind, status=status)
    error = error_of(resp)
    assert error['code'] == code
    message = Failure.FAILURES[kind]().message
    assert error['detail'].endswith('\n\n %s  ' % message)


def test_unexpected_exception_is_a_500_in_the_error_format(probe):
    resp = call(probe, url='/failure?kind=bug', status=500)
    error = error_of(resp)
    assert error['title'] == 'Internal Server Error'
    assert 'a handler bug' in error['detail']
    assert error['request_id'] == resp.headers['x-openstack-request-id']


# -- proxies -------------------------------------------------------------------

FORWARDED = {'X-Forwarded-For': '203.0.113.7'}


def test_forwarded_headers_ignored_by_default(probe):
    assert call(probe, headers=FORWARDED).json['remote_addr'] != (
        '203.0.113.7')


def test_forwarded_headers_honoured_when_enabled(conf, build):
    conf.set_override('enable_proxy_headers_parsing', True,
                      group='oslo_middleware')
    assert call(build(), headers=FORWARDED).json['remote_addr'] == (
        '203.0.113.7')
