"""The OpenAPI document: served without a token, valid OpenAPI 3.1, the
checked-in copy current, and every answer of a realistic session (at the
oldest, a middle and the newest microversion) as the document says."""

import json
import pathlib
import re
import uuid as uuidlib

import jsonschema
import openapi_spec_validator
import pytest

from placement import app as placement_app
from placement import microversion
from placement import openapi
from placement.schemas import resource_provider as provider_schemas

CHECKED_IN = (pathlib.Path(__file__).parents[2] / 'api-ref' /
              'openapi.json')


@pytest.fixture(scope='module')
def document():
    return openapi.document(placement_app.routes())


def test_served_without_a_token_at_any_microversion(app, document):
    for version in ('1.0', '1.39'):
        resp = app.get(openapi.PATH, headers={
            'OpenStack-API-Version': 'placement %s' % version})
        assert resp.content_type == 'application/json'
        assert resp.json == json.loads(json.dumps(document))


def test_is_valid_openapi_3_1(document):
    openapi_spec_validator.validate(document)
    assert document['openapi'] == '3.1.0'


def test_checked_in_copy_is_current(document):
    expected = json.dumps(document, indent=1, sort_keys=True) + '\n'
    assert CHECKED_IN.read_text() == expected, (
        'api-ref/openapi.json is stale: regenerate it with '
        '"python -m placement.cmd.openapi > api-ref/openapi.json"')


def test_every_route_and_method_is_described(document):
    for template, resource in placement_app.routes():
        described = set(document['paths'][template]) - {'parameters'}
        assert described == {m.lower() for m in resource.allowed_methods()}


def test_extensions_are_marked(document):
    patch = document['paths']['/allocations/{consumer_uuid}']['patch']
    assert patch['x-openstack-extension'] is True
    assert patch['x-openstack-microversions']['min_version'] == '1.28'
    assert set(patch['requestBody']['content']) == {
        'application/merge-patch+json', 'application/json'}
    extensions = [patch] + [
        document['paths']['/allocation_candidates/' + name]['get']
        for name in ('explain', 'capacity')] + [
        document['paths']['/audit']['get'],
        document['paths']['/audit/what_if']['post']] + [
        document['paths'][path]['get'] for path in (
            '/overview', '/overview/providers',
            '/overview/providers/{uuid}')]
    assert all(o['x-openstack-extension'] is True for o in extensions)
    others = [operation for item in document['paths'].values()
              for name, operation in item.items()
              if name != 'parameters'
              and not any(operation is o for o in extensions)]
    assert not [o for o in others if 'x-openstack-extension' in o]


def test_microversion_ranges_and_variants(document):
    paths = document['paths']
    assert paths['/reshaper']['post']['x-openstack-microversions'] == {
        'min_version': '1.30', 'max_version': microversion.MAX_VERSION_STRING}
    assert paths['/resource_providers/{uuid}/inventories']['delete'][
        'x-openstack-microversions']['min_version'] == '1.5'
    create = paths['/resource_providers']['post']
    # The very schema objects the handler validates with.
    assert create['requestBody']['content']['application/json'][
        'schema'] == provider_schemas.POST_1_14
    assert [(v['min_version'], v['max_version'], v['requestBody'])
            for v in create['x-openstack-schemas-by-microversion']] == [
        ('1.0', '1.13', provider_schemas.POST_1_0),
        ('1.14', '1.39', provider_schemas.POST_1_14)]
    listing = paths['/resource_providers']['get']
    assert [v['min_version'] for v in listing[
        'x-openstack-schemas-by-microversion']] == [
        '1.0', '1.3', '1.4', '1.14', '1.18']
    names = [p.get('name') for p in listing['parameters']]
    assert {'name', 'uuid', 'member_of', 'resources', 'in_tree',
            'required'} <= set(names)


class CheckedClient:
    """Sends requests and checks each answer against the document."""

    def __init__(self, client, document, version):
        self.client = client
        self.version = version
        self.paths = document['paths']
        self.error = document['components']['responses']['Error'][
            'content']['application/json']['schema']
        self.checked = []

    def _template(self, path):
        for template in self.paths:
            pattern = '^%s$' % re.sub(r'\{\w+\}', '[^/]+', template)
            if re.match(pattern, path):
                return template
        raise AssertionError('%s is not in the document' % path)

    def __call__(self, method, path, json=None):
        if method == 'PATCH':
            resp = self.client.app.patch_json(
                path, json, status='*',
                headers=self.client._headers(self.version, None))
        else:
            resp = self.client.request(method, path, json=json,
                                       version=self.version, status='*')
        operation = self.paths[self._template(path.split('?')[0])][
            method.lower()]
        response = operation['responses'].get(str(resp.status_int))
        if response is None:
            assert resp.status_int >= 400, (method, path, resp.status)
            jsonschema.validate(resp.json, self.error)
        elif 'content' in response:
            jsonschema.validate(resp.json, response['content'][
                'application/json']['schema'])
        else:
            assert not resp.body, (method, path, resp.status)
        self.checked.append((method, path, resp.status_int))
        return resp


def _session(call, version):
    """A realistic life cycle of the whole API at ``version``."""
    at_least = lambda v: version >= microversion.as_tuple(v)  # noqa: E731
    call('GET', '/')
    root = str(uuidlib.uuid4())
    call('POST', '/resource_providers', {'name': 'cn1', 'uuid': root})
    call('GET', '/resource_providers')
    call('GET', '/resource_providers?name=cn1')
    call('GET', '/resource_providers/' + root)
    call('PUT', '/resource_providers/' + root, {'name': 'cn1-renamed'})
    call('POST', '/resource_providers/%s/inventories' % root,
         {'resource_class': 'VCPU', 'total': 8})
    call('GET', '/resource_providers/%s/inventories' % root)
    call('GET', '/resource_providers/%s/inventories/VCPU' % root)
    call('PUT', '/resource_providers/%s/inventories/VCPU' % root,
         {'total': 16, 'resource_provider_generation': 1})
    inventories = call('PUT', '/resource_providers/%s/inventories' % root, {
        'resource_provider_generation': 2,
        'inventories': {'VCPU': {'total': 16},
                        'MEMORY_MB': {'total': 4096}}}).json
    generation = inventories['resource_provider_generation']
    call('GET', '/resource_providers/%s/usages' % root)
    call('GET', '/resource_providers/%s/allocations' % root)
    call('GET', '/resource_providers/nonexistent')
    consumer = str(uuidlib.uuid4())
    if at_least('1.28'):
        body = {'allocations': {root: {'resources': {'VCPU': 2}}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'}
    elif at_least('1.12'):
        body = {'allocations': {root: {'resources': {'VCPU': 2}}},
                'project_id': 'p', 'user_id': 'u'}
    else:
        body = {'allocations': [{'resource_provider': {'uuid': root},
                                 'resources': {'VCPU': 2}}]}
    call('PUT', '/allocations/' + consumer, body)
    call('PUT', '/allocations/' + consumer, {'allocations': 'bad'})
    call('GET', '/allocations/' + consumer)
    if at_least('1.28'):
        call('PATCH', '/allocations/' + consumer, {
            'allocations': {root: {'resources': {'MEMORY_MB': 512}}},
            'consumer_generation': 1})
    call('GET', '/resource_providers/%s/allocations' % root)
    call('GET', '/resource_providers/%s/usages' % root)
    if at_least('1.1'):
        aggregate = str(uuidlib.uuid4())
        call('PUT', '/resource_providers/%s/aggregates' % root,
             {'aggregates': [aggregate],
              'resource_provider_generation': generation}
             if at_least('1.19') else [aggregate])
        call('GET', '/resource_providers/%s/aggregates' % root)
    if at_least('1.2'):
        call('POST', '/resource_classes', {'name': 'CUSTOM_GOLD'})
        call('GET', '/resource_classes')
        call('GET', '/resource_classes/CUSTOM_GOLD')
        call('PUT', '/resource_classes/CUSTOM_SILVER',
             None if at_least('1.7') else {'name': 'CUSTOM_SILVER'})
        call('DELETE', '/resource_classes/CUSTOM_GOLD')
    if at_least('1.6'):
        call('PUT', '/traits/CUSTOM_FAST')
        call('GET', '/traits')
        call('GET', '/traits/CUSTOM_FAST')
        generation = call('GET', '/resource_providers/' + root).json[
            'generation']
        call('PUT', '/resource_providers/%s/traits' % root,
             {'traits': ['CUSTOM_FAST'],
              'resource_provider_generation': generation})
        call('GET', '/resource_providers/%s/traits' % root)
    if at_least('1.9'):
        call('GET', '/usages?project_id=p')
    if at_least('1.10'):
        call('GET', '/allocation_candidates?resources=VCPU:1')
        call('GET', '/allocation_candidates?resources=VCPU:1000')
    if at_least('1.13'):
        call('POST', '/allocations', {consumer: {
            'allocations': {}, 'project_id': 'p', 'user_id': 'u',
            **({'consumer_generation': 1} if at_least('1.28') else {})}})
    call('DELETE', '/allocations/' + consumer)
    if at_least('1.6'):
        call('DELETE', '/resource_providers/%s/traits' % root)
    if at_least('1.5'):
        call('DELETE', '/resource_providers/%s/inventories' % root)
    else:
        call('DELETE', '/resource_providers/%s/inventories/VCPU' % root)
    call('DELETE', '/resource_providers/' + root)


@pytest.mark.parametrize('version', ['1.0', '1.20', '1.39'])
def test_every_answer_matches_the_document(client, document, version):
    call = CheckedClient(client, document, version)
    _session(call, microversion.as_tuple(version))
    statuses = {status for _, _, status in call.checked}
    assert 400 in statuses and 404 in statuses
    assert any(200 <= status < 300 for status in statuses)
