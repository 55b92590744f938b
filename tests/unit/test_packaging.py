"""setup.cfg lists every package, so that a real (non-editable) install
has all of the service: a missing one only shows once installed."""

import configparser
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


TEST_TOOLS = ('fixtures', 'wsgi-intercept', 'testtools')


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
            for line in extra.split()} == {'fixtures', 'wsgi-intercept'}


def test_the_service_runs_without_test_tools():
    """Importing every module the service runs (the application, its
    configuration loader, the worker, the commands) loads none of the
    test tools."""
    code = (
        'import sys\n'
        'import placement.app, placement.cmd.api, placement.config_loader\n'
        'import placement.cmd.worker, placement.cmd.manage\n'
        'import placement.cmd.status, placement.cmd.apply\n'
        'loaded = {"fixtures", "wsgi_intercept", "testtools"} & set(\n'
        '    name.split(".")[0] for name in sys.modules)\n'
        'assert not loaded, loaded\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=ROOT)
