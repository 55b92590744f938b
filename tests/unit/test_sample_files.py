"""The checked-in sample files are what the generators make from the code.

etc/placement/placement.conf.sample and policy.yaml.sample are generated
by oslo-config-generator and oslopolicy-sample-generator; when an option
or a policy rule changes, regenerate them with ``tox -e genconfig`` and
``tox -e genpolicy`` (the commands are in tox.ini).
"""

import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ETC = ROOT / 'etc' / 'placement'
BIN = pathlib.Path(sys.executable).parent


def generate(tool, generator_conf, output):
    subprocess.run(
        [str(BIN / tool), '--config-file', str(ETC / generator_conf),
         '--output-file', str(output)],
        cwd=ROOT, check=True, capture_output=True, text=True)
    return output.read_text()


@pytest.mark.parametrize('tool, generator_conf, sample, tox_env', [
    ('oslo-config-generator', 'config-generator.conf',
     'placement.conf.sample', 'genconfig'),
    ('oslopolicy-sample-generator', 'policy-generator.conf',
     'policy.yaml.sample', 'genpolicy'),
])
def test_sample_is_up_to_date(tmp_path, tool, generator_conf, sample,
                              tox_env):
    fresh = generate(tool, generator_conf, tmp_path / sample)
    assert fresh == (ETC / sample).read_text(), (
        '%s is stale: run "tox -e %s"' % (sample, tox_env))


def test_config_sample_documents_every_group_upstream_reads():
    text = (ETC / 'placement.conf.sample').read_text()
    for group in ('DEFAULT', 'api', 'placement_database', 'placement',
                  'oslo_policy', 'cors', 'keystone_authtoken',
                  'oslo_middleware', 'workarounds'):
        assert '\n[%s]\n' % group in '\n' + text
    assert '#auth_strategy = keystone\n' in text
    assert '#sync_on_startup = false\n' in text


def test_policy_generator_renders_the_effective_policy():
    """oslopolicy-policy-generator loads our enforcer (entry point
    placement.policy:get_enforcer) and prints every rule in force."""
    proc = subprocess.run(
        [str(BIN / 'oslopolicy-policy-generator'), '--namespace',
         'placement'],
        cwd=ROOT, check=True, capture_output=True, text=True)
    rules = yaml.safe_load(proc.stdout)
    assert rules['placement:resource_providers:list'] == (
        'rule:admin_or_service_api')
    assert rules['admin_api'] == 'role:admin'
