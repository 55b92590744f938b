"""The ``openstack`` CLI with osc-placement, and openstacksdk's placement
proxy, drive a live server (two workers, noauth2, the admin-token form)
through every command and call they offer.  A failure names the command.

Each runs against ``placement-api`` (SQLite) and against every server
deployment tools run the application under (``tests/wsgi_servers.py``:
kolla-ansible's uwsgi, uwsgi and gunicorn loading it before they fork,
mod_wsgi), on PostgreSQL.
"""

import json
import os
import subprocess
import uuid

import pytest

from tests import wsgi_servers
from tests.functional.server import running

VENV = os.environ.get('PLACEMENT_TEST_CLIENT_VENV', '')
AGG = '5c3d2e1f-0a9b-4c8d-9e7f-6a5b4c3d2e1f'
PROJECT = '8c0ffee0-0000-4000-8000-00000000abcd'
USER = '8c0ffee0-0000-4000-8000-00000000dcba'


@pytest.fixture(scope='module',
                params=('placement-api',) + wsgi_servers.KINDS)
def server(request, tmp_path_factory):
    kind = request.param
    if kind == 'placement-api':
        directory = tmp_path_factory.mktemp('clients')
        url = 'sqlite:///%s' % (directory / 'placement.sqlite')
        with running(url, directory,
                     database_options='sync_on_startup = True\n') as port:
            yield 'http://127.0.0.1:%d' % port
        return
    with request.getfixturevalue('serve_wsgi')(kind) as (port, _log):
        yield 'http://127.0.0.1:%d' % port


class CLI:
    """``openstack ... -f json`` with the admin-token form noauth2 takes."""

    def __init__(self, endpoint, version='1.39'):
        self.base = [os.path.join(VENV, 'bin', 'openstack'),
                     '--os-auth-type', 'admin_token',
                     '--os-endpoint', endpoint, '--os-token', 'admin',
                     '--os-placement-api-version', version]

    def __call__(self, *args, output=True):
        argv = list(args) + (['-f', 'json'] if output else [])
        proc = subprocess.run(self.base + argv, capture_output=True,
                              text=True, timeout=120)
        command = 'openstack ' + ' '.join(args)
        assert proc.returncode == 0, '%s failed (exit %d): %s' % (
            command, proc.returncode, proc.stderr.strip()[-800:])
        if not output or not proc.stdout.strip():
            return None
        return json.loads(proc.stdout)


def test_every_osc_placement_command(server):
    cli = CLI(server)
    # Resource classes.
    cli('resource class create', 'CUSTOM_BAREMETAL_GOLD', output=False)
    assert cli('resource class show', 'CUSTOM_BAREMETAL_GOLD')['name'] == \
        'CUSTOM_BAREMETAL_GOLD'
    cli('resource class set', 'CUSTOM_SPARE', output=False)
    names = {rc['name'] for rc in cli('resource class list')}
    assert {'VCPU', 'CUSTOM_BAREMETAL_GOLD', 'CUSTOM_SPARE'} <= names
    cli('resource class delete', 'CUSTOM_SPARE', output=False)
    # Traits.
    cli('trait create', 'CUSTOM_HW_FOO', output=False)
    assert cli('trait show', 'CUSTOM_HW_FOO')['name'] == 'CUSTOM_HW_FOO'
    assert [t['name'] for t in cli('trait list', '--name',
                                   'startswith:CUSTOM_')] == ['CUSTOM_HW_FOO']
    # Providers: a tree.
    cn = cli('resource provider create', 'cn1')['uuid']
    numa = cli('resource provider create', 'cn1-numa0',
               '--parent-provider', cn)['uuid']
    assert cli('resource provider show', numa)['root_provider_uuid'] == cn
    cli('resource provider set', cn, '--name', 'compute-1')
    assert [p['uuid'] for p in cli('resource provider list', '--in-tree',
                                   cn)] == [cn, numa]
    assert cli('resource provider list', '--name',
               'compute-1')[0]['uuid'] == cn
    # Inventories.
    cli('resource provider inventory set', cn, '--resource', 'VCPU=16',
        '--resource', 'VCPU:allocation_ratio=4.0',
        '--resource', 'MEMORY_MB=65536', '--resource', 'DISK_GB=200')
    inventory = {row['resource_class']: row for row in
                 cli('resource provider inventory list', cn)}
    assert inventory['VCPU']['total'] == 16
    assert inventory['VCPU']['allocation_ratio'] == 4.0
    assert cli('resource provider inventory show', cn,
               'MEMORY_MB')['total'] == 65536
    # A single class's inventory: changed in place (the command PUTs to an
    # existing class, as upstream requires), added, deleted.
    assert cli('resource provider inventory class set', cn, 'DISK_GB',
               '--total', '300', '--reserved', '10')['total'] == 300
    cli('resource provider inventory set', cn, '--amend',
        '--resource', 'CUSTOM_BAREMETAL_GOLD=1')
    cli('resource provider inventory delete', cn, '--resource-class',
        'CUSTOM_BAREMETAL_GOLD', output=False)
    assert 'CUSTOM_BAREMETAL_GOLD' not in {
        row['resource_class']
        for row in cli('resource provider inventory list', cn)}
    cli('resource provider inventory set', numa, '--resource', 'VCPU=8',
        '--amend', '--resource', 'MEMORY_MB=4096')
    # Aggregates, and inventory set in batch over an aggregate.
    generation = cli('resource provider show', cn)['generation']
    cli('resource provider aggregate set', cn, '--aggregate', AGG,
        '--generation', str(generation))
    numa_generation = cli('resource provider show', numa)['generation']
    cli('resource provider aggregate set', numa, '--aggregate', AGG,
        '--generation', str(numa_generation))
    assert [a['uuid'] for a in cli('resource provider aggregate list',
                                   cn)] == [AGG]
    cli('resource provider inventory set', AGG, '--aggregate', '--amend',
        '--resource', 'SRIOV_NET_VF=4')
    for rp in (cn, numa):
        assert cli('resource provider inventory show', rp,
                   'SRIOV_NET_VF')['total'] == 4
    assert {p['uuid'] for p in cli('resource provider list', '--member-of',
                                   AGG)} == {cn, numa}
    # Provider traits.
    cli('resource provider trait set', cn, '--trait', 'HW_CPU_X86_AVX2',
        '--trait', 'CUSTOM_HW_FOO')
    assert {t['name'] for t in cli('resource provider trait list', cn)} == {
        'HW_CPU_X86_AVX2', 'CUSTOM_HW_FOO'}
    assert [p['uuid'] for p in cli('resource provider list', '--required',
                                   'HW_CPU_X86_AVX2')] == [cn]
    # Allocation candidates, plain and granular.
    candidates = cli('allocation candidate list', '--resource', 'VCPU=2',
                     '--resource', 'MEMORY_MB=1024', '--limit', '5')
    assert candidates and all('allocation' in c for c in candidates)
    granular = cli('allocation candidate list', '--group', '1',
                   '--resource', 'VCPU=1', '--group', '2', '--resource',
                   'SRIOV_NET_VF=1', '--group-policy', 'isolate')
    assert granular
    # Allocations.
    consumer = str(uuid.uuid4())
    cli('resource provider allocation set', consumer,
        '--allocation', 'rp=%s,VCPU=2,MEMORY_MB=1024' % cn,
        '--allocation', 'rp=%s,SRIOV_NET_VF=1' % numa,
        '--project-id', PROJECT, '--user-id', USER,
        '--consumer-type', 'INSTANCE')
    held = {row['resource_provider']: row['resources']
            for row in cli('resource provider allocation show', consumer)}
    assert held == {cn: {'VCPU': 2, 'MEMORY_MB': 1024},
                    numa: {'SRIOV_NET_VF': 1}}
    assert cli('resource provider show', cn, '--allocations')[
        'allocations'][consumer]['resources'] == {'VCPU': 2,
                                                  'MEMORY_MB': 1024}
    usage = {row['resource_class']: row['usage'] for row in
             cli('resource provider usage show', cn)}
    assert usage['VCPU'] == 2
    # Project usage, by consumer type from 1.38, flat before.
    by_type = {row['resource_class']: row['usage'] for row in
               cli('resource usage show', PROJECT)}
    assert by_type == {'INSTANCE': {'VCPU': 2, 'MEMORY_MB': 1024,
                                    'SRIOV_NET_VF': 1, 'consumer_count': 1}}
    flat = {row['resource_class']: row['usage'] for row in
            CLI(server, '1.9')('resource usage show', PROJECT)}
    assert flat == {'VCPU': 2, 'MEMORY_MB': 1024, 'SRIOV_NET_VF': 1}
    cli('resource provider allocation unset', consumer, '--provider', numa)
    held = {row['resource_provider'] for row in
            cli('resource provider allocation show', consumer)}
    assert held == {cn}
    cli('resource provider allocation delete', consumer, output=False)
    assert cli('resource provider allocation show', consumer) == []
    # Clean up what depends on what.
    cli('resource provider trait delete', cn, output=False)
    cli('resource provider delete', numa, output=False)
    cli('resource provider delete', cn, output=False)
    cli('trait delete', 'CUSTOM_HW_FOO', output=False)
    cli('resource class delete', 'CUSTOM_BAREMETAL_GOLD', output=False)
    assert cli('resource provider list') == []


SDK_CALLS = [
    'create_resource_provider', 'get_resource_provider',
    'find_resource_provider', 'update_resource_provider',
    'resource_providers', 'create_resource_class', 'get_resource_class',
    'resource_classes', 'create_resource_provider_inventory',
    'get_resource_provider_inventory', 'update_resource_provider_inventory',
    'resource_provider_inventories', 'set_resource_provider_aggregates',
    'get_resource_provider_aggregates', 'create_trait', 'get_trait',
    'traits', 'delete_trait', 'delete_resource_provider_inventory',
    'delete_resource_class', 'delete_resource_provider']

SDK_SCRIPT = r'''
import json, sys, uuid
import openstack
endpoint = sys.argv[1]
conn = openstack.connect(auth_type='admin_token',
                         auth={'endpoint': endpoint, 'token': 'admin'},
                         placement_endpoint_override=endpoint,
                         placement_api_version='1.39')
p = conn.placement
done = []
def step(name, value=None):
    done.append(name)
    return value
rp = step('create_resource_provider',
          p.create_resource_provider(name='sdk-rp'))
step('get_resource_provider', p.get_resource_provider(rp.id))
step('find_resource_provider', p.find_resource_provider('sdk-rp'))
rp = step('update_resource_provider',
          p.update_resource_provider(rp, name='sdk-rp-2'))
assert [r.name for r in p.resource_providers()] == ['sdk-rp-2']
step('resource_providers')
rc = step('create_resource_class',
          p.create_resource_class(name='CUSTOM_SDK_THING'))
step('get_resource_class', p.get_resource_class('CUSTOM_SDK_THING'))
assert 'CUSTOM_SDK_THING' in [c.name for c in p.resource_classes()]
step('resource_classes')
inv = step('create_resource_provider_inventory',
           p.create_resource_provider_inventory(
               rp, resource_class='VCPU', total=8))
rp = p.get_resource_provider(rp.id)
step('get_resource_provider_inventory',
     p.get_resource_provider_inventory(inv, resource_provider=rp))
inv = step('update_resource_provider_inventory',
           p.update_resource_provider_inventory(
               inv, resource_provider=rp, total=16,
               resource_provider_generation=rp.generation))
assert [(i.resource_class, i.total) for i in
        p.resource_provider_inventories(rp)] == [('VCPU', 16)]
step('resource_provider_inventories')
rp = p.get_resource_provider(rp.id)
step('set_resource_provider_aggregates',
     p.set_resource_provider_aggregates(
         rp, '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e'))
assert list(p.get_resource_provider_aggregates(rp).aggregates) == [
    '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e']
step('get_resource_provider_aggregates')
t = step('create_trait', p.create_trait('CUSTOM_SDK_TRAIT'))
step('get_trait', p.get_trait('CUSTOM_SDK_TRAIT'))
assert 'CUSTOM_SDK_TRAIT' in [x.name for x in p.traits()]
step('traits')
step('delete_trait', p.delete_trait('CUSTOM_SDK_TRAIT'))
rp = p.get_resource_provider(rp.id)
step('delete_resource_provider_inventory',
     p.delete_resource_provider_inventory(inv, resource_provider=rp))
step('delete_resource_class', p.delete_resource_class(rc))
step('delete_resource_provider', p.delete_resource_provider(rp))
assert list(p.resource_providers()) == []
print(json.dumps(done))
'''


def test_every_openstacksdk_placement_call(server):
    proc = subprocess.run(
        [os.path.join(VENV, 'bin', 'python'), '-c', SDK_SCRIPT, server],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    done = json.loads(proc.stdout.strip().splitlines()[-1])
    assert done == SDK_CALLS
