"""The initial schema: upstream Placement's tables, with foreign keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op

from placement.storage import tables

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

# Creation order respects foreign keys.
_TABLES = (
    'resource_classes', 'resource_providers', 'inventories', 'allocations',
    'placement_aggregates', 'resource_provider_aggregates', 'traits',
    'resource_provider_traits', 'projects', 'users', 'consumer_types',
    'consumers',
)


def upgrade():
    # The first revision creates the tables as ``tables`` describes them
    # today; later revisions must spell out their changes with op.* calls
    # instead of reading ``tables``, so that history stays fixed.
    bind = op.get_bind()
    for name in _TABLES:
        tables.metadata.tables[name].create(bind, checkfirst=False)
