"""``placement-manage``: database administration, as upstream's.

    placement-manage [--config-file FILE] db sync
    placement-manage [--config-file FILE] db version
    placement-manage [--config-file FILE] db stamp REVISION
    placement-manage [--config-file FILE] db online_data_migrations
                                                          [--max-count N]
    placement-manage --version

Deployment tools run these by name and read their exit status (kolla's
bootstrap container runs ``db sync`` then ``db online_data_migrations``
with ``errexit``), so the commands, their output and their exit statuses
are upstream's: 0 done, 1 a failure (or, for the online migrations with
``--max-count``, some done and maybe more to do), 2 a usage error (or
migrations that failed), 127 a ``--max-count`` that is not a positive
number.  With no command the help is printed and the status is 1; ``db``
alone prints its own help.
"""

import collections
import logging
import sys

from alembic import util as alembic_util
from oslo_config import cfg
import prettytable

from placement import config_loader
from placement.storage import adoption
from placement.storage import engine
from placement.storage import migration
from placement.storage import online_migrations
from placement.storage import standard_sync

LOG = logging.getLogger(__name__)

# Rows a batch of the online data migrations examines when no
# --max-count is given: batches of this many until nothing is left.
DEFAULT_BATCH = 50
INVALID_INPUT = 127


def _database(conf):
    """The configured database, once it answers (``max_retries`` and
    ``retry_interval``, as upstream's commands wait for it)."""
    db = engine.Database.from_conf(conf)
    group = conf.placement_database
    db.wait_until_reachable(group.max_retries, group.retry_interval)
    return db


def db_sync(conf):
    db = _database(conf)
    before = migration.current_revision(db.engine)
    migration.upgrade(db.engine)
    if adoption.is_upstream(before):
        print('Adopted a database written by upstream Placement at '
              'revision %s; no row was changed.' % before)
    with db.engine.connect() as conn:
        left = online_migrations.left_to_do(conn)
    if left:
        print('Data upstream left to its online migrations: %s. Run '
              '"placement-manage db online_data_migrations".'
              % '; '.join(left))
    db.write(standard_sync.sync_all)
    print('Database is at revision %s.' % migration.current_revision(
        db.engine))
    return 0


def db_version(conf):
    db = _database(conf)
    print(migration.current_revision(db.engine))
    return 0


def db_stamp(conf):
    db = _database(conf)
    try:
        migration.stamp(db.engine, conf.category.revision)
    except alembic_util.CommandError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


def db_online_data_migrations(conf):
    """Run every migration of ``online_migrations`` in batches: one batch
    of ``--max-count`` rows in all when given (exit 1 when it did
    something, as more may be left), else batches of DEFAULT_BATCH until
    one does nothing (exit 0).  Exit 2 when a migration failed, unless a
    limited batch also did something: what it did may let the failed one
    succeed next time."""
    max_count = _positive(conf.category.max_count)
    if max_count is None:
        print('Must supply a positive value for max_count')
        return INVALID_INPUT
    limited = conf.category.max_count is not None
    if not limited:
        print('Running batches of %i until complete' % max_count)
    db = _database(conf)
    totals = collections.OrderedDict()
    while True:
        done, failed = _batch(db, conf, max_count, totals)
        if limited or not done:
            break
    table = prettytable.PrettyTable(['Migration', 'Total Found',
                                     'Completed'])
    for name, (found, completed) in totals.items():
        table.add_row([name, found, completed])
    print(table)
    if failed and not (limited and done):
        print('Some migrations failed unexpectedly. Check log for details.')
        return 2
    return 1 if done else 0


def _positive(max_count):
    """The batch size ``--max-count`` asks for (DEFAULT_BATCH when not
    given), or None when it is not a positive whole number."""
    if max_count is None:
        return DEFAULT_BATCH
    try:
        value = int(max_count)
    except ValueError:
        return None
    return value if value >= 1 else None


def _batch(db, conf, max_count, totals):
    """One batch: each migration in turn with what is left of
    ``max_count``; (rows migrated, whether one failed), the counts added
    to ``totals`` ({name: (found, done)})."""
    done = 0
    failed = False
    for migrate in online_migrations.MIGRATIONS:
        name = migrate.__name__
        try:
            found, completed = db.write(migrate, max_count - done, conf)
        except Exception:  # noqa: BLE001 - reported, and the status says
            print('Error attempting to run %s' % name)
            LOG.exception('Error attempting to run %s', name)
            failed = True
            found = completed = 0
        if found:
            print('%i rows matched query %s, %i migrated'
                  % (found, name, completed))
        before = totals.get(name, (0, 0))
        totals[name] = (before[0] + found, before[1] + completed)
        done += completed
        if done >= max_count:
            break
    return done, failed


def _add_parsers(subparsers):
    # Not required: with no command the help is printed (status 1).
    subparsers.required = False
    db_parser = subparsers.add_parser('db', help='Database commands.')
    db_parser.set_defaults(action=lambda conf: db_parser.print_help())
    commands = db_parser.add_subparsers(description='database commands')
    sync = commands.add_parser(
        'sync', help='Create or upgrade the schema (adopting a database '
                     'upstream Placement wrote) and sync standard '
                     'resource classes and traits.')
    sync.set_defaults(action=db_sync)
    version = commands.add_parser(
        'version', help='Print the schema revision.')
    version.set_defaults(action=db_version)
    stamp = commands.add_parser(
        'stamp', help='Record a revision as the schema\'s without '
                      'migrating (one of upstream\'s hands the database '
                      'back to upstream Placement).')
    stamp.add_argument('revision', help='The revision to record.')
    stamp.set_defaults(action=db_stamp)
    online = commands.add_parser(
        'online_data_migrations',
        help='Fill in the data upstream Placement left to its online '
             'migrations, in batches.')
    online.add_argument('--max-count', metavar='<number>',
                        help='Rows to migrate in one batch, then stop '
                             '(default: batches of %d until done).'
                             % DEFAULT_BATCH)
    online.set_defaults(action=db_online_data_migrations)


def main(argv=None):
    command = cfg.SubCommandOpt('category', handler=_add_parsers,
                                title='Commands')
    try:
        conf = config_loader.load(sys.argv[1:] if argv is None else argv,
                                  cli_opts=[command], setup_logging=False)
    except engine.NoConnection as error:
        sys.exit('placement-manage: %s' % error)
    try:
        action = conf.category.action
    except cfg.NoSuchOptError:
        conf.print_help()
        return 1
    return action(conf) or 0


if __name__ == '__main__':
    sys.exit(main())
