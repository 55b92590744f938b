"""Serving a database that upstream Placement created and filled.

Upstream's schema has the same tables and columns as ours (that is what
makes the service a drop-in); it differs in constraint names, in foreign
keys ours adds (with ``ON DELETE CASCADE``, which the storage code never
relies on) and, before upstream's revision 422ece571366, in lacking
consumer types.  Adopting such a database therefore adds what is missing,
changes no row, and records our revision in ``alembic_version`` so that
our later migrations apply.

Data upstream left to its online data migrations (providers without a
root id, allocations without a consumer record: upstream's revisions
611cd6dffd7b and b5c396305c25 refuse to go on while there are any) does
not stop adoption: the service reads such rows as those migrations would
write them, and ``placement-manage db online_data_migrations`` writes
them (``online_migrations``).
"""

import sqlalchemy as sa

from placement.storage.tables import CONSUMER_TYPE

# Upstream's alembic revisions, oldest first (openstack-placement 2.0.0,
# Train, through 16.0.0).
UPSTREAM_REVISIONS = ('b4ed3a175331', '611cd6dffd7b', 'b5c396305c25',
                      '422ece571366', 'a082b8bb98d0')
# Our revision whose schema an adopted database then has.
ADOPTED_AS = '0001'


def is_upstream(revision):
    return revision in UPSTREAM_REVISIONS


def adopt(conn):
    """Bring an upstream database (any revision of UPSTREAM_REVISIONS) to
    the schema of ADOPTED_AS, rows untouched."""
    inspector = sa.inspect(conn)
    if 'consumer_types' not in inspector.get_table_names():
        CONSUMER_TYPE.create(conn)
    columns = {column['name'] for column in inspector.get_columns(
        'consumers')}
    if 'consumer_type_id' not in columns:
        _add_consumer_type_column(conn)


def _add_consumer_type_column(conn):
    """consumers.consumer_type_id, its foreign key and index (upstream's
    revision 422ece571366 in our names)."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations
    operations = Operations(MigrationContext.configure(conn))
    with operations.batch_alter_table('consumers') as batch:
        batch.add_column(sa.Column(
            'consumer_type_id', sa.Integer(),
            sa.ForeignKey('consumer_types.id',
                          name='fk_consumers_consumer_type_id_consumer_types'),
            nullable=True))
    operations.create_index('consumers_consumer_type_id_idx', 'consumers',
                            ['consumer_type_id'])
