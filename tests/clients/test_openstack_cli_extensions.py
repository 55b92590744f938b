"""``openstack allocation candidate explain`` and ``... capacity`` (this
package's ``osc`` extra, installed in the clients' venv) against a live
server: the summary and the funnel as a table, JSON on stdout with the
summary on stderr, and the service's 400 as the CLI's error."""

import json
import os
import subprocess

import pytest

from tests.clients.test_openstack_cli import CLI
from tests.clients.test_openstack_cli import server  # noqa: F401
from tests.functional.server import request

AGG = '3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a6b'


def _provider(endpoint, name, traits=(), aggregates=(), **inventory):
    port = int(endpoint.rsplit(':', 1)[1])
    status, body = request(port, 'POST', '/resource_providers',
                           {'name': name})
    assert status == 200, body
    uuid = body['uuid']
    status, body = request(
        port, 'PUT', '/resource_providers/%s/inventories' % uuid,
        {'resource_provider_generation': 0,
         'inventories': {rc: {'total': n} for rc, n in inventory.items()}})
    generation = body['resource_provider_generation']
    if traits:
        status, body = request(
            port, 'PUT', '/resource_providers/%s/traits' % uuid,
            {'resource_provider_generation': generation,
             'traits': list(traits)})
        generation = body['resource_provider_generation']
    if aggregates:
        request(port, 'PUT', '/resource_providers/%s/aggregates' % uuid,
                {'resource_provider_generation': generation,
                 'aggregates': list(aggregates)})
    return uuid


def _run(cli, *args):
    proc = subprocess.run(cli.base + list(args), capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope='module')
def deployment(server):  # noqa: F811
    return {
        'small': _provider(server, 'ext-small', ['HW_CPU_X86_AVX2'], [AGG],
                           VCPU=4, MEMORY_MB=4096),
        'plain': _provider(server, 'ext-plain', (), [AGG], VCPU=32,
                           MEMORY_MB=8192),
        'good': _provider(server, 'ext-good', ['HW_CPU_X86_AVX2'], [AGG],
                          VCPU=32, MEMORY_MB=8192),
    }


ASK = ['--resource', 'VCPU=8', '--resource', 'MEMORY_MB=2048',
       '--required', 'HW_CPU_X86_AVX2', '--member-of', AGG]


def test_explain_prints_the_summary_then_the_funnel(server, deployment):  # noqa: F811,E501
    code, out, err = _run(CLI(server), 'allocation', 'candidate', 'explain',
                          *ASK)
    assert code == 0, err
    first, table = out.split('\n', 1)
    assert first.startswith('1/') and 'cannot fit VCPU (need 8)' in first
    assert 'lack trait HW_CPU_X86_AVX2' in first
    assert '| constraint ' in table and '| capacity ' in table
    assert 'ext-small: VCPU: needs 8, free 4' in table


def test_explain_as_json_keeps_the_summary_off_stdout(server, deployment):  # noqa: F811,E501
    code, out, err = _run(CLI(server), 'allocation', 'candidate', 'explain',
                          *ASK, '-f', 'json')
    assert code == 0, err
    rows = json.loads(out)
    capacity = [r for r in rows if r['constraint'] == 'capacity'
                and r['asked'] == 'resource_class=VCPU amount=8']
    assert capacity[0]['providers removed'] == 1
    assert 'trees can satisfy the request' in err


def test_capacity_per_root(server, deployment):  # noqa: F811
    rows = CLI(server)('allocation candidate capacity', *ASK)
    copies = {r['provider']: r['copies'] for r in rows if r['kind'] == 'root'}
    assert copies[deployment['good']] == 4
    assert copies[deployment['small']] == 0
    assert copies[deployment['plain']] == 0
    assert all(r['exact'] for r in rows)


def test_the_service_errors_are_the_cli_errors(server):  # noqa: F811
    code, _, err = _run(CLI(server), 'allocation', 'candidate', 'capacity',
                        '--resource', 'VCPU=x')
    assert code == 1
    assert 'VCPU expected positive integer amount. Got: x.' in err


def test_commands_are_in_osc_placement_group(server):  # noqa: F811
    venv = os.environ['PLACEMENT_TEST_CLIENT_VENV']
    proc = subprocess.run(
        [os.path.join(venv, 'bin', 'openstack'), 'help', 'allocation',
         'candidate', 'capacity'], capture_output=True, text=True,
        timeout=120)
    assert proc.returncode == 0 and '--query' in proc.stdout
