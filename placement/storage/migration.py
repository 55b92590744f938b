"""Schema migrations with alembic, driven from code (no alembic.ini needed)."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

import placement.migrations
from placement.storage import adoption


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


def current_revision(engine):
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head_revision():
    return alembic_script.ScriptDirectory.from_config(
        _config()).get_current_head()
