"""kolla's lifecycle of placement, by kolla's and kolla-ansible's files.

kolla-ansible 22.2.0 deploys placement as: the bootstrap container
(``tasks/bootstrap_service.yml``: ``KOLLA_BOOTSTRAP``, which runs ``db
sync`` and ``db online_data_migrations``), then the ``placement_api``
container (no ``KOLLA_*`` variable: ``kolla_start`` ``exec``'s the
command of ``config.json``, uwsgi on kolla-ansible's ini); an upgrade
(``tasks/upgrade.yml``) stops and replaces the API, runs the bootstrap
container again and then ``KOLLA_OSM`` (online data migrations after the
upgrade), and placement-api's ``extend_start.sh`` also answers
``KOLLA_UPGRADE`` (``db sync`` alone, the branch other services'
rolling upgrades use).  Each container here is kolla's image's own
scripts in a private namespace (``kolla.py``), on kolla-ansible's
rendered configuration (``kolla_ansible.py``), against MariaDB through
``mysql+pymysql`` as kolla configures it.

The same sequence runs with upstream openstack-placement 16.0.0 in the
image's venv instead, on a database of its own: every container must
exit as upstream's does.
"""

import sys
import uuid

from tests.deployment import kolla
from tests.functional.server import request

PROJECT = str(uuid.uuid4())
USER = str(uuid.uuid4())


def _commands(output):
    """What extend_start.sh ran: the placement-manage lines of xtrace."""
    return [command for command in kolla.xtrace_commands(output)
            if command.startswith('placement-manage')]


def _write(port):
    """A provider with inventory and a consumer's allocation on it."""
    provider = str(uuid.uuid4())
    consumer = str(uuid.uuid4())
    status, body = request(port, 'POST', '/resource_providers',
                           {'uuid': provider, 'name': 'kolla-%s' % provider})
    assert status == 200, body
    status, body = request(
        port, 'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}})
    assert status == 200, body
    status, body = request(port, 'PUT', '/allocations/%s' % consumer, {
        'allocations': {
            provider: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert status == 204, body
    return provider, consumer


def _read(port, provider, consumer):
    return {
        'usages': request(port, 'GET',
                          '/resource_providers/%s/usages' % provider),
        'allocations': request(port, 'GET', '/allocations/%s' % consumer),
        'candidates': request(port, 'GET',
                              '/allocation_candidates?resources=VCPU:6'),
    }


def _lifecycle(deployment):
    """kolla-ansible's sequence; [(step, exit status)] and what the API
    answered before and after the upgrade."""
    steps = []
    status, output = deployment.run(KOLLA_BOOTSTRAP='')
    steps.append(('bootstrap', status, _commands(output)))
    with deployment.api() as container:
        provider, consumer = _write(deployment.port)
        before = _read(deployment.port, provider, consumer)
    steps.append(('api stopped', container.exit_status, []))
    api_output = container.output.read_text()
    for variable in ('KOLLA_UPGRADE', 'KOLLA_BOOTSTRAP', 'KOLLA_OSM'):
        status, output = deployment.run(**{variable: ''})
        steps.append((variable, status, _commands(output)))
    with deployment.api():
        after = _read(deployment.port, provider, consumer)
    return steps, before, after, api_output


def test_kolla_lifecycle_exits_as_upstream(kolla_image, deployment_mariadb,
                                           workdir, upstream_venv):
    ours = kolla.Deployment(kolla_image, deployment_mariadb, workdir / 'ours',
                            database='placement_kolla_ours')
    # kolla-ansible's database options, as its template sets them, are
    # what the service runs with.
    conf = (ours.config / 'placement.conf').read_text()
    for line in ('max_retries = -1', 'max_pool_size = 1',
                 'max_overflow = 1000', 'connection_recycle_time = 10',
                 'connection = mysql+pymysql://placement:'):
        assert line in conf, conf
    steps, before, after, api_output = _lifecycle(ours)
    assert steps == [
        ('bootstrap', 0, ['placement-manage db sync',
                          'placement-manage db online_data_migrations']),
        ('api stopped', 0, []),
        ('KOLLA_UPGRADE', 0, ['placement-manage db sync']),
        ('KOLLA_BOOTSTRAP', 0, ['placement-manage db sync',
                                'placement-manage db online_data_migrations']),
        ('KOLLA_OSM', 0, ['placement-manage db online_data_migrations']),
    ], steps
    assert before['usages'] == (200, {
        'resource_provider_generation': 2,
        'usages': {'VCPU': 2, 'MEMORY_MB': 512}})
    assert before['candidates'][0] == 200
    assert len(before['candidates'][1]['allocation_requests']) == 1
    assert after == before
    # start.sh exec'd config.json's command; uwsgi ran kolla-ansible's
    # ini: as placement, its log where logto2 says, stopped gracefully
    # by docker stop's SIGTERM.
    assert "Running command: 'uwsgi /etc/placement/placement-api-uwsgi.ini'" \
        in api_output, api_output
    assert 'setuid() to %d' % kolla_image.users['placement'] in api_output
    uwsgi_log = ours.log('placement-api-uwsgi.log')
    assert uwsgi_log.count('spawned uWSGI worker') == 4, uwsgi_log
    assert uwsgi_log.count('goodbye to uWSGI') == 2, uwsgi_log
    # oslo.log's file from kolla's placement.conf got the request log.
    assert 'GET /allocation_candidates' in ours.log('placement-api.log')

    upstream = kolla.Deployment(kolla_image, deployment_mariadb,
                                workdir / 'upstream',
                                database='placement_kolla_upstream',
                                venv=upstream_venv)
    upstream_steps, upstream_before, upstream_after, _ = _lifecycle(upstream)
    assert [step[:2] for step in steps] == \
        [step[:2] for step in upstream_steps]
    assert upstream_before['usages'] == before['usages']
    assert upstream_after['usages'] == after['usages']


def test_kolla_bootstrap_fails_as_upstream_without_its_database(
        kolla_image, deployment_mariadb, workdir, upstream_venv):
    """The bootstrap container when the database refuses kolla's user
    (its grant revoked): ``db sync`` fails with 1 and start.sh's errexit
    ends the container there, before online_data_migrations, with that
    status, for upstream and for this service alike."""
    found = {}
    for name, venv in (('ours', sys.prefix), ('upstream', upstream_venv)):
        deployment = kolla.Deployment(
            kolla_image, deployment_mariadb, workdir / name,
            database='placement_kolla_refused_%s' % name, venv=venv)
        deployment_mariadb.execute(
            "REVOKE ALL PRIVILEGES ON placement_kolla_refused_%s.* "
            "FROM 'placement'@'%%'" % name)
        status, output = deployment.run(KOLLA_BOOTSTRAP='')
        found[name] = (status, _commands(output))
    assert found['ours'] == found['upstream'], found
    assert found['ours'] == (1, ['placement-manage db sync'])
