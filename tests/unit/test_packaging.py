"""setup.cfg lists every package, so that a real (non-editable) install
has all of the service: a missing one only shows once installed."""

import configparser
import pathlib

ROOT = pathlib.Path(__file__).parents[2]


def test_every_package_is_listed():
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    listed = set(config['options']['packages'].split())
    found = {'.'.join(path.parent.relative_to(ROOT).parts)
             for path in (ROOT / 'placement').rglob('__init__.py')}
    assert found <= listed, sorted(found - listed)
