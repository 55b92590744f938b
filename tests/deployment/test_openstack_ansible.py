"""openstack-ansible's os_placement role: its database tasks, run by
ansible.

The role's own ``tasks/placement_db_sync.yml`` (``placement-manage db
sync`` as ``placement_system_user_name``, through ``become``) and
``tasks/placement_db_post_setup.yml`` (facts refreshed, ``placement-manage
db online_data_migrations`` retried until its rc is 0 or 2, registered
as ``data_migrations``, when the local fact
``need_online_data_migrations`` says so and on the play's last host;
then the fact turned off with community.general's ``ini_file``), from a
checkout of the role named by ``$PLACEMENT_TEST_OSA_ROLE`` (no registry
publishes it), run by ansible-playbook (ansible-core 2.17 from its own
venv, ``ansible_venv``) against localhost in a confined host
(``confined.py``: its ``/etc`` holds the ``placement`` account, the
local facts file and ``/etc/placement/placement.conf``).

The playbook is the role's ``tasks/main.yml`` reduced to these two
steps, with the same conditions, and the role's own ``defaults/main.yml``
and ``vars/main.yml`` (``_placement_is_first_play_host``,
``_placement_is_last_play_host``, ``placement_services``) as its
variables; the inventory puts localhost in ``placement_api``; the
deployment's override is ``placement_bin``: the venv's ``bin``.  The
local fact file is what ``tasks/placement_install.yml`` leaves after an
install (``[placement] need_online_data_migrations = True``).

The same play runs with upstream openstack-placement 16.0.0's venv as
``placement_bin`` on a database of its own: every task's result and the
registered ``data_migrations.rc`` must be upstream's.
"""

import json
import os
import pathlib
import sys

import pytest

from tests.deployment import confined
from tests.deployment import sources
from tests.deployment.conftest import require_root

ROOT = pathlib.Path(__file__).parents[2]

PLAYBOOK = '''
- hosts: placement_api
  gather_facts: false
  vars_files:
    - %(role)s/defaults/main.yml
    - %(role)s/vars/main.yml
  tasks:
    - name: Importing placement_db_sync tasks
      ansible.builtin.import_tasks: %(role)s/tasks/placement_db_sync.yml
      when: _placement_is_first_play_host | bool
    - name: Including placement_db_post_setup tasks
      ansible.builtin.include_tasks: %(role)s/tasks/placement_db_post_setup.yml
      when:
        - _placement_is_last_play_host | bool
'''
INVENTORY = '''[placement_api]
localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3
'''
FACTS = '[placement]\nneed_online_data_migrations = True\n'


@pytest.fixture(scope='module')
def osa_role():
    return sources.checkout('PLACEMENT_TEST_OSA_ROLE',
                            "openstack-ansible's os_placement role")


def _play(role, ansible_venv, venv, url):
    """Run the play with ``venv``'s placement-manage on ``url``:
    {task name: result} from the json callback, the fact file after, the
    revision the database is at."""
    host = confined.Host(binds=[role, ansible_venv, venv,
                                *confined.venv_paths(ansible_venv),
                                *confined.venv_paths(venv), ROOT])
    try:
        conf = host.etc / 'placement' / 'placement.conf'
        conf.write_text('[placement_database]\nconnection = %s\n' % url)
        conf.chmod(0o640)
        os.chown(conf, 0, host.uid)
        facts = host.etc / 'ansible' / 'facts.d'
        facts.mkdir(parents=True, exist_ok=True)
        (facts / 'openstack_ansible.fact').write_text(FACTS)
        (host.files / 'playbook.yml').write_text(PLAYBOOK % {'role': role})
        (host.files / 'inventory').write_text(INVENTORY)
        status, output = host.run(
            [str(ansible_venv / 'bin' / 'ansible-playbook'),
             '-i', '/srv/test/inventory',
             '-e', 'placement_bin=%s/bin' % venv,
             '/srv/test/playbook.yml'],
            environment={'ANSIBLE_STDOUT_CALLBACK': 'ansible.posix.json',
                         'ANSIBLE_PIPELINING': 'True',
                         'ANSIBLE_NOCOLOR': '1',
                         'ANSIBLE_LOCAL_TEMP': '/tmp/ansible-local',
                         'ANSIBLE_REMOTE_TEMP': '/tmp/ansible-remote'})
        start = output.find('{')
        assert status == 0 and start >= 0, output[-4000:]
        report = json.loads(output[start:])
        results = {}
        for task in report['plays'][0]['tasks']:
            result = task['hosts'].get('localhost', {})
            results[task['task']['name']] = result
        fact = (facts / 'openstack_ansible.fact').read_text()
        status, version = host.run(
            ['%s/bin/placement-manage' % venv, 'db', 'version'])
        assert status == 0, version
        return results, fact, version.strip().splitlines()[-1]
    finally:
        host.remove()


def _summary(results):
    """Per task: skipped, changed, failed, rc."""
    return {name: (result.get('skipped', False), result.get('changed'),
                   result.get('failed', False), result.get('rc'))
            for name, result in results.items()}


def test_osa_db_tasks_succeed_as_upstream(osa_role, ansible_venv,
                                          deployment_postgres,
                                          upstream_venv):
    require_root()
    found = {}
    for name, venv in (('ours', pathlib.Path(sys.prefix)),
                       ('upstream', upstream_venv)):
        database = 'placement_osa_%s' % name
        deployment_postgres.create_database(database)
        try:
            found[name] = _play(osa_role, ansible_venv, venv,
                                deployment_postgres.url(database))
        finally:
            deployment_postgres.drop_database(database)
    results, fact, version = found['ours']
    assert results['Perform a Placement DB sync']['rc'] == 0, results
    migrations = results['Perform a Placement DB online migrations']
    assert migrations['rc'] == 0, migrations
    assert not migrations.get('attempts', 1) > 1, migrations
    assert 'need_online_data_migrations = False' in fact, fact
    assert version not in ('', 'None')
    assert _summary(results) == _summary(found['upstream'][0])
    assert found['upstream'][1] == fact
