"""setup.cfg lists every package, so that a real (non-editable) install
has all of the service: a missing one only shows once installed."""

import ast
import configparser
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).parents[2]


def test_every_package_is_listed():
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    listed = set(config['options']['packages'].split())
    found = {'.'.join(path.parent.relative_to(ROOT).parts)
             for path in (ROOT / 'placement').rglob('__init__.py')}
    assert found <= listed, sorted(found - listed)


TEST_TOOLS = ('fixtures', 'wsgi-intercept', 'testtools', 'oslotest')


def test_test_tools_are_an_extra_only():
    """Installing the service must not pull in test tools; the fixtures
    other projects import come with the ``fixtures`` extra."""
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    options = config['options']
    required = {re.split(r'[<>=\s]', line)[0]
                for line in options['install_requires'].split('\n')
                if line and not line.startswith('#')}
    assert not required & set(TEST_TOOLS)
    extra = config['options.extras_require']['fixtures']
    assert {re.split(r'[<>=]', line)[0]
            for line in extra.split()} == {'fixtures', 'oslotest',
                                      'wsgi-intercept'}


def _test_tools_loaded_by(imports, env=None):
    """The test tools a fresh interpreter has loaded after ``imports``."""
    code = (
        'import sys\n%s\n'
        'print(sorted({"fixtures", "wsgi_intercept", "testtools",\n'
        '              "oslotest"} & set(\n'
        '    name.split(".")[0] for name in sys.modules)))\n' % imports)
    output = subprocess.run([sys.executable, '-c', code], check=True,
                            cwd=ROOT, env=env, capture_output=True,
                            text=True).stdout
    return set(ast.literal_eval(output.splitlines()[-1]))


def test_the_service_runs_without_test_tools(tmp_path):
    """Importing every module the service runs (the application, its
    WSGI entry point, configuration loader, the worker, the commands)
    loads none of the test tools."""
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = sqlite:///%s\n'
                      'sync_on_startup = True\n' % (tmp_path / 'p.sqlite'))
    env = dict(os.environ, PLACEMENT_CONFIG_FILE=str(config))
    assert _test_tools_loaded_by(
        'import placement.app, placement.cmd.api, placement.config_loader\n'
        'import placement.cmd.worker, placement.cmd.manage\n'
        'import placement.cmd.status, placement.cmd.apply\n'
        'import placement.wsgi, placement.wsgi.api', env) == set()


def test_direct_is_what_loads_them():
    """The check above would see them: ``placement.direct`` (a test
    tool itself, like upstream's) does load them."""
    assert {'fixtures', 'wsgi_intercept'} <= _test_tools_loaded_by(
        'import placement.direct')
