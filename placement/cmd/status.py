"""``placement-status upgrade check [--json]``: is this deployment ready?

The OpenStack upgrade-check convention, through oslo.upgradecheck as
upstream's: a table of checks (or, with ``--json``, the same as JSON),
and the worst result as the exit status: 0 success, 1 warning, 2
failure, 255 when a check could not run at all (a database that cannot
be reached, say).

Upstream's three checks come first, by upstream's names; then this
service's own: the schema, writes made by anything else, the change
log's protocol against the API processes still reading it, and the
policy file.
"""

import sys

from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck

from placement import conf as placement_conf
from placement import policy
from placement.storage import adoption
from placement.storage import api_processes
from placement.storage import changes
from placement.storage import engine
from placement.storage import migration
from placement.storage import online_migrations

SUCCESS = upgradecheck.Code.SUCCESS
WARNING = upgradecheck.Code.WARNING
FAILURE = upgradecheck.Code.FAILURE
_RUN_MIGRATIONS = 'Run the "placement-manage db online_data_migrations" ' \
                  'command.'


def _result(code, details=None):
    return upgradecheck.Result(code, details)


def _database_read(conf, read, current_only=False):
    """``read(conn)`` on the configured database, or None when it has no
    schema yet or, with ``current_only``, not this release's (the schema
    check says so)."""
    db = engine.Database.from_conf(conf)
    try:
        revision = migration.current_revision(db.engine)
        if revision is None or (
                current_only and revision != migration.head_revision()):
            return None
        with db.engine.connect() as conn:
            return read(conn)
    finally:
        db.dispose()


def check_root_provider_ids(conf):
    missing = _database_read(conf, online_migrations.providers_without_root)
    if missing:
        return _result(FAILURE, 'There are %d resource providers without a '
                                'root provider id. %s'
                       % (missing, _RUN_MIGRATIONS))
    return _result(SUCCESS)


def check_incomplete_consumers(conf):
    missing = _database_read(conf,
                             online_migrations.consumers_without_record)
    if missing:
        return _result(WARNING, 'There are %d consumers holding allocations '
                                'without a consumer record. %s'
                       % (missing, _RUN_MIGRATIONS))
    return _result(SUCCESS)


def check_database(conf):
    db = engine.Database.from_conf(conf)
    try:
        current = migration.current_revision(db.engine)
    finally:
        db.dispose()
    head = migration.head_revision()
    if adoption.is_upstream(current):
        return _result(WARNING, (
            'Database written by upstream Placement (revision %s). This '
            'service can adopt it: "placement-manage db sync" adds what '
            'its schema lacks, changes no data, and records revision %s.'
            % (current, head)))
    if current != head:
        return _result(FAILURE, (
            'Database schema is at %s, the code needs %s: run '
            '"placement-manage db sync".' % (current, head)))
    return _result(SUCCESS, 'Database schema is at %s.' % head)


def check_foreign_writes(conf):
    """Allocation candidates see writes made by anything else only
    through triggers, which a MariaDB server may have refused."""
    logged = _database_read(conf, changes.foreign_writes_logged,
                            current_only=True)
    if logged is None:
        return _result(SUCCESS, 'Checked once the schema is current.')
    if logged:
        return _result(SUCCESS, 'Writes made by anything else are seen.')
    return _result(WARNING, (
        'The database has not got the triggers that show allocation '
        'candidates the writes made by anything else (SQL run by hand, '
        'another Placement service): candidates may answer from before '
        'them. See README.rst, "Writes made by anything else".'))


def check_change_log_protocol(conf):
    """The database's change-log protocol against this release's, and
    against that of every API process still reading the log."""
    found = _database_read(conf, lambda conn: (
        changes.protocol_mismatch(conn), api_processes.live(conn)),
        current_only=True)
    if found is None:
        return _result(SUCCESS, 'Checked once the schema is current.')
    mismatch, live = found
    if mismatch is not None:
        return _result(FAILURE, 'This release cannot serve the database: '
                                '%s.' % mismatch)
    behind = ['%s pid %s (release %s, protocol %s, last seen %s)'
              % (host, pid, release, protocol, seen.isoformat(' ',
                                                              'seconds'))
              for host, pid, protocol, release, seen in live
              if protocol != changes.PROTOCOL]
    if behind:
        return _result(WARNING, (
            'API processes that follow another change log protocol than '
            'the database\'s (%s) read the tables again for every answer '
            'and fail their health check until restarted with this '
            'release: %s.' % (changes.PROTOCOL, '; '.join(behind))))
    minutes = api_processes.LIVE_WITHIN.total_seconds() // 60
    if not live:
        return _result(SUCCESS, 'Change log protocol %s; no API process '
                                'read the log in the last %d minutes.'
                       % (changes.PROTOCOL, minutes))
    return _result(SUCCESS, 'Change log protocol %s, followed by the %d '
                            'API process(es) that read the log in the last '
                            '%d minutes.'
                   % (changes.PROTOCOL, len(live), minutes))


def check_policy(conf):
    try:
        policy.build_enforcer(conf)
    except Exception as exc:  # noqa: BLE001 - a malformed file, any way
        return _result(FAILURE, 'Policy file cannot be used: %s' % exc)
    return _result(SUCCESS, 'Policy rules load.')


class Checks(upgradecheck.UpgradeCommands):
    """The checks, each given the parsed configuration."""

    def __init__(self, conf):
        super().__init__()
        self.conf = conf

    def _run(self, check):
        return check(self.conf)

    _upgrade_checks = (
        ('Missing Root Provider IDs', (_run, {'check':
                                              check_root_provider_ids})),
        ('Incomplete Consumers', (_run, {'check':
                                         check_incomplete_consumers})),
        ('Policy File JSON to YAML Migration',
         (lambda self: common_checks.check_policy_json(self, self.conf),
          {})),
        ('Database schema', (_run, {'check': check_database})),
        ('Writes by anything else', (_run, {'check': check_foreign_writes})),
        ('Change log protocol', (_run, {'check':
                                        check_change_log_protocol})),
        ('Policy file', (_run, {'check': check_policy})),
    )


def main(argv=None):
    conf = placement_conf.new_config()
    return upgradecheck.main(conf, project='placement',
                             upgrade_command=Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
