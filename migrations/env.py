"""Alembic environment: runs on the connection ``placement.storage.migration`` hands in."""

from alembic import context

from placement.storage import tables

config = context.config
target_metadata = tables.metadata


def run_migrations_online():
    connection = config.attributes['connection']
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == 'sqlite')
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit('Offline (SQL script) migrations are not supported.')
run_migrations_online()
