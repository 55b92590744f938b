"""Adopting a database upstream Placement wrote, on every backend.

The real thing (upstream 16.0.0 filling a database through its API, this
service then serving it) is ``tools/adopt_upstream_database.py``; these
tests shape our own schema the way upstream's revisions left theirs (the
alembic revision upstream records; no consumer types before its revision
422ece571366; unmigrated data) and check what ``placement-manage db
sync`` and ``placement-status upgrade check`` make of it.
"""

import json

from alembic.migration import MigrationContext
from alembic.operations import Operations
import pytest
import sqlalchemy as sa

from placement.cmd import manage
from placement.cmd import status
from placement.storage import adoption
from placement.storage import changes
from placement.storage import engine
from placement.storage import migration
from placement.storage import tables

UPSTREAM_HEAD = 'a082b8bb98d0'
BEFORE_CONSUMER_TYPES = 'b5c396305c25'
# Tables of this service's own, which an upstream database lacks.
OURS_ONLY = (tables.change_stamp, tables.provider_changes,
             tables.api_processes)
UPSTREAMS = [table for table in tables.metadata.sorted_tables
             if table not in OURS_ONLY]


@pytest.fixture
def upstream_db(database_url):
    """The test's database with a provider tree, a consumer and its
    allocation, recorded at an upstream revision."""
    db = engine.Database(engine.create_engine(database_url))
    with db.engine.begin() as conn:
        rp = tables.resource_providers
        conn.execute(rp.insert(), [
            {'id': 1, 'uuid': 'a' * 8 + '-0000-0000-0000-' + 'a' * 12,
             'name': 'cn', 'generation': 3, 'root_provider_id': 1},
            {'id': 2, 'uuid': 'b' * 8 + '-0000-0000-0000-' + 'b' * 12,
             'name': 'numa', 'generation': 1, 'root_provider_id': 1,
             'parent_provider_id': 1}])
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=2, resource_class_id=0, total=8,
            reserved=0, min_unit=1, max_unit=8, step_size=1,
            allocation_ratio=1.0))
        conn.execute(tables.projects.insert().values(id=1, external_id='p'))
        conn.execute(tables.users.insert().values(id=1, external_id='u'))
        conn.execute(tables.consumers.insert().values(
            uuid='c' * 8 + '-0000-0000-0000-' + 'c' * 12, project_id=1,
            user_id=1, generation=1))
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=2, resource_class_id=0, used=2,
            consumer_id='c' * 8 + '-0000-0000-0000-' + 'c' * 12))
    yield db
    db.dispose()


def _stamp(db, revision):
    """Hand the database to upstream at ``revision`` as an operator would
    (``placement-manage db stamp``): its schema is then upstream's."""
    migration.stamp(db.engine, revision)


def _checks(config_file, capsys):
    """(exit status, {check: (result, details)}) of ``placement-status
    upgrade check --json``."""
    code = status.main(['--config-file', config_file, 'upgrade', 'check',
                        '--json'])
    checks = json.loads(capsys.readouterr().out)['checks']
    return code, {check['check']: (check['result'], check['details'])
                  for check in checks}


def _rows(db):
    with db.engine.connect() as conn:
        return {table.name: sorted(
            tuple(str(value) for value in row)
            for row in conn.execute(sa.select(table)))
            for table in UPSTREAMS}


def _without_consumer_types(db):
    """What upstream's schema was before its revision 422ece571366."""
    with db.engine.begin() as conn:
        operations = Operations(MigrationContext.configure(conn))
        with operations.batch_alter_table('consumers') as batch:
            batch.drop_constraint(
                'fk_consumers_consumer_type_id_consumer_types',
                type_='foreignkey')
        operations.drop_index('consumers_consumer_type_id_idx', 'consumers')
        with operations.batch_alter_table('consumers') as batch:
            batch.drop_column('consumer_type_id')
        operations.drop_table('consumer_types')


def test_upstream_head_is_adopted_without_changing_a_row(
        upstream_db, config_file, capsys):
    before = _rows(upstream_db)
    _stamp(upstream_db, UPSTREAM_HEAD)
    code, checks = _checks(config_file, capsys)
    assert code == status.WARNING
    assert 'written by upstream Placement (revision %s)' % UPSTREAM_HEAD \
        in checks['Database schema'][1]
    assert manage.main(['--config-file', config_file, 'db', 'sync']) == 0
    out = capsys.readouterr().out
    assert 'Adopted a database written by upstream Placement' in out
    assert migration.current_revision(upstream_db.engine) == \
        migration.head_revision()
    assert _rows(upstream_db) == before
    # The change log starts on the adopted database.
    with upstream_db.engine.connect() as conn:
        assert [(row.id, row.pruned_below) for row in conn.execute(
            sa.select(tables.change_stamp).order_by(
                tables.change_stamp.c.id))] == [
                    (shard, 0) for shard in range(1, changes.SHARDS + 1)]
    assert status.main(['--config-file', config_file, 'upgrade',
                        'check']) == status.SUCCESS
    # ... and sees writes made by anything else.
    with upstream_db.engine.connect() as conn:
        assert len(migration.triggers(conn)) == 36 + (
            12 if conn.dialect.name == 'postgresql' else 0)


def test_consumer_types_are_added_to_an_older_upstream_schema(
        upstream_db, config_file):
    _without_consumer_types(upstream_db)
    _stamp(upstream_db, BEFORE_CONSUMER_TYPES)
    assert manage.main(['--config-file', config_file, 'db', 'sync']) == 0
    inspector = sa.inspect(upstream_db.engine)
    assert 'consumer_types' in inspector.get_table_names()
    assert 'consumer_type_id' in {
        column['name'] for column in inspector.get_columns('consumers')}
    with upstream_db.engine.begin() as conn:
        type_id = conn.execute(tables.consumer_types.insert().values(
            name='INSTANCE')).inserted_primary_key[0]
        conn.execute(tables.consumers.update().values(
            consumer_type_id=type_id))


def test_unmigrated_upstream_data_is_adopted_and_named(
        upstream_db, config_file, capsys):
    with upstream_db.engine.begin() as conn:
        conn.execute(tables.resource_providers.update()
                     .where(tables.resource_providers.c.id == 1)
                     .values(root_provider_id=None))
    _stamp(upstream_db, UPSTREAM_HEAD)
    code, checks = _checks(config_file, capsys)
    assert code == status.FAILURE
    assert checks['Missing Root Provider IDs'] == (
        status.FAILURE, 'There are 1 resource providers without a root '
        'provider id. Run the "placement-manage db online_data_migrations" '
        'command.')
    assert manage.main(['--config-file', config_file, 'db', 'sync']) == 0
    assert ('1 resource provider(s) without a root provider id. Run '
            '"placement-manage db online_data_migrations"'
            in capsys.readouterr().out)
    assert migration.current_revision(upstream_db.engine) == \
        migration.head_revision()


def test_every_upstream_revision_is_known():
    assert adoption.UPSTREAM_REVISIONS[-1] == UPSTREAM_HEAD
    assert all(adoption.is_upstream(revision)
               for revision in adoption.UPSTREAM_REVISIONS)
    assert not adoption.is_upstream(migration.head_revision())
