"""The change log records its protocol; API processes record theirs.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

Revision 0005 changed how writes are logged (one stamp row became 64),
and a process started before it kept reading row 1 alone until it was
restarted: its answers could miss writes.  From here on the stamp rows
carry the protocol their writers follow (2: the 64 shards), and every
reader compares it with its own before it trusts the log.  A later
revision that changes the log raises the number, and processes still
running this code then read the tables again instead of trusting a log
they no longer understand (placement/storage/changes.py).

``placement_api_processes`` lists the API processes that read the log,
with their protocol and when they last read it, so that
``placement-status upgrade check`` can name the ones a raised protocol
left behind.

Done already when a database is synced again from an earlier revision
(the README's way back from triggers a MariaDB server refused), and then
left alone.  Written out in full, like the other revisions.
"""

from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    inspector = sa.inspect(op.get_bind())
    columns = inspector.get_columns('placement_change_stamp')
    if not any(column['name'] == 'protocol' for column in columns):
        op.add_column('placement_change_stamp',
                      sa.Column('protocol', sa.Integer(), nullable=False,
                                server_default='2'))
    if 'placement_api_processes' in inspector.get_table_names():
        return
    op.create_table(
        'placement_api_processes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('protocol', sa.Integer(), nullable=False),
        sa.Column('release', sa.String(64), nullable=False),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('seen_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id',
                                name=op.f('pk_placement_api_processes')))
    op.create_index('placement_api_processes_seen_at_idx',
                    'placement_api_processes', ['seen_at'])
