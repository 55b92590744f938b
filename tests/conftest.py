"""Fixtures shared by every test: a database per test on each backend.

Every test that takes ``db`` (or ``app``/``client``) runs on SQLite, on a
real PostgreSQL and on a real MariaDB, each started for the session.  Each
test gets a fresh, migrated and synced database cloned from a template
made once per backend, so tests are independent and fast.  ``--backend
sqlite`` (or postgresql, mysql; repeatable) runs only those.
"""

import collections
import os
import shutil
import uuid

# Every answer of the state crosses the wire format, in this process and
# in the servers the tests start (``state.questions``).
os.environ['PLACEMENT_TEST_CROSS_THE_WIRE'] = '1'

import pytest
import sqlalchemy as sa
import webtest

from placement import app as placement_app
from placement import conf as placement_conf
from placement.state import answer_store
from placement.state import questions
from placement.storage import engine
from placement.storage import migration
from placement.storage import standard_sync
from placement.storage import tables
from tests import installed
from tests import mariadb_server
from tests import pg_cluster
from tests import wsgi_servers

BACKENDS = ('sqlite', 'postgresql', 'mysql')
questions.CROSS_THE_WIRE = True

def pytest_addoption(parser):
    parser.addoption('--backend', choices=BACKENDS, action='append',
                     help='Only run database tests on this backend.')


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'backends(*names): run only on these database backends')


def pytest_terminal_summary(terminalreporter):
    """One line naming the servers whose tests were skipped for want of
    them, and the command that installs them."""
    missing = collections.Counter()
    for report in terminalreporter.stats.get('skipped', ()):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
            else str(report.longrepr)
        for server in installed.SERVERS:
            if reason.startswith('Skipped: %s%s ' % (installed.MISSING,
                                                     server)):
                missing[server] += 1
    if missing:
        packages = ' '.join(installed.SERVERS[server] for server in missing)
        terminalreporter.write_line(
            'Skipped for want of %s; to run them too (as root): apt-get '
            'install -y %s' % (', '.join(
                '%s (%d tests)' % item for item in missing.items()),
                packages))


def pytest_generate_tests(metafunc):
    if 'backend' in metafunc.fixturenames:
        chosen = metafunc.config.getoption('backend') or BACKENDS
        marker = metafunc.definition.get_closest_marker('backends')
        if marker is not None:
            chosen = [name for name in chosen if name in marker.args]
        metafunc.parametrize('backend', chosen, scope='session')


@pytest.fixture(scope='session')
def postgres():
    cluster = pg_cluster.Cluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope='session')
def mod_wsgi_env():
    """The venv mod_wsgi's daemons run (``wsgi_servers.mod_wsgi_venv``),
    built once per session, or a skip where Apache's development files
    are missing; ``.ci/run`` installs them, and under CI a missing one
    is a failure."""
    directory = wsgi_servers.readable_directory('placement-mod-wsgi-')
    try:
        yield installed.require('Apache and Debian Python',
                      lambda: wsgi_servers.mod_wsgi_venv(directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope='session')
def serve_wsgi(request):
    """``serve_wsgi(kind)``: ``wsgi_servers.serving_on_postgres`` for
    ``kind`` on the session's PostgreSQL, given mod_wsgi's venv when
    ``kind`` needs it (built only then); ``extra_config``: more sections
    of its ``placement.conf``."""
    def serve(kind, extra_config=''):
        python_env = (request.getfixturevalue('mod_wsgi_env')
                      if kind == 'mod_wsgi' else None)
        return wsgi_servers.serving_on_postgres(
            kind, request.getfixturevalue('postgres'), python_env,
            extra_config)
    return serve


@pytest.fixture(scope='session')
def mariadb():
    installed.require('MariaDB', mariadb_server.installed)
    server = mariadb_server.Server().start()
    yield server
    server.stop()


class MariaDBTemplate:
    """MariaDB has no template databases: a clone replays the template's
    own DDL (SHOW CREATE TABLE keeps the foreign keys, which CREATE TABLE
    ... LIKE would drop), copies its rows and then makes its triggers."""

    def __init__(self, server, name):
        self.server = server
        self.name = name
        names = [table.name for table in tables.metadata.sorted_tables]
        names.append('alembic_version')
        self.tables = names
        self.ddl = [server.execute('SHOW CREATE TABLE %s.%s'
                                   % (name, table))[0][1]
                    for table in names]
        # Made after the rows are copied, which they would log.
        self.triggers = [
            server.execute('SHOW CREATE TRIGGER %s.%s' % (name, row[0]))[0][2]
            for row in server.execute('SHOW TRIGGERS FROM %s' % name)]

    def clone(self, target):
        self.server.create_database(target)
        self.server.execute(
            'SET foreign_key_checks = 0', *self.ddl,
            *['INSERT INTO %s SELECT * FROM %s.%s' % (table, self.name, table)
              for table in self.tables],
            *self.triggers,
            database=target)


@pytest.fixture(scope='session')
def template(backend, request, tmp_path_factory):
    """A migrated, synced database to clone: a file path, a PG name or a
    MariaDBTemplate."""
    if backend == 'sqlite':
        path = tmp_path_factory.mktemp('template') / 'template.sqlite'
        url = 'sqlite:///%s' % path
    elif backend == 'mysql':
        server = request.getfixturevalue('mariadb')
        server.create_database('template_placement')
        url = server.url('template_placement')
    else:
        cluster = request.getfixturevalue('postgres')
        cluster.create_database('template_placement')
        url = cluster.url('template_placement')
        path = 'template_placement'
    db = engine.Database(engine.create_engine(url))
    migration.upgrade(db.engine)
    db.write(standard_sync.sync_all)
    db.dispose()
    if backend == 'mysql':
        return MariaDBTemplate(server, 'template_placement')
    return path


@pytest.fixture
def database_url(backend, template, request, tmp_path):
    if backend == 'sqlite':
        target = tmp_path / 'placement.sqlite'
        shutil.copy(template, target)
        yield 'sqlite:///%s' % target
        return
    if backend == 'mysql':
        name = 'test_%s' % uuid.uuid4().hex
        template.clone(name)
        yield template.server.url(name)
        template.server.execute('DROP DATABASE IF EXISTS %s' % name)
        return
    cluster = request.getfixturevalue('postgres')
    name = 'test_%s' % uuid.uuid4().hex
    cluster.create_database(name, template)
    yield cluster.url(name)
    cluster.drop_database(name)


@pytest.fixture
def conf(tmp_path):
    """Configuration as the service would load it with an empty file."""
    config = placement_conf.new_config()
    config([], project='placement', default_config_files=[])
    config.set_override('auth_strategy', 'noauth2', group='api')
    config.set_override('state_path', str(tmp_path))
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('{}\n')
    config.set_override('policy_file', str(policy_file), group='oslo_policy')
    yield config
    config.reset()


@pytest.fixture
def db(conf, database_url):
    conf.set_override('connection', database_url,
                      group='placement_database')
    database = engine.Database.from_conf(conf)
    yield database
    database.dispose()


@pytest.fixture
def config_file(tmp_path, database_url):
    """A placement.conf naming the test's database (and a policy file
    that need not exist), as the commands read it."""
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_database]\nconnection = %s\n'
                    '[oslo_policy]\npolicy_file = %s\n'
                    % (database_url, tmp_path / 'commands-policy.yaml'))
    return str(path)


@pytest.fixture
def one_connection(database_url):
    """A Database on a pool of one connection, so that every transaction
    meets the session the one before it used."""
    database = engine.Database(engine.create_engine(
        database_url, pool_size=1, max_overflow=0))
    yield database
    database.dispose()


@pytest.fixture
def foreign(database_url):
    """An engine on the test's database that is not this service's (plain
    SQLAlchemy): its writes are what SQL run by hand would be."""
    foreign_engine = sa.create_engine(database_url)
    yield foreign_engine
    foreign_engine.dispose()


@pytest.fixture
def app(conf, db):
    return webtest.TestApp(placement_app.build_app(conf, db, prepare=False))


class Client:
    """A webtest app with Placement defaults: admin token, a microversion.

    ``client.get('/resource_providers', version='1.14')`` etc.; every call
    takes ``status=`` (defaults to webtest's 2xx/3xx check), ``headers=``
    and, for writes, ``json=`` for a JSON body.
    """

    def __init__(self, testapp, token='admin', version='1.39'):
        self.app = testapp
        self.token = token
        self.version = version

    def _headers(self, version, headers):
        result = {'X-Auth-Token': self.token, 'Accept': 'application/json'}
        version = version or self.version
        if version is not None:
            result['OpenStack-API-Version'] = 'placement %s' % version
        result.update(headers or {})
        return result

    def request(self, method, url, json=None, version=None, headers=None,
                status=None, **kwargs):
        headers = self._headers(version, headers)
        if json is not None:
            return getattr(self.app, '%s_json' % method.lower())(
                url, json, headers=headers, status=status, **kwargs)
        return getattr(self.app, method.lower())(
            url, headers=headers, status=status, **kwargs)

    def get(self, url, **kwargs):
        return self.request('GET', url, **kwargs)

    def post(self, url, **kwargs):
        return self.request('POST', url, **kwargs)

    def put(self, url, **kwargs):
        return self.request('PUT', url, **kwargs)

    def delete(self, url, **kwargs):
        return self.request('DELETE', url, **kwargs)


@pytest.fixture
def client(app):
    return Client(app)


def pytest_sessionfinish(session):
    """Remove the stores of kept answers the servers the tests started
    left behind (a worker killed removes nothing): memory until
    removed."""
    if os.path.isdir(answer_store.DIRECTORY):
        answer_store.remove_unused(answer_store.DIRECTORY)
