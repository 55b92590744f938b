"""The change stamp row gains an identity and a mark for our writes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25

A database dropped and recreated under a running service restarts its
stamps at 0 (see placement/storage/changes.py): once the new stamp passes
the one a process last read, nothing in the numbers tells the two apart.
The stamp row therefore gains an epoch, random when the row is made; a
process that finds another one reads everything again.

own_write is 1 only inside this service's own write transactions on
SQLite, never committed so: revision 0004's triggers read it there to
tell those from writes by anything else.  A column of the row every write
rewrites anyway (a table of its own cost each write a page more, about
0.2 ms).  Made on every backend, so that all have one schema.
"""

import uuid

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('placement_change_stamp',
                  sa.Column('epoch', sa.String(length=36), nullable=True))
    op.add_column('placement_change_stamp',
                  sa.Column('own_write', sa.Integer(), nullable=True))
    op.execute(sa.text('UPDATE placement_change_stamp SET epoch = :epoch, '
                       'own_write = 0')
               .bindparams(epoch=str(uuid.uuid4())))
    with op.batch_alter_table('placement_change_stamp') as batch:
        batch.alter_column('epoch', existing_type=sa.String(length=36),
                           nullable=False)
        batch.alter_column('own_write', existing_type=sa.Integer(),
                           nullable=False)
