"""The change log names a tree's root when a provider joins the tree.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28

A process now keeps the listing of a provider tree (nova's ``GET
/resource_providers?in_tree=``) until the change log names one of the
tree's providers (placement/state/listing.py).  A provider created in a
tree, or moved into one, was logged alone, and it is in no listing kept
before it came: writers now log the tree's root with it.  Writers of the
release before do not, so a listing kept by a process of this release
would miss a child they create: protocol 3 says that every writer logs
the root, and processes of the release before, meeting it, read the
tables again rather than trust the log (placement/storage/changes.py).

Done already when the rows follow protocol 3 or later, and then left
alone.
"""

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    op.execute('UPDATE placement_change_stamp SET protocol = 3 '
               'WHERE protocol < 3')
