"""The change stamp becomes many rows, so that writes stop queuing on one.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25

Until now every write transaction ended by advancing the one row of
placement_change_stamp and held that row's lock through its commit: the
writes of the whole cloud committed one at a time, one flush each.  The
stamp becomes a set of rows (shards), each with a stamp of its own, and
a write advances any one that no other transaction holds (see
placement/storage/changes.py); the log names each change by shard and
stamp.  Row 1 keeps its stamp, so the log written so far stays valid,
and it stays the row the triggers of revision 0004 advance, which is
why the log's new shard column defaults to 1.

README.rst's remedy for triggers a MariaDB server refused (set the version
back to 0003 and upgrade again, so that 0004 runs once more) runs this
revision again too: it then finds its work done and leaves it.

Written out in full, like the other revisions, so that it does the same
for ever; the number of rows is repeated in placement/storage/changes.py.
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

SHARDS = 64


def upgrade():
    columns = sa.inspect(op.get_bind()).get_columns(
        'placement_provider_changes')
    if any(column['name'] == 'shard' for column in columns):
        return
    op.add_column('placement_provider_changes',
                  sa.Column('shard', sa.Integer(), nullable=False,
                            server_default='1'))
    op.drop_index('placement_provider_changes_stamp_idx',
                  table_name='placement_provider_changes')
    op.create_index('placement_provider_changes_shard_stamp_idx',
                    'placement_provider_changes', ['shard', 'stamp'])
    insert = sa.text(
        'INSERT INTO placement_change_stamp '
        '(id, stamp, pruned_below, epoch, own_write) '
        'SELECT :shard, 0, 0, epoch, 0 FROM placement_change_stamp '
        'WHERE id = 1')
    for shard in range(2, SHARDS + 1):
        op.execute(insert.bindparams(shard=shard))
