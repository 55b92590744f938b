"""``openstack placement audit`` and ``openstack placement audit what
if`` (this package's ``osc`` extra, installed in the clients' venv)
against a live server: the rows are the API's findings, one for one, as
JSON and as a table with the counts first."""

import json
import uuid as uuidlib

import pytest

from tests.clients.test_openstack_cli import CLI
from tests.clients.test_openstack_cli import server  # noqa: F401
from tests.clients.test_openstack_cli_extensions import _provider
from tests.clients.test_openstack_cli_extensions import _run
from tests.functional.server import request

PROJECT = 'a1b2c3d4-0000-4000-8000-000000000001'


def _port(endpoint):
    return int(endpoint.rsplit(':', 1)[1])


@pytest.fixture(scope='module')
def troubled(server):  # noqa: F811
    """audit-a and audit-b hold a split server; audit-a is over capacity
    (3 VCPU used, capacity 2); audit-c's units fit no amount."""
    port = _port(server)
    a = _provider(server, 'audit-a', VCPU=8)
    b = _provider(server, 'audit-b', VCPU=8)
    c = _provider(server, 'audit-c')
    split = str(uuidlib.uuid4())
    status, body = request(port, 'POST', '/allocations', {split: {
        'allocations': {a: {'resources': {'VCPU': 3}},
                        b: {'resources': {'VCPU': 3}}},
        'project_id': PROJECT, 'user_id': PROJECT,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'}})
    assert status == 204, body
    for uuid, record in (
            (a, {'total': 8, 'allocation_ratio': 0.25}),
            (c, {'total': 8, 'min_unit': 4, 'max_unit': 2})):
        _, provider = request(port, 'GET', '/resource_providers/' + uuid)
        status, body = request(
            port, 'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': provider['generation'],
             'inventories': {'VCPU': record}})
        assert status == 200, body
    return {'a': a, 'b': b, 'c': c, 'split': split}


def test_audit_rows_are_the_findings(server, troubled):  # noqa: F811
    _, body = request(_port(server), 'GET', '/audit?project_id=' + PROJECT)
    rows = CLI(server)('placement audit', '--project', PROJECT)
    over, = body['over_capacity']
    split, = body['split_consumers']
    assert rows == [
        {'kind': 'over_capacity', 'subject': 'audit-a',
         'resource class': 'VCPU', 'numbers': 'used 3, capacity 2, over 1',
         'consumers': troubled['split'], 'reason': over['reason']},
        {'kind': 'split_consumers', 'subject': troubled['split'],
         'resource class': '', 'numbers': '2 trees',
         'consumers': troubled['split'], 'reason': split['reason']}]
    rows = CLI(server)('placement audit', '--kind', 'unusable_inventory',
                       '--in-tree', troubled['c'])
    assert rows == [{'kind': 'unusable_inventory', 'subject': 'audit-c',
                     'resource class': 'VCPU', 'numbers': '',
                     'consumers': '', 'reason': 'min_unit 4 > max_unit 2'}]


def test_audit_table_has_the_counts_first(server, troubled):  # noqa: F811
    code, out, err = _run(CLI(server), 'placement', 'audit', '--project',
                          PROJECT, '--kind', 'over_capacity')
    assert code == 0, err
    first, table = out.split('\n', 1)
    assert first == 'over_capacity 1'
    assert '| audit-a ' in table and 'used 3, capacity 2, over 1' in table


def test_what_if_rows_and_copies(server, troubled):  # noqa: F811
    code, out, err = _run(
        CLI(server), 'placement', 'audit', 'what', 'if', '--provider',
        troubled['b'], '--set', 'VCPU:allocation_ratio=0.25', '--set',
        'VCPU:reserved=1', '--resources', 'VCPU:1', '-f', 'json')
    assert code == 0, err
    assert json.loads(out) == [{
        'provider': 'audit-b', 'resource class': 'VCPU',
        'capacity before': 8, 'capacity after': 1, 'used': 3,
        'over after': 2, 'consumers': troubled['split'], 'refused': ''}]
    assert 'copies of VCPU:1 that fit: ' in err and err.strip().endswith(
        ', 0 after')


def test_what_if_errors(server, troubled):  # noqa: F811
    code, _, err = _run(CLI(server), 'placement', 'audit', 'what', 'if',
                        '--provider', troubled['b'], '--set', 'VCPU=1')
    assert code == 1 and 'is not CLASS:FIELD=VALUE' in err
    code, _, err = _run(CLI(server), 'placement', 'audit', 'what', 'if',
                        '--provider', troubled['b'], '--set',
                        'VCPU:reserved=9')
    assert code == 1 and 'The reserved value is greater than total' in err
