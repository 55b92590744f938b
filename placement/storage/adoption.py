"""Serving a database that upstream Placement created and filled.

Upstream's schema has the same tables and columns as ours (that is what
makes the service a drop-in); it differs in constraint names, in foreign
keys ours adds (with ``ON DELETE CASCADE``, which the storage code never
relies on) and, before upstream's revision 422ece571366, in lacking
consumer types.  Adopting such a database therefore adds what is missing,
changes no row, and records our revision in ``alembic_version`` so that
our later migrations apply.  Upstream's data-migration blockers (its
revisions 611cd6dffd7b and b5c396305c25) are checked the same way
upstream checks them: a database that fails them was never fully
migrated by upstream, and is refused with upstream's own remedy.
"""

import sqlalchemy as sa

from placement.storage.tables import (
    ALLOC, CONSUMER, CONSUMER_OF_ALLOC, CONSUMER_TYPE, RP)

# Upstream's alembic revisions, oldest first (openstack-placement 2.0.0,
# Train, through 16.0.0).
UPSTREAM_REVISIONS = ('b4ed3a175331', '611cd6dffd7b', 'b5c396305c25',
                      '422ece571366', 'a082b8bb98d0')
# Our revision whose schema an adopted database then has.
ADOPTED_AS = '0001'


class AdoptionRefused(Exception):
    """The upstream database cannot be served as it is."""


def is_upstream(revision):
    return revision in UPSTREAM_REVISIONS


def problems(conn):
    """What keeps an upstream database from being adopted, as sentences
    (none when it can be)."""
    found = []
    if conn.scalar(sa.select(sa.func.count()).select_from(RP)
                   .where(RP.c.root_provider_id.is_(None))):
        found.append('resource providers without a root provider id')
    if conn.scalar(
            sa.select(sa.func.count()).select_from(
                ALLOC.outerjoin(CONSUMER, CONSUMER_OF_ALLOC))
            .where(CONSUMER.c.id.is_(None))):
        found.append('allocations without a consumer record')
    return found


def adopt(conn):
    """Bring an upstream database (any revision of UPSTREAM_REVISIONS) to
    the schema of ADOPTED_AS, rows untouched."""
    found = problems(conn)
    if found:
        raise AdoptionRefused(
            'This database was written by upstream Placement but its data '
            'was never fully migrated (%s): run upstream\'s "placement-manage '
            'db online_data_migrations", then "db sync" again.'
            % '; '.join(found))
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
