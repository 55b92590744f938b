"""An operator's existing upstream configuration loads unchanged.

The placement.conf below is written the way upstream's install guide and
deployment tools write one (every group upstream reads, keystonemiddleware
included), with a policy.yaml overriding several rules.  The service must
load both, build its application, and read the values where upstream does.
"""

import gc
import importlib
import logging
import os
import re
import subprocess
import sys

from oslo_config import cfg
import pytest
import webtest

from placement import app as placement_app
from placement import config_loader
from placement import policy
from placement import wsgi
from placement.state import snapshot
from placement.cmd import api as api_cmd
from placement.storage import engine

UPSTREAM_CONF = """\
[DEFAULT]
debug = True
log_dir = {tmp}/log
log_file = placement-api.log
use_stderr = False
state_path = {tmp}/state
tempdir = {tmp}/tmp
default_log_levels = amqp=WARN,sqlalchemy=WARN,keystonemiddleware=INFO

[api]
auth_strategy = {auth_strategy}

[placement_database]
connection = {connection}
connection_recycle_time = 600
max_pool_size = 7
max_overflow = 13
max_retries = -1
retry_interval = 5
pool_timeout = 20
connection_debug = 0
sync_on_startup = True

[placement]
randomize_allocation_candidates = True
incomplete_consumer_project_id = 11111111-2222-3333-4444-555555555555
incomplete_consumer_user_id = 66666666-7777-8888-9999-000000000000
allocation_conflict_retry_count = 3
max_allocation_candidates = 1000
allocation_candidates_generation_strategy = breadth-first

[oslo_policy]
policy_file = {tmp}/policy.yaml
enforce_scope = True
enforce_new_defaults = True

[cors]
allowed_origin = https://dashboard.example.test
allow_credentials = True

[oslo_middleware]
enable_proxy_headers_parsing = True

[keystone_authtoken]
www_authenticate_uri = https://keystone.example.invalid:5000/
auth_url = https://keystone.example.invalid:5000/
memcached_servers = 127.0.0.1:11211
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = placement
password = placement-secret
service_token_roles_required = True
region_name = RegionOne

[workarounds]
optimize_for_wide_provider_trees = True
"""

UPSTREAM_POLICY = """\
# Operators' overrides, in upstream's rule names.
"admin_api": "role:admin"
"placement:resource_providers:list": "rule:admin_api or role:reader"
"placement:resource_providers:show": "rule:admin_api or role:reader"
"placement:traits:list": "role:admin or role:service or role:reader"
"placement:resource_classes:list": "@"
"""


@pytest.fixture
def keep_logging():
    """oslo.log reconfigures the root logger; put it back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logger.level
              for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    for name, old_level in levels.items():
        logging.getLogger(name).setLevel(old_level)


@pytest.fixture
def write_config(tmp_path, database_url):
    """Write the upstream-style files; returns the placement.conf path."""
    def write(auth_strategy='keystone'):
        (tmp_path / 'log').mkdir(exist_ok=True)
        (tmp_path / 'policy.yaml').write_text(UPSTREAM_POLICY)
        path = tmp_path / 'placement.conf'
        path.write_text(UPSTREAM_CONF.format(
            tmp=tmp_path, auth_strategy=auth_strategy,
            connection=database_url))
        return str(path)
    return write


def test_upstream_options_are_read(write_config, database_url, keep_logging):
    conf = config_loader.load(['--config-file', write_config()])
    assert conf.debug is True
    assert conf.api.auth_strategy == 'keystone'
    database = conf.placement_database
    assert database.connection == database_url
    assert (database.max_pool_size, database.max_overflow,
            database.pool_timeout, database.connection_recycle_time) == (
        7, 13, 20, 600)
    assert database.sync_on_startup is True
    assert conf.placement.allocation_conflict_retry_count == 3
    assert conf.placement.allocation_candidates_generation_strategy == (
        'breadth-first')
    assert conf.placement.incomplete_consumer_project_id == (
        '11111111-2222-3333-4444-555555555555')
    assert conf.oslo_policy.enforce_new_defaults is True
    assert conf.cors.allowed_origin == ['https://dashboard.example.test']
    assert conf.workarounds.optimize_for_wide_provider_trees is True


def test_logging_goes_where_configured(write_config, tmp_path, keep_logging):
    config_loader.load(['--config-file', write_config()])
    logging.getLogger('placement.test').warning('configured logging works')
    log_file = tmp_path / 'log' / 'placement-api.log'
    assert 'configured logging works' in log_file.read_text()


def test_option_values_are_logged_with_secrets_masked(
        write_config, tmp_path, database_url, keep_logging):
    config_loader.load(['--config-file', write_config()])
    logged = (tmp_path / 'log' / 'placement-api.log').read_text()
    assert re.search(r'placement\.allocation_conflict_retry_count += 3 ',
                     logged)
    assert re.search(r'placement_database\.connection += \*\*\*\* ', logged)
    assert database_url not in logged


def test_keystone_pipeline_builds_and_guards_the_api(write_config,
                                                     keep_logging):
    """keystonemiddleware is built from [keystone_authtoken] without any
    network traffic; it answers a token-less request by itself."""
    conf = config_loader.load(['--config-file', write_config()])
    app = webtest.TestApp(placement_app.build_app(conf))

    assert app.get('/').json['versions'][0]['max_version'] == '1.39'
    resp = app.get('/resource_providers', status=401)
    assert resp.headers['WWW-Authenticate'] == (
        'Keystone uri="https://keystone.example.invalid:5000/"')
    assert resp.headers['x-openstack-request-id'].startswith('req-')
    assert resp.headers['openstack-request-id'] == (
        resp.headers['x-openstack-request-id'])


def test_policy_overrides_from_the_policy_file(write_config, keep_logging):
    conf = config_loader.load(['--config-file', write_config()])
    enforcer = policy.build_enforcer(conf)
    assert str(enforcer.rules['placement:resource_providers:list']) == (
        '(rule:admin_api or role:reader)')
    assert str(enforcer.rules['placement:resource_classes:list']) == '@'
    # Rules not overridden keep their defaults.
    assert str(enforcer.rules['placement:traits:update']) == (
        'rule:admin_or_service_api')


def test_policy_overrides_decide_requests(write_config, keep_logging):
    conf = config_loader.load(['--config-file', write_config('noauth2')])
    app = webtest.TestApp(placement_app.build_app(conf))
    reader = {'X-Auth-Token': 'alice:proj1', 'X-Roles': 'reader',
              'OpenStack-API-Version': 'placement 1.39'}
    app.get('/resource_providers', headers=reader, status=200)
    app.post_json('/resource_providers', {'name': 'nope'}, headers=reader,
                  status=403)


# -- where the configuration comes from ----------------------------------------

def test_wsgi_config_file_from_placement_config_file(monkeypatch, tmp_path):
    monkeypatch.setenv(config_loader.CONFIG_FILE_ENV, '/srv/p.conf')
    monkeypatch.setenv(config_loader.CONFIG_DIR_ENV, str(tmp_path))
    assert config_loader.wsgi_config_files() == ['/srv/p.conf']


def test_wsgi_config_file_from_upstream_config_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(config_loader.CONFIG_FILE_ENV, raising=False)
    monkeypatch.setenv(config_loader.CONFIG_DIR_ENV, str(tmp_path))
    assert config_loader.wsgi_config_files() == [
        str(tmp_path / 'placement.conf')]
    monkeypatch.delenv(config_loader.CONFIG_DIR_ENV)
    assert config_loader.wsgi_config_files() is None


@pytest.mark.parametrize('variable', [config_loader.CONFIG_FILE_ENV,
                                      config_loader.CONFIG_DIR_ENV])
def test_a_wsgi_server_refuses_a_configuration_named_but_missing(
        monkeypatch, tmp_path, variable, keep_logging):
    """Not the embedded mode (no authentication) in its place."""
    monkeypatch.delenv(config_loader.CONFIG_FILE_ENV, raising=False)
    monkeypatch.delenv(config_loader.CONFIG_DIR_ENV, raising=False)
    named = {config_loader.CONFIG_FILE_ENV: tmp_path / 'placement.conf',
             config_loader.CONFIG_DIR_ENV: tmp_path}
    monkeypatch.setenv(variable, str(named[variable]))
    with pytest.raises(cfg.ConfigFilesNotFoundError):
        wsgi.init_application()


def _fresh_module(name):
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def test_every_wsgi_entry_point_serves_the_configured_service(
        monkeypatch, write_config, keep_logging):
    """``placement.wsgi.api:application`` (upstream's, which deployment
    tools load), ``placement.wsgi:application`` (the same object) and
    ``placement.wsgi:init_application()`` (a new one each call)."""
    monkeypatch.setenv(config_loader.CONFIG_FILE_ENV,
                       write_config('noauth2'))
    wsgi = _fresh_module('placement.wsgi')
    api = _fresh_module('placement.wsgi.api')
    assert wsgi.application is api.application
    fresh = wsgi.init_application()
    assert fresh is not api.application
    for application in (api.application, fresh):
        webtest.TestApp(application).get(
            '/resource_providers', headers={'X-Auth-Token': 'admin'})
    with pytest.raises(AttributeError):
        wsgi.no_such_thing


def test_no_configuration_means_embedded_mode(tmp_path, caplog):
    conf = config_loader.load([], default_config_files=[],
                              setup_logging=False)
    assert conf.api.auth_strategy == 'noauth2'
    assert conf.placement_database.connection is None
    assert 'running embedded' in caplog.text
    conf.set_override('state_path', str(tmp_path))
    app = webtest.TestApp(placement_app.build_app(conf))
    app.get('/resource_providers', headers={'X-Auth-Token': 'admin'})
    assert (tmp_path / 'placement.sqlite').exists()


def test_a_config_file_keeps_keystone_the_default(tmp_path):
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_database]\nconnection = sqlite://\n')
    conf = config_loader.load(['--config-file', str(path)],
                              setup_logging=False)
    assert conf.api.auth_strategy == 'keystone'


@pytest.mark.parametrize('text', [
    '[DEFAULT]\ndebug = True\n',
    '[placement_database]\nmax_pool_size = 7\n',
    # A misspelt section is no section at all.
    '[placement_databse]\nconnection = sqlite://\n',
])
def test_a_config_file_naming_no_database_is_refused(tmp_path, text):
    """As upstream refuses it (``RequiredOptError``), and never in favour
    of a private SQLite file: each API host behind a balancer would get a
    database of its own."""
    path = tmp_path / 'placement.conf'
    path.write_text(text)
    with pytest.raises(cfg.RequiredOptError) as raised:
        config_loader.load(['--config-file', str(path)],
                           setup_logging=False)
    message = str(raised.value)
    assert str(path) in message
    assert '[placement_database] connection' in message
    assert not (tmp_path / 'placement.sqlite').exists()


def test_a_wsgi_server_refuses_a_configuration_naming_no_database(
        monkeypatch, tmp_path, keep_logging):
    (tmp_path / 'placement.conf').write_text('[api]\nauth_strategy = '
                                             'noauth2\n')
    monkeypatch.delenv(config_loader.CONFIG_FILE_ENV, raising=False)
    monkeypatch.setenv(config_loader.CONFIG_DIR_ENV, str(tmp_path))
    with pytest.raises(engine.NoConnection, match='placement.conf'):
        wsgi.init_application()


@pytest.mark.parametrize('argv,status', [
    (['placement-api'], 1),
    (['placement-manage', 'db', 'sync'], 1),
    (['placement-status', 'upgrade', 'check'], 255),
])
def test_the_commands_refuse_a_configuration_naming_no_database(
        tmp_path, argv, status):
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_databse]\nconnection = sqlite://\n')
    found = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), argv[0]),
         '--config-file', str(path)] + argv[1:], capture_output=True,
        text=True, timeout=60, cwd=tmp_path)
    assert found.returncode == status, found
    assert 'No [placement_database] connection in %s' % path in (
        found.stdout + found.stderr)
    assert not list(tmp_path.glob('**/*.sqlite'))


def test_api_server_listens_on_loopback_by_default(tmp_path):
    conf = config_loader.load([], cli_opts=api_cmd.CLI_OPTS,
                              default_config_files=[], setup_logging=False)
    assert conf.bind == '127.0.0.1:8778'
    assert conf.workers == 1


def test_configurations_in_one_process_are_independent():
    """Defaults and overrides set on one ConfigOpts stay on it."""
    first, second = (config_loader.load([], default_config_files=[],
                                        setup_logging=False)
                     for _ in range(2))
    first.set_override('max_pool_size', 99, group='placement_database')
    first.set_default('auth_strategy', 'keystone', group='api')
    second.set_default('auth_strategy', 'noauth2', group='api')
    assert second.placement_database.max_pool_size == 5
    assert (first.api.auth_strategy, second.api.auth_strategy) == (
        'keystone', 'noauth2')


def test_a_worker_puts_what_it_loaded_beyond_the_collector(tmp_path):
    """The application and the candidate state read at start are frozen
    out of the cyclic collector's walks, and so is every later whole
    read of the state."""
    conf = config_loader.load([], cli_opts=api_cmd.CLI_OPTS,
                              default_config_files=[], setup_logging=False)
    conf.set_override('connection', 'sqlite:///%s' % (tmp_path / 'p.db'),
                      group='placement_database')
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('state_path', str(tmp_path))
    conf.set_override('sync_on_startup', True, group='placement_database')
    db = engine.Database.from_conf(conf)
    placement_app.prepare_database(conf, db)
    db.dispose()
    gc.unfreeze()
    try:
        api_cmd._Server(conf).load()
        assert gc.get_freeze_count() > 0
        states = snapshot._snapshots._objects.by_database.values()
        hooks = [state.after_large_read for state in states]
        assert snapshot.keep_out_of_gc in hooks
    finally:
        gc.unfreeze()


_STATE_PROCESS_IMPORTS = """\
import sys
from placement import config_loader
from placement import deferred_packages
from placement.cmd import state_process
conf = config_loader.load(sys.argv[1:] + ['--socket-name', 'unused'],
                          cli_opts=state_process.CLI_OPTS,
                          setup_logging=False, api=False)
# A package deferred (deferred_packages) is there, but not loaded.
loaded = {name.split('.')[0] for name, module in sys.modules.items()
          if not isinstance(module, deferred_packages._DeferredPackage)}
print(sorted(loaded & {'oslo_middleware', 'osprofiler'}),
      'profiler' in conf and conf.profiler.enabled)
"""


@pytest.mark.parametrize('profiler, expected', [
    ('', "[] False"),
    ('[profiler]\nenabled = True\nhmac_keys = secret\n',
     "['osprofiler'] True")])
def test_the_state_keeper_loads_only_what_it_reads(
        write_config, profiler, expected):
    """The state keeper answers no API request: with an upstream
    configuration ([cors], [oslo_middleware] and keystone included) it
    imports neither oslo.middleware nor osprofiler, 10 MB its readers
    would share, and osprofiler only where the files set ``[profiler]``,
    whose options it then reads as the API does."""
    path = write_config()
    with open(path, 'a') as handle:
        handle.write(profiler)
    result = subprocess.run(
        [sys.executable, '-c', _STATE_PROCESS_IMPORTS, '--config-file',
         path], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == expected
