"""``placement-manage``: database administration.

    placement-manage [--config-file FILE] db sync
    placement-manage [--config-file FILE] db version
"""

import sys

from oslo_config import cfg

from placement import config_loader
from placement.storage import adoption
from placement.storage import engine
from placement.storage import migration
from placement.storage import standard_sync


def _db_sync(conf):
    db = engine.Database.from_conf(conf)
    before = migration.current_revision(db.engine)
    try:
        migration.upgrade(db.engine)
    except adoption.AdoptionRefused as exc:
        print(exc, file=sys.stderr)
        return 1
    if adoption.is_upstream(before):
        print('Adopted a database written by upstream Placement at '
              'revision %s; no row was changed.' % before)
    db.write(standard_sync.sync_all)
    print('Database is at revision %s.' % migration.current_revision(
        db.engine))
    return 0


def _db_version(conf):
    db = engine.Database.from_conf(conf)
    print(migration.current_revision(db.engine) or 'None')
    return 0


_COMMANDS = {'sync': _db_sync, 'version': _db_version}


def _add_parsers(subparsers):
    db_parser = subparsers.add_parser('db', help='Database commands.')
    db_commands = db_parser.add_subparsers(dest='db_command')
    db_commands.required = True
    db_commands.add_parser('sync', help='Create or upgrade the schema and '
                                        'sync standard classes and traits.')
    db_commands.add_parser('version', help='Print the schema revision.')


def main(argv=None):
    command = cfg.SubCommandOpt('category', handler=_add_parsers,
                                title='Commands')
    conf = config_loader.load(sys.argv[1:] if argv is None else argv,
                              cli_opts=[command], setup_logging=False)
    return _COMMANDS[conf.category.db_command](conf)


if __name__ == '__main__':
    sys.exit(main())
