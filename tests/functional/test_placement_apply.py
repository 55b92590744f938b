"""placement-apply against a live server: nova's provider.yaml as it is,
the extensions (nested providers, aggregates, selectors), re-applying
(no change), changing, pruning, dry runs, a concurrent writer, a failure
part way, and invalid files whose errors name the line and the field."""

import textwrap
import uuid as uuidlib

from keystoneauth1 import adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.token_endpoint import Token
import pytest

from placement.apply import client as placement_client
from placement.apply import document
from placement.apply import plan as plans
from placement.apply import runner
from placement.cmd import apply as apply_cmd
from tests.functional.server import request
from tests.functional.server import running

AGGREGATE = 'a1b2c3d4-0000-4000-8000-000000000001'

NOVA_FILE = '''\
meta:
  schema_version: '1.0'
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        - CUSTOM_LLC:
            total: 100
            reserved: 0
            min_unit: 1
            max_unit: 10
            step_size: 1
            allocation_ratio: 1.0
    traits:
      additional:
        - CUSTOM_FOO
'''

EXTENDED_FILE = '''\
meta:
  schema_version: '1.1'
providers:
  - identification:
      name: cn1
    aggregates:
      additional: [%(aggregate)s]
    traits:
      additional: [CUSTOM_RACK_A]
  - identification:
      name: cn1-numa0
    parent:
      name: cn1
    inventories:
      additional:
        - VCPU: {total: 16}
        - MEMORY_MB: {total: 65536, reserved: 512}
    traits:
      additional: [HW_NUMA_ROOT]
  - identification:
      name: cn1-numa0-pf0
    parent:
      name: cn1-numa0
    inventories:
      additional:
        - NET_BW_EGR_KILOBIT_PER_SEC: {total: 10000000}
selectors:
  - match:
      aggregate: %(aggregate)s
    allocation_ratios:
      VCPU: 4.0
    traits:
      additional: [CUSTOM_GOLD]
'''


@pytest.fixture
def server(database_url, tmp_path):
    with running(database_url, tmp_path) as port:
        status, _ = request(port, 'POST', '/resource_providers',
                            {'name': 'cn1'})
        assert status == 200
        yield port


def _run(port, path, *extra, capsys=None):
    code = apply_cmd.main([
        str(path), '--os-auth-type', 'admin_token',
        '--os-endpoint', 'http://127.0.0.1:%d' % port,
        '--os-token', 'admin', *extra])
    return code, capsys.readouterr() if capsys else None


def _provider(port, name):
    _, body = request(port, 'GET', '/resource_providers?name=' + name)
    [provider] = body['resource_providers']
    base = '/resource_providers/' + provider['uuid']
    return {
        'provider': provider,
        'inventories': request(port, 'GET', base + '/inventories')[1][
            'inventories'],
        'traits': set(request(port, 'GET', base + '/traits')[1]['traits']),
        'aggregates': request(port, 'GET', base + '/aggregates')[1][
            'aggregates'],
    }


def test_a_nova_provider_file_as_it_is(server, tmp_path, capsys):
    path = tmp_path / 'provider.yaml'
    path.write_text(NOVA_FILE)
    code, out = _run(server, path, '--compute-node', 'cn1', capsys=capsys)
    assert code == 0, out
    assert '~ provider cn1' in out.out
    assert '+ inventory CUSTOM_LLC' in out.out
    assert '+ traits CUSTOM_FOO' in out.out
    cn1 = _provider(server, 'cn1')
    assert cn1['inventories']['CUSTOM_LLC']['total'] == 100
    assert cn1['inventories']['CUSTOM_LLC']['max_unit'] == 10
    assert cn1['traits'] == {'CUSTOM_FOO'}
    # Again: nothing to do, nothing written.
    generation = cn1['provider']['generation']
    code, out = _run(server, path, '--compute-node', 'cn1', capsys=capsys)
    assert (code, out.out.strip()) == (0, 'No changes.')
    assert _provider(server, 'cn1')['provider']['generation'] == generation


def test_compute_node_needs_naming(server, tmp_path, capsys):
    path = tmp_path / 'provider.yaml'
    path.write_text(NOVA_FILE)
    code, out = _run(server, path, capsys=capsys)
    assert code == 2
    assert '$COMPUTE_NODE needs --compute-node' in out.err


def _extended(tmp_path):
    path = tmp_path / 'tree.yaml'
    path.write_text(EXTENDED_FILE % {'aggregate': AGGREGATE})
    return path


def test_nested_providers_aggregates_and_selectors(server, tmp_path, capsys):
    path = _extended(tmp_path)
    code, out = _run(server, path, '--dry-run', capsys=capsys)
    assert code == 0
    assert '+ provider cn1-numa0 (new, parent cn1)' in out.out
    assert '+ provider cn1-numa0-pf0 (new, parent cn1-numa0)' in out.out
    assert 'Dry run: nothing written.' in out.out
    assert not (tmp_path / 'tree.yaml.state').exists()
    _, body = request(server, 'GET', '/resource_providers')
    assert [p['name'] for p in body['resource_providers']] == ['cn1']

    code, out = _run(server, path, capsys=capsys)
    assert code == 0, out
    cn1, numa, pf = (_provider(server, name) for name in (
        'cn1', 'cn1-numa0', 'cn1-numa0-pf0'))
    assert numa['provider']['parent_provider_uuid'] == cn1['provider'][
        'uuid']
    assert pf['provider']['parent_provider_uuid'] == numa['provider']['uuid']
    assert cn1['aggregates'] == [AGGREGATE]
    # The selector matched cn1 (in the aggregate), whose traits it adds.
    assert cn1['traits'] == {'CUSTOM_RACK_A', 'CUSTOM_GOLD'}
    assert numa['inventories']['MEMORY_MB']['reserved'] == 512
    assert numa['traits'] == {'HW_NUMA_ROOT'}
    assert pf['inventories']['NET_BW_EGR_KILOBIT_PER_SEC']['total'] == (
        10000000)
    code, out = _run(server, path, capsys=capsys)
    assert (code, out.out.strip()) == (0, 'No changes.')


def test_selector_sets_allocation_ratios(server, tmp_path, capsys):
    path = _extended(tmp_path)
    assert _run(server, path, capsys=capsys)[0] == 0
    # Put numa0 in the aggregate: the selector now reaches its VCPU.
    numa = _provider(server, 'cn1-numa0')
    request(server, 'PUT', '/resource_providers/%s/aggregates'
            % numa['provider']['uuid'], {
                'aggregates': [AGGREGATE],
                'resource_provider_generation': numa['provider'][
                    'generation']})
    code, out = _run(server, path, capsys=capsys)
    assert code == 0
    assert '~ inventory VCPU allocation_ratio 1.0 -> 4.0' in out.out
    numa = _provider(server, 'cn1-numa0')
    assert numa['inventories']['VCPU']['allocation_ratio'] == 4.0
    assert numa['inventories']['MEMORY_MB']['allocation_ratio'] == 1.0


def test_change_then_prune(server, tmp_path, capsys):
    path = _extended(tmp_path)
    assert _run(server, path, capsys=capsys)[0] == 0
    text = path.read_text()
    # A change: more VCPU. A removal: the PF and the rack trait go.
    text = text.replace('VCPU: {total: 16}', 'VCPU: {total: 32}')
    text = text.replace('additional: [CUSTOM_RACK_A]', 'additional: []')
    text = text[:text.index('  - identification:\n      name: '
                            'cn1-numa0-pf0')] + text[text.index('selectors:'):]
    path.write_text(text)
    code, out = _run(server, path, capsys=capsys)
    assert code == 0
    assert '~ inventory VCPU total 16 -> 32' in out.out
    assert '- provider' not in out.out and '- traits' not in out.out
    assert _provider(server, 'cn1-numa0-pf0')
    code, out = _run(server, path, '--prune', capsys=capsys)
    assert code == 0, out
    assert '- traits CUSTOM_RACK_A' in out.out
    assert '- provider cn1-numa0-pf0' in out.out
    _, body = request(server, 'GET', '/resource_providers?name=cn1-numa0-pf0')
    assert body['resource_providers'] == []
    assert _provider(server, 'cn1')['traits'] == {'CUSTOM_GOLD'}
    assert _provider(server, 'cn1-numa0')['inventories']['VCPU'][
        'total'] == 32
    code, out = _run(server, path, '--prune', capsys=capsys)
    assert (code, out.out.strip()) == (0, 'No changes.')


def _client(port):
    session = ks_session.Session(auth=Token(
        'http://127.0.0.1:%d' % port, 'admin'))
    return placement_client.Placement(adapter.Adapter(
        session, service_type='placement'))


def test_a_concurrent_writer_is_retried_not_overwritten(server, tmp_path):
    data = document.load(_extended(tmp_path).read_text())
    client = _client(server)
    plan = plans.make(data, client)
    # Another writer changes cn1 between the read and the write.
    cn1 = _provider(server, 'cn1')
    request(server, 'PUT', '/traits/CUSTOM_OTHER')
    status, _ = request(
        server, 'PUT', '/resource_providers/%s/traits'
        % cn1['provider']['uuid'], {
            'traits': ['CUSTOM_OTHER'],
            'resource_provider_generation': cn1['provider']['generation']})
    assert status == 200
    report, _ = runner.apply(client, plan, progress=None)
    assert not report.failed, report.text()
    assert _provider(server, 'cn1')['traits'] == {
        'CUSTOM_OTHER', 'CUSTOM_RACK_A', 'CUSTOM_GOLD'}


def test_a_failure_part_way_is_reported(server, tmp_path, capsys):
    path = tmp_path / 'bad.yaml'
    path.write_text(textwrap.dedent('''\
        meta: {schema_version: '1.1'}
        providers:
          - identification: {name: top}
          - identification: {name: child}
            parent: {name: top}
            inventories:
              additional:
                - VCPU: {total: 4, reserved: 8}
          - identification: {name: grandchild}
            parent: {name: child}
        '''))
    code, out = _run(server, path, capsys=capsys)
    assert code == 1
    assert 'Applied: 1 provider(s).' in out.out
    assert 'FAILED: child:' in out.out and '400' in out.out
    assert 'Not attempted (1): grandchild' in out.out


@pytest.mark.parametrize('text, problem', [
    ("meta: {schema_version: '1.0'}\nproviders:\n  - identification:\n"
     "      name: x\n    inventories:\n      additional:\n"
     "        - VCPU: {total: -1}\n",
     ':7: providers[0].inventories.additional[0].VCPU.total: -1 is less '
     'than the minimum of 0'),
    ("meta: {schema_version: '1.0'}\nproviders:\n  - identification:\n"
     "      name: x\n    colour: blue\n",
     ':3: providers[0]: Additional properties are not allowed'),
    ("meta: {schema_version: '9.9'}\n", ':1: meta.schema_version:'),
    ("meta: {schema_version: '1.0'}\nproviders: [\n", ':3: not YAML'),
    ("meta: {schema_version: '1.0'}\nproviders:\n  - identification:\n"
     "      name: x\n  - identification:\n      name: x\n",
     ':5: providers[1].identification: x is named twice'),
    ("meta: {schema_version: '1.0'}\nproviders:\n  - identification:\n"
     "      uuid: not-a-uuid\n", ':4: providers[0].identification.uuid:'),
])
def test_invalid_files_name_the_line_and_field(tmp_path, capsys, text,
                                               problem):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    code = apply_cmd.main([str(path), '--os-auth-type', 'admin_token',
                           '--os-endpoint', 'http://127.0.0.1:9',
                           '--os-token', 'admin'])
    assert code == 2
    err = capsys.readouterr().err
    assert '%s%s' % (path, problem) in err, err


def test_new_provider_with_a_uuid(server, tmp_path, capsys):
    uuid = str(uuidlib.uuid4())
    path = tmp_path / 'one.yaml'
    path.write_text("meta: {schema_version: '1.1'}\nproviders:\n"
                    "  - identification: {uuid: %s, name: gpu0}\n"
                    "    parent: {name: cn1}\n" % uuid)
    assert _run(server, path, capsys=capsys)[0] == 0
    assert _provider(server, 'gpu0')['provider']['uuid'] == uuid


def test_a_new_inventory_needs_a_total(server, tmp_path, capsys):
    path = tmp_path / 'partial.yaml'
    path.write_text("meta: {schema_version: '1.1'}\nproviders:\n"
                    "  - identification: {name: cn1}\n"
                    "    inventories:\n      additional:\n"
                    "        - VCPU: {reserved: 1}\n")
    code, out = _run(server, path, capsys=capsys)
    assert code == 2
    assert 'provider cn1 has no VCPU inventory yet: a new one needs a ' \
        'total' in out.err
    assert _provider(server, 'cn1')['inventories'] == {}


RATIO_FILE = '''\
meta:
  schema_version: '1.0'
providers:
  - identification:
      name: cn1
    inventories:
      additional:
        - VCPU: {total: 8, allocation_ratio: 0.5}
'''


def test_dry_run_says_what_the_inventory_changes_would_do(server, tmp_path,
                                                          capsys):
    _, cn1 = request(server, 'GET', '/resource_providers?name=cn1')
    uuid = cn1['resource_providers'][0]['uuid']
    request(server, 'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': 8}}})
    consumer = 'c0a8f1e2-0000-4000-8000-000000000001'
    status, _ = request(server, 'PUT', '/allocations/' + consumer, {
        'allocations': {uuid: {'resources': {'VCPU': 6}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert status == 204
    path = tmp_path / 'ratio.yaml'
    path.write_text(RATIO_FILE)
    code, out = _run(server, path, '--dry-run', capsys=capsys)
    assert code == 0, out
    _, what_if = request(server, 'POST', '/audit/what_if', {
        'inventories': {uuid: {'VCPU': {'allocation_ratio': 0.5}}}})
    assert what_if['providers'][0]['over_after'] == 2
    assert out.out.endswith(
        'What the inventory changes would do:\n'
        '    cn1 VCPU: capacity 8 -> 4, 6 used; OVER CAPACITY by 2, held '
        'by %s\n'
        '1 class(es) would be over capacity.\n'
        'Dry run: nothing written.\n' % consumer)
    _, inventory = request(server, 'GET', '/resource_providers/%s/'
                           'inventories' % uuid)
    assert inventory['inventories']['VCPU']['allocation_ratio'] == 1.0
