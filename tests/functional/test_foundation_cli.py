"""placement-manage and placement-status against a real database file."""

import pytest

from placement.cmd import manage
from placement.cmd import status
from placement.storage import migration


@pytest.fixture
def config_file(tmp_path):
    """A placement.conf pointing at an SQLite file nobody created yet."""
    path = tmp_path / 'placement.conf'
    path.write_text(
        '[placement_database]\nconnection = sqlite:///%s\n'
        '[oslo_policy]\npolicy_file = %s\n'
        % (tmp_path / 'placement.sqlite', tmp_path / 'policy.yaml'))
    return str(path)


def run(main, config_file, *args):
    return main(['--config-file', config_file] + list(args))


def test_db_version_of_an_empty_database(config_file, capsys):
    assert run(manage.main, config_file, 'db', 'version') == 0
    assert capsys.readouterr().out == 'None\n'


def test_db_sync_then_version(config_file, capsys):
    head = migration.head_revision()
    assert run(manage.main, config_file, 'db', 'sync') == 0
    assert capsys.readouterr().out == 'Database is at revision %s.\n' % head
    assert run(manage.main, config_file, 'db', 'version') == 0
    assert capsys.readouterr().out == '%s\n' % head


def test_manage_without_a_command_is_a_usage_error(config_file, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(manage.main, config_file)
    assert exit_info.value.code == 2
    assert 'usage: ' in capsys.readouterr().err


def test_upgrade_check_fails_before_sync_and_passes_after(config_file,
                                                          capsys):
    assert run(status.main, config_file, 'upgrade', 'check') == 2
    before = capsys.readouterr().out
    assert 'Result: Failure' in before
    assert 'placement-manage db sync' in before

    run(manage.main, config_file, 'db', 'sync')
    capsys.readouterr()
    assert run(status.main, config_file, 'upgrade', 'check') == 0
    after = capsys.readouterr().out
    assert after.count('Result: Success') == len(status.CHECKS)


def test_upgrade_check_fails_on_a_broken_policy_file(config_file, tmp_path,
                                                     capsys):
    run(manage.main, config_file, 'db', 'sync')
    (tmp_path / 'policy.yaml').write_text('"placement:traits:list": [\n')
    assert run(status.main, config_file, 'upgrade', 'check') == 2
    assert 'Policy file cannot be used' in capsys.readouterr().out


def test_upgrade_check_fails_when_the_database_is_unreachable(tmp_path,
                                                              capsys):
    path = tmp_path / 'placement.conf'
    # Port 9 (discard) on loopback: nothing listens, the refusal is quick.
    path.write_text('[placement_database]\nconnection = '
                    'postgresql+psycopg2://placement@127.0.0.1:9/placement\n')
    assert run(status.main, str(path), 'upgrade', 'check') == 2
    assert 'Cannot read the database' in capsys.readouterr().out
