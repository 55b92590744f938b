"""placement-manage and placement-status against a real database file."""

import re

import pytest

from placement.cmd import manage
from placement import version
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


def test_manage_without_a_command_prints_its_help_and_fails(config_file,
                                                            capsys):
    # Upstream's statuses: the help and 1; "db" alone, its help and 0.
    assert run(manage.main, config_file) == 1
    assert 'usage: ' in capsys.readouterr().out
    assert run(manage.main, config_file, 'db') == 0
    assert 'online_data_migrations' in capsys.readouterr().out


def test_manage_an_unknown_command_is_a_usage_error(config_file, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(manage.main, config_file, 'db', 'upgrade')
    assert exit_info.value.code == 2
    assert 'invalid choice' in capsys.readouterr().err


def test_version_is_the_release(config_file, capsys):
    with pytest.raises(SystemExit) as exit_info:
        manage.main(['--version'])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == version.release()


def test_db_stamp_records_a_revision_or_fails_on_an_unknown_one(
        config_file, capsys):
    run(manage.main, config_file, 'db', 'sync')
    assert run(manage.main, config_file, 'db', 'stamp', '0003') == 0
    run(manage.main, config_file, 'db', 'version')
    assert capsys.readouterr().out.endswith('0003\n')
    assert run(manage.main, config_file, 'db', 'stamp', 'nonexistent') == 1
    assert "Can't locate revision" in capsys.readouterr().err
    assert run(manage.main, config_file, 'db', 'stamp', 'head') == 0
    run(manage.main, config_file, 'db', 'version')
    assert capsys.readouterr().out == '%s\n' % migration.head_revision()


@pytest.mark.parametrize('max_count', ['0', '-3', 'x', '1.5'])
def test_online_data_migrations_refuse_a_count_that_is_not_positive(
        config_file, capsys, max_count):
    run(manage.main, config_file, 'db', 'sync')
    capsys.readouterr()
    assert run(manage.main, config_file, 'db', 'online_data_migrations',
               '--max-count', max_count) == 127
    assert capsys.readouterr().out == \
        'Must supply a positive value for max_count\n'


def test_online_data_migrations_with_nothing_to_do(config_file, capsys):
    run(manage.main, config_file, 'db', 'sync')
    capsys.readouterr()
    assert run(manage.main, config_file, 'db',
               'online_data_migrations') == 0
    out = capsys.readouterr().out
    assert out.startswith('Running batches of 50 until complete\n')
    assert re.search(r'\|\s+Migration\s+\|\s+Total Found\s+\|\s+Completed'
                     r'\s+\|', out)
    assert re.search(r'\|\s+create_incomplete_consumers\s+\|\s+0\s+\|'
                     r'\s+0\s+\|', out)
    assert run(manage.main, config_file, 'db', 'online_data_migrations',
               '--max-count', '10') == 0


def test_online_data_migrations_on_an_empty_database_fail(config_file,
                                                          capsys):
    # No tables: each migration fails, as upstream's do.
    assert run(manage.main, config_file, 'db',
               'online_data_migrations') == 2
    out = capsys.readouterr().out
    assert 'Error attempting to run set_root_provider_ids' in out
    assert out.endswith('Some migrations failed unexpectedly. Check log '
                        'for details.\n')


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
    assert after.count('Result: Success') == len(
        status.Checks._upgrade_checks)


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
    # A check that cannot run at all is an error, not a failure, as in
    # every OpenStack service's upgrade check.
    assert run(status.main, str(path), 'upgrade', 'check') == 255
    assert 'Error:' in capsys.readouterr().out
