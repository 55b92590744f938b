"""Prove that this service serves a database upstream Placement wrote.

    .venv/bin/python tools/adopt_upstream_database.py \
        [--backend postgresql|mysql]

1. Installs upstream openstack-placement 16.0.0 into its own venv (the
   benchmarks' cached one; never a dependency of this project), starts a
   throwaway PostgreSQL or MariaDB, lets upstream's ``placement-manage db
   sync`` create the schema and fills it through upstream's API: custom
   resource classes and traits, a nested tree (compute node, two NUMA
   cells, a PF under each), a sharing storage provider in an aggregate,
   inventories, allocations of consumers of two types, and a migration
   consumer.
2. Reads everything back from upstream over HTTP.
3. Stops upstream, runs ``placement-status upgrade check`` (expects the
   "written by upstream" warning), our ``placement-manage db sync``
   (adopts it) and the check again (expects success).
4. Starts this service on the same database, reads everything back and
   compares: every answer must be identical.  Then writes (a new
   provider, an allocation, a trait change, a delete) must work.
5. The reverse: our ``placement-manage db stamp`` of upstream's revision
   (what README.rst says to run to go back), upstream's own ``db sync``
   (must exit 0), then upstream again on the database we adopted and
   wrote to: reads back (including our writes) and writes.
6. And back again: our ``db sync`` adopts it a second time and this
   service reads back what upstream last served.

Prints a report and exits 1 if any answer differed or any write failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))
sys.path.insert(0, REPO)

import harness  # noqa: E402
from tests import mariadb_server  # noqa: E402
from tests import pg_cluster  # noqa: E402
from tests.functional import server as server_client  # noqa: E402

VERSION = '1.39'
PROJECT = 'c0ffee00-0000-4000-8000-000000000001'
USER = 'c0ffee00-0000-4000-8000-000000000002'
AGG = 'a660a660-0000-4000-8000-000000000001'


def uid(n):
    return '00000000-0000-4000-8000-%012d' % n


CN, NUMA0, NUMA1, PF0, PF1, SHARED = (uid(n) for n in range(1, 7))
INSTANCE, INSTANCE2, MIGRATION, PORT = (uid(n) for n in range(11, 15))


class Client:

    def __init__(self, port):
        self.port = port

    def call(self, method, path, body=None, version=VERSION):
        return server_client.request(self.port, method, path, body, version)

    def ok(self, method, path, body=None, version=VERSION,
           expect=(200, 201, 204)):
        status, data = self.call(method, path, body, version)
        if status not in expect:
            raise RuntimeError('%s %s: %s %s' % (method, path, status, data))
        return data


def fill(client):
    """The deployment, written through upstream's API."""
    client.ok('PUT', '/resource_classes/CUSTOM_FPGA')
    client.ok('PUT', '/traits/CUSTOM_PHYSNET_A')
    tree = [(CN, 'cn1', None, {'DISK_GB': 1000},
             ['HW_CPU_X86_AVX2', 'COMPUTE_VOLUME_MULTI_ATTACH']),
            (NUMA0, 'cn1-numa0', CN, {'VCPU': 16, 'MEMORY_MB': 65536},
             ['HW_NUMA_ROOT']),
            (NUMA1, 'cn1-numa1', CN, {'VCPU': 16, 'MEMORY_MB': 65536,
                                      'CUSTOM_FPGA': 2}, ['HW_NUMA_ROOT']),
            (PF0, 'cn1-pf0', NUMA0, {'SRIOV_NET_VF': 8},
             ['CUSTOM_PHYSNET_A']),
            (PF1, 'cn1-pf1', NUMA1, {'SRIOV_NET_VF': 8}, []),
            (SHARED, 'storage', None, {'DISK_GB': 100000},
             ['MISC_SHARES_VIA_AGGREGATE'])]
    for uuid, name, parent, inventory, traits in tree:
        body = {'uuid': uuid, 'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        client.ok('POST', '/resource_providers', body)
        base = '/resource_providers/' + uuid
        generation = client.ok('GET', base)['generation']
        generation = client.ok('PUT', base + '/inventories', {
            'resource_provider_generation': generation,
            'inventories': {rc: {'total': total, 'allocation_ratio': 1.0}
                            for rc, total in inventory.items()}},
        )['resource_provider_generation']
        if traits:
            generation = client.ok('PUT', base + '/traits', {
                'resource_provider_generation': generation,
                'traits': traits})['resource_provider_generation']
        if uuid in (CN, SHARED):
            client.ok('PUT', base + '/aggregates', {
                'resource_provider_generation': generation,
                'aggregates': [AGG]})
    claims = [(INSTANCE, 'INSTANCE', {NUMA0: {'VCPU': 4, 'MEMORY_MB': 4096},
                                      PF0: {'SRIOV_NET_VF': 1},
                                      SHARED: {'DISK_GB': 40}}),
              (INSTANCE2, 'INSTANCE', {NUMA1: {'VCPU': 2, 'CUSTOM_FPGA': 1},
                                       CN: {'DISK_GB': 20}}),
              (MIGRATION, 'MIGRATION', {NUMA1: {'VCPU': 4,
                                                'MEMORY_MB': 2048}}),
              (PORT, 'PORT', {PF1: {'SRIOV_NET_VF': 2}})]
    for consumer, kind, allocations in claims:
        client.ok('PUT', '/allocations/' + consumer, {
            'allocations': {rp: {'resources': res}
                            for rp, res in allocations.items()},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': kind})


def snapshot(client, upstream_pg_usages_bug=False):
    """Every resource, as the API shows it."""
    found = {}

    def get(path, version=VERSION):
        found['%s @%s' % (path, version)] = client.call('GET', path,
                                                        version=version)

    get('/resource_providers')
    get('/resource_providers', '1.14')
    get('/resource_classes')
    get('/traits')
    get('/traits?associated=true')
    for uuid in (CN, NUMA0, NUMA1, PF0, PF1, SHARED):
        base = '/resource_providers/' + uuid
        for suffix in ('', '/inventories', '/traits', '/aggregates',
                       '/usages', '/allocations'):
            get(base + suffix)
    for consumer in (INSTANCE, INSTANCE2, MIGRATION, PORT):
        get('/allocations/' + consumer)
    get('/usages?project_id=' + PROJECT, '1.9')
    if not upstream_pg_usages_bug:
        get('/usages?project_id=' + PROJECT, '1.38')
    get('/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10')
    get('/allocation_candidates?resources1=VCPU:1&resources2=SRIOV_NET_VF:1'
        '&required2=CUSTOM_PHYSNET_A&group_policy=isolate')
    get('/resource_providers?in_tree=' + CN)
    get('/resource_providers?member_of=' + AGG)
    get('/resource_providers?resources=VCPU:8')
    return found


def _normalized(data):
    """Answers compare with every list as a set: the API promises no
    order (of providers, traits, candidates), and the two servers' orders
    differ."""
    if isinstance(data, dict):
        return {key: _normalized(value) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_normalized(item) for item in data)
    if isinstance(data, list):
        items = [_normalized(item) for item in data]
        return sorted(items, key=lambda item: json.dumps(item,
                                                         sort_keys=True))
    return data


def compare(label, expected, actual):
    problems = []
    for key in expected:
        if key not in actual:
            continue
        if _normalized(expected[key]) != _normalized(actual[key]):
            problems.append('%s: %s differs\n    before: %s\n    after:  %s'
                            % (label, key, json.dumps(expected[key])[:600],
                               json.dumps(actual[key])[:600]))
    return problems


def write(client, name):
    """Writes that must work on the adopted database."""
    rp = {'ours': uid(21), 'upstream': uid(31)}[name]
    consumer = {'ours': uid(22), 'upstream': uid(32)}[name]
    client.ok('POST', '/resource_providers', {'uuid': rp, 'name': name})
    client.ok('PUT', '/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 4}}})
    client.ok('PUT', '/allocations/' + consumer, {
        'allocations': {rp: {'resources': {'VCPU': 1}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    generation = client.ok('GET', '/resource_providers/' + PF1)['generation']
    client.ok('PUT', '/resource_providers/%s/traits' % PF1, {
        'resource_provider_generation': generation,
        'traits': ['CUSTOM_PHYSNET_A']})
    client.ok('DELETE', '/allocations/' + PORT, expect=(204, 404))
    client.ok('DELETE', '/allocations/' + consumer)
    client.ok('DELETE', '/resource_providers/' + rp)
    return ['%s: writes ok (provider, inventory, allocation, traits, '
            'deletes)' % name]


# Upstream 16.0.0's alembic head.
UPSTREAM_HEAD = 'a082b8bb98d0'


def run_tool(binary, conf, *args):
    proc = subprocess.run([binary, '--config-file', conf, *args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return proc.returncode, proc.stdout.strip()


def start(name, argv, env, directory):
    port = harness.free_port()
    argv = [part.replace('{port}', str(port)) for part in argv]
    return harness.Server(name, port, argv, env, directory)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--backend', choices=('postgresql', 'mysql'),
                        default='postgresql')
    args = parser.parse_args()
    venv = harness.ensure_upstream_venv()
    workdir = tempfile.mkdtemp(prefix='placement-adopt-')
    server = (pg_cluster.Cluster() if args.backend == 'postgresql'
              else mariadb_server.Server()).start()
    report, problems = [], []
    running = []
    try:
        server.create_database('placement')
        url = server.url('placement')
        # No migration at start: each side's schema is changed only by
        # the db sync commands this tool runs and reports.
        conf = harness.write_config(workdir, url, sync_on_startup=False)
        up_env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=workdir)
        up_env.pop('PYTHONPATH', None)
        up_bin = os.path.join(venv, 'bin')
        code, out = run_tool(os.path.join(up_bin, 'placement-manage'), conf,
                             'db', 'sync')
        report.append('upstream db sync: exit %d' % code)
        upstream_argv = [os.path.join(up_bin, 'gunicorn'), '--bind',
                         '127.0.0.1:{port}', '--workers', '1',
                         'placement.wsgi.api:application']
        ours_argv = [os.path.join(REPO, '.venv', 'bin', 'placement-api'),
                     '--config-file', conf, '--bind', '127.0.0.1:{port}',
                     '--workers', '1']
        bug = args.backend == 'postgresql'

        upstream = start('upstream', upstream_argv, up_env, workdir)
        running.append(upstream)
        fill(Client(upstream.port))
        before = snapshot(Client(upstream.port), bug)
        upstream.stop()
        running.remove(upstream)
        report.append('upstream filled the database: %d answers read back'
                      % len(before))

        ours_bin = os.path.join(REPO, '.venv', 'bin')
        for step in (('placement-status', 'upgrade', 'check'),
                     ('placement-manage', 'db', 'sync'),
                     ('placement-status', 'upgrade', 'check')):
            code, out = run_tool(os.path.join(ours_bin, step[0]), conf,
                                 *step[1:])
            report.append('ours %s: exit %d\n    %s'
                          % (' '.join(step), code,
                             out.replace('\n', '\n    ')))
        def read_back(label, expected):
            """This service started on the database: its answers,
            compared with ``expected`` and reported; the server."""
            ours = start('ours', ours_argv, dict(os.environ), workdir)
            running.append(ours)
            answers = snapshot(Client(ours.port), bug)
            found = compare(label + ' vs upstream', expected, answers)
            problems.extend(found)
            report.append('%s read back %d answers: %s'
                          % (label, len(answers), 'identical' if not found
                             else '%d differ' % len(found)))
            return ours

        ours = read_back('ours', before)
        try:
            report += write(Client(ours.port), 'ours')
        except RuntimeError as exc:
            problems.append('ours: write failed: %s' % exc)
        ours_view = snapshot(Client(ours.port), bug)
        ours.stop()
        running.remove(ours)

        for binary, step in (
                (ours_bin, ('db', 'stamp', UPSTREAM_HEAD)),
                (up_bin, ('db', 'sync'))):
            code, out = run_tool(os.path.join(binary, 'placement-manage'),
                                 conf, *step)
            who = 'ours' if binary == ours_bin else 'upstream'
            report.append('reverse: %s placement-manage %s: exit %d'
                          % (who, ' '.join(step), code))
            if code != 0:
                problems.append('reverse: %s %s failed: %s'
                                % (who, ' '.join(step), out[-300:]))
        upstream = start('upstream', upstream_argv, up_env, workdir)
        running.append(upstream)
        back = snapshot(Client(upstream.port), bug)
        found = compare('upstream on our database', ours_view, back)
        problems += found
        report.append('reverse: upstream read back %d answers from the '
                      'database we adopted and wrote to: %s'
                      % (len(back), 'identical' if not found
                         else '%d differ' % len(found)))
        try:
            report += write(Client(upstream.port), 'upstream')
        except RuntimeError as exc:
            problems.append('upstream on our database: write failed: %s'
                            % exc)
        upstream_view = snapshot(Client(upstream.port), bug)
        upstream.stop()
        running.remove(upstream)

        code, out = run_tool(os.path.join(ours_bin, 'placement-manage'),
                             conf, 'db', 'sync')
        report.append('again: ours db sync: exit %d' % code)
        if code != 0:
            problems.append('again: ours db sync failed: %s' % out[-300:])
        read_back('again: ours', upstream_view)
    finally:
        for process in running:
            process.stop()
        server.stop()
    print('Adopting an upstream database on %s:' % args.backend)
    for line in report:
        print('- ' + line)
    for line in problems:
        print('PROBLEM ' + line)
    print('result: %s' % ('OK' if not problems else 'FAILED'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
