"""puppet-placement's deployment: ``puppet apply`` of Debian's modules.

The manifest is a site's declaration of the module's classes, the way a
deployment using puppet-placement declares them:
``placement::db`` (the ``[placement_database] connection``),
``placement::config`` (one option: ``[api] auth_strategy = noauth2``,
as there is no keystone), ``placement::db::sync`` (its exec runs
``placement-manage db sync`` as ``placement`` when the configuration
changes) and ``placement::wsgi::apache`` (Apache with mod_wsgi serving
the WSGI script the module copies into ``/usr/lib/cgi-bin/placement``),
plus ``postgresql::globals`` naming bookworm's PostgreSQL and its
``python3-psycopg2`` (the module predates bookworm; ``oslo::db`` wants
the driver's package, installed beforehand), ``apache::mod::wsgi``
naming Debian's Python 3 mod_wsgi package (the module's default is the
Python 2 one bookworm lacks), the ``apache`` class told not to manage
the service (there is no init system in the confined host; the test
starts Apache as ``apache2ctl`` does) and no default vhost.  See ``puppet.py`` for the
confined host.
"""

import glob
import os
import pathlib
import shutil
import uuid

import pytest

from tests import wsgi_servers
from tests.deployment import puppet
from tests.deployment import sources
from tests.deployment.conftest import require_root
from tests.functional import server as functional_server
from tests.functional.server import request

MANIFEST = '''
class { 'postgresql::globals':
  version             => '%(pg_version)s',
  python_package_name => 'python3-psycopg2',
}
class { 'apache':
  default_vhost  => false,
  service_manage => false,
}
class { 'apache::mod::wsgi':
  package_name => 'libapache2-mod-wsgi-py3',
  mod_path     => 'mod_wsgi.so',
}
class { 'placement::db':
  database_connection => '%(url)s',
}
class { 'placement::config':
  placement_config => {
    'api/auth_strategy' => { 'value' => 'noauth2' },
  },
}
include placement::db::sync
class { 'placement::wsgi::apache':
  servername                  => 'localhost',
  bind_host                   => '127.0.0.1',
  port                        => %(port)d,
  workers                     => 2,
  threads                     => 1,
  ssl                         => false,
  custom_wsgi_process_options => { 'python-home' => '%(venv)s' },
}
'''


@pytest.fixture(scope='module')
def service_venv():
    """This project in a venv of Debian's Python, for mod_wsgi; built
    once for the module."""
    sources.puppet_modules()
    if not shutil.which('apache2ctl') and not shutil.which(
            '/usr/sbin/apache2ctl'):
        sources.unavailable('Apache is not installed')
    if not glob.glob('/usr/lib/apache2/modules/mod_wsgi.so*'):
        sources.unavailable("Debian's mod_wsgi is not installed (apt-get "
                            'install libapache2-mod-wsgi-py3)')
    directory = wsgi_servers.readable_directory('placement-puppet-venv-')
    try:
        yield puppet.service_venv(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _daemon_uids(process_group):
    """The uids of the processes in ``process_group``."""
    uids = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != process_group:
                continue
            with open('/proc/%s/status' % entry) as handle:
                for line in handle:
                    if line.startswith('Uid:'):
                        uids.add(int(line.split()[1]))
        except OSError:
            continue
    return uids


def test_puppet_apply_syncs_and_apache_serves_the_copied_script(
        service_venv, deployment_postgres):
    require_root()
    database = 'placement_puppet'
    deployment_postgres.create_database(database)
    host = puppet.Host(service_venv)
    port = functional_server.free_port()
    manifest = MANIFEST % {
        'url': deployment_postgres.url(database), 'port': port,
        'venv': service_venv,
        'pg_version': pathlib.Path(deployment_postgres.bindir).parent.name}
    try:
        status, output = host.apply(manifest)
        # 2: changes made, none failed (--detailed-exitcodes).  The
        # configuration changed, so the db sync exec ran, and succeeded
        # (a failure is an Error line and status 4 or 6).
        assert status == 2, output
        assert ("Exec[placement-manage-db-sync]: Triggered 'refresh'"
                in output), output
        assert 'Error' not in output, output
        status, version = host.run(['placement-manage', 'db', 'version'])
        assert status == 0, version
        assert version.strip().splitlines()[-1] not in ('', 'None'), version
        # Applied again: nothing to change, no db sync.
        status, output = host.apply(manifest)
        assert status == 0, output
        assert 'placement-manage-db-sync' not in output, output

        # What openstacklib::wsgi::apache made of params.pp's values.
        script = host.upper('/usr/lib/cgi-bin') / 'placement' / \
            'placement-api'
        assert script.read_bytes() == \
            puppet.api_script(service_venv).read_bytes()
        vhost = (host.etc / 'apache2' / 'sites-available' /
                 '10-placement_wsgi.conf').read_text()
        assert ('WSGIScriptAlias / "/usr/lib/cgi-bin/placement/'
                'placement-api"') in vhost, vhost
        assert 'WSGIDaemonProcess placement-api' in vhost, vhost

        with host.apache(port) as apache:
            status, body = request(port, 'GET', '/')
            assert status == 200, body
            assert body['versions'][0]['max_version'] == '1.39'
            provider = str(uuid.uuid4())
            status, body = request(port, 'POST', '/resource_providers',
                                   {'uuid': provider, 'name': 'puppet'})
            assert status == 200, body
            status, body = request(
                port, 'PUT', '/resource_providers/%s/inventories' % provider,
                {'resource_provider_generation': 0,
                 'inventories': {'DISK_GB': {'total': 100}}})
            assert status == 200, body
            status, body = request(
                port, 'GET', '/allocation_candidates?resources=DISK_GB:10')
            assert status == 200, body
            assert list(body['provider_summaries']) == [provider]
            # mod_wsgi's daemons run as placement (WSGIDaemonProcess
            # user=placement), Apache's children as www-data.
            assert host.uid in _daemon_uids(apache.pid)
    finally:
        host.remove()
        deployment_postgres.drop_database(database)
