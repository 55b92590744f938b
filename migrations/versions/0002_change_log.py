"""The change log that keeps in-memory candidate state exact.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24

Two tables of this service's own (upstream has neither; a database
adopted from upstream gains them here): a single-row stamp that every
write transaction advances at its end, and the providers each stamp
changed.  See placement/storage/changes.py.
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    stamp = op.create_table(
        'placement_change_stamp',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('stamp', sa.BigInteger(), nullable=False),
        sa.Column('pruned_below', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_placement_change_stamp')),
    )
    op.bulk_insert(stamp, [{'id': 1, 'stamp': 0, 'pruned_below': 0}])
    op.create_table(
        'placement_provider_changes',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  nullable=False),
        sa.Column('stamp', sa.BigInteger(), nullable=False),
        sa.Column('provider_id', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id',
                                name=op.f('pk_placement_provider_changes')),
    )
    op.create_index('placement_provider_changes_stamp_idx',
                    'placement_provider_changes', ['stamp'])
