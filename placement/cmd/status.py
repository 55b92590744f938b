"""``placement-status upgrade check``: is this deployment ready to serve?

Exit status follows the OpenStack upgrade-check convention: 0 all checks
passed, 1 a warning, 2 a failure.
"""

import sys

from oslo_config import cfg

from placement import config_loader
from placement import policy
from placement.storage import adoption
from placement.storage import changes
from placement.storage import engine
from placement.storage import migration

SUCCESS, WARNING, FAILURE = 0, 1, 2
_NAMES = {SUCCESS: 'Success', WARNING: 'Warning', FAILURE: 'Failure'}


def check_database(conf):
    db = engine.Database.from_conf(conf)
    try:
        current = migration.current_revision(db.engine)
        if adoption.is_upstream(current):
            with db.engine.connect() as conn:
                problems = adoption.problems(conn)
    except Exception as exc:  # any driver error means "cannot reach it"
        return FAILURE, 'Cannot read the database: %s' % exc
    finally:
        db.dispose()
    head = migration.head_revision()
    if adoption.is_upstream(current):
        if problems:
            return FAILURE, (
                'Database written by upstream Placement (revision %s) with '
                'unmigrated data: %s. Run upstream\'s "placement-manage db '
                'online_data_migrations" first.'
                % (current, '; '.join(problems)))
        return WARNING, (
            'Database written by upstream Placement (revision %s). This '
            'service can adopt it: "placement-manage db sync" adds what '
            'its schema lacks, changes no data, and records revision %s.'
            % (current, head))
    if current != head:
        return FAILURE, ('Database schema is at %s, the code needs %s: run '
                         '"placement-manage db sync".' % (current, head))
    return SUCCESS, 'Database schema is at %s.' % head


def check_foreign_writes(conf):
    """Allocation candidates see writes made by anything else only
    through triggers, which a MariaDB server may have refused."""
    db = engine.Database.from_conf(conf)
    try:
        if migration.current_revision(db.engine) != \
                migration.head_revision():
            return SUCCESS, 'Checked once the schema is current.'
        with db.engine.connect() as conn:
            logged = changes.foreign_writes_logged(conn)
    except Exception as exc:  # any driver error means "cannot reach it"
        return FAILURE, 'Cannot read the database: %s' % exc
    finally:
        db.dispose()
    if logged:
        return SUCCESS, 'Writes made by anything else are seen.'
    return WARNING, (
        'The database has not got the triggers that show allocation '
        'candidates the writes made by anything else (SQL run by hand, '
        'another Placement service): candidates may answer from before '
        'them. See README.rst, "Writes made by anything else".')


def check_policy(conf):
    try:
        policy.build_enforcer(conf)
    except Exception as exc:  # a malformed policy file of any kind
        return FAILURE, 'Policy file cannot be used: %s' % exc
    return SUCCESS, 'Policy rules load.'


CHECKS = (('Database schema', check_database),
          ('Writes by anything else', check_foreign_writes),
          ('Policy file', check_policy))


def upgrade_check(conf):
    worst = SUCCESS
    for title, check in CHECKS:
        code, detail = check(conf)
        worst = max(worst, code)
        print('Check: %s\n  Result: %s\n  Details: %s'
              % (title, _NAMES[code], detail))
    return worst


def _add_parsers(subparsers):
    upgrade = subparsers.add_parser('upgrade', help='Upgrade readiness.')
    actions = upgrade.add_subparsers(dest='action')
    actions.required = True
    actions.add_parser('check', help='Run the upgrade checks.')


def main(argv=None):
    command = cfg.SubCommandOpt('category', handler=_add_parsers)
    conf = config_loader.load(sys.argv[1:] if argv is None else argv,
                              cli_opts=[command], setup_logging=False)
    return upgrade_check(conf)


if __name__ == '__main__':
    sys.exit(main())
