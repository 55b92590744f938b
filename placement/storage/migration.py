"""Schema migrations with alembic, driven from code (no alembic.ini needed)."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
from alembic.operations import Operations
import sqlalchemy as sa

import placement.migrations
from placement.storage import adoption
from placement.storage import tables

# What this service adds to upstream's schema beyond its revision
# ADOPTED_AS: its own tables, and (revision 0007) a covering index in
# place of upstream's on allocations.consumer_id.
OWN_TABLES = (tables.provider_changes, tables.change_stamp,
              tables.api_processes)
_UPSTREAM_INDEX = ('allocations_consumer_id_idx', ['consumer_id'])
_OWN_INDEX = 'allocations_consumer_class_used_idx'
_TRIGGER_PREFIX = 'placement_foreign_'


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location',
                        os.path.dirname(placement.migrations.__file__))
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(engine, revision='head'):
    """Bring the schema to ``revision``; a no-op when it is already there.

    A database upstream Placement wrote is adopted first (see
    ``adoption``), in the same transaction where the backend allows.
    """
    with engine.begin() as connection:
        current = alembic_migration.MigrationContext.configure(
            connection).get_current_revision()
        if adoption.is_upstream(current):
            adoption.adopt(connection)
            command.stamp(_config(connection), adoption.ADOPTED_AS,
                          purge=True)
        command.upgrade(_config(connection), revision)


def stamp(engine, revision):
    """Record ``revision`` (one of ours, ``head``, or one of upstream's)
    as the schema's, changing nothing else, as alembic's stamp does.

    Stamping one of upstream's revisions on a database this service
    migrated hands it back to upstream: what this service added beyond
    its first revision (its change-log tables and triggers, its index in
    place of upstream's) is removed with it, so that the schema is then
    the one that revision names and upstream's own ``db sync`` and
    migrations work on it.  Adopting it again later starts from there.
    Raises alembic's CommandError for a revision nobody knows.
    """
    with engine.begin() as connection:
        if not adoption.is_upstream(revision):
            command.stamp(_config(connection), revision, purge=True)
            return
        _remove_own_objects(connection)
        # alembic stamps only the revisions of its script directory.
        _VERSION.create(connection, checkfirst=True)
        connection.execute(_VERSION.delete())
        connection.execute(_VERSION.insert().values(version_num=revision))


# alembic's own table, as alembic makes it.
_VERSION = sa.Table(
    'alembic_version', sa.MetaData(),
    sa.Column('version_num', sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint('version_num', name='alembic_version_pkc'))


def _remove_own_objects(connection):
    inspector = sa.inspect(connection)
    for name, table in triggers(connection):
        connection.exec_driver_sql('DROP TRIGGER %s%s' % (
            name, ' ON %s' % table if connection.dialect.name ==
            'postgresql' else ''))
    if connection.dialect.name == 'postgresql':
        connection.exec_driver_sql(
            'DROP FUNCTION IF EXISTS placement_log_foreign_write()')
    existing = set(inspector.get_table_names())
    for table in OWN_TABLES:
        if table.name in existing:
            table.drop(connection)
    indexes = {index['name'] for index in inspector.get_indexes(
        'allocations')}
    operations = Operations(alembic_migration.MigrationContext.configure(
        connection))
    if _UPSTREAM_INDEX[0] not in indexes:
        operations.create_index(_UPSTREAM_INDEX[0], 'allocations',
                                _UPSTREAM_INDEX[1])
    if _OWN_INDEX in indexes:
        operations.drop_index(_OWN_INDEX, 'allocations')


def triggers(connection):
    """(name, table) of this service's triggers that log foreign writes
    (revisions 0004 and 0008)."""
    dialect = connection.dialect.name
    if dialect == 'sqlite':
        query = ("SELECT name, tbl_name FROM sqlite_master "
                 "WHERE type = 'trigger'")
    elif dialect == 'postgresql':
        # information_schema leaves out TRUNCATE triggers.
        query = ('SELECT tgname, tgrelid::regclass::text FROM pg_trigger '
                 'WHERE NOT tgisinternal')
    else:
        query = ('SELECT trigger_name, event_object_table '
                 'FROM information_schema.triggers '
                 'WHERE trigger_schema = database()')
    return [tuple(row) for row in connection.exec_driver_sql(query)
            if row[0].startswith(_TRIGGER_PREFIX)]


def current_revision(engine):
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head_revision():
    return alembic_script.ScriptDirectory.from_config(
        _config()).get_current_head()
