"""The migrations create exactly the schema the code describes.

``placement.storage.tables`` is what the storage code queries;
``migrations/`` is what databases are really built from.  If the two
drift (a column added to tables.py without a revision), alembic's
autogenerate comparison sees it here, on each backend.
"""

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from placement.cmd import manage
from placement.storage import migration
from placement.storage import tables


def _schema_differences(engine, metadata=tables.metadata):
    with engine.connect() as conn:
        context = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True,
                        'compare_server_default': True})
        return autogenerate.compare_metadata(context, metadata)


def test_migrated_schema_matches_tables(db):
    assert _schema_differences(db.engine) == []
    assert migration.current_revision(db.engine) == migration.head_revision()


def test_tables_change_would_be_detected(db):
    """The comparison is not vacuous: a column only in the code shows up."""
    changed = sa.MetaData(naming_convention=tables.metadata.naming_convention)
    for table in tables.metadata.sorted_tables:
        table.to_metadata(changed)
    changed.tables['traits'].append_column(
        sa.Column('extra_for_test', sa.Integer, nullable=True))
    differences = _schema_differences(db.engine, changed)
    assert [diff[0] for diff in differences] == ['add_column']
    assert differences[0][3].name == 'extra_for_test'


def _row_counts(engine):
    with engine.connect() as conn:
        return {name: conn.execute(sa.select(sa.func.count()).select_from(
                    table)).scalar_one()
                for name, table in tables.metadata.tables.items()}


def test_db_sync_twice_is_idempotent(db, database_url, tmp_path, capsys):
    config_file = tmp_path / 'placement.conf'
    config_file.write_text('[placement_database]\nconnection = %s\n'
                           % database_url)
    before = _row_counts(db.engine)
    argv = ['--config-file', str(config_file), 'db', 'sync']
    assert manage.main(argv) == 0
    assert manage.main(argv) == 0
    assert _row_counts(db.engine) == before
    assert before['resource_classes'] > 0 and before['traits'] > 0
    assert _schema_differences(db.engine) == []
    assert capsys.readouterr().out.count(
        'Database is at revision %s.' % migration.head_revision()) == 2
