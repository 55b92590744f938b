"""Every foreign update of a resource provider reaches the change log.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

Revision 0004 logged a foreign UPDATE of resource_providers only when it
moved the provider (id, uuid, parent or root): a generation bump, a
rename or a new updated_at alone changed no allocation candidate.  But
the in-memory state answers more than candidates (the provider listing
shows names and generations, and per-provider reads follow), so those
columns must not go stale either: the trigger for that update is made
again without the column condition, on every backend.

Where a MariaDB server refused revision 0004's triggers there is none to
replace, and this revision leaves it so.  Written out in full, like the
other revisions.
"""

import logging

from alembic import op
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

LOG = logging.getLogger('alembic.runtime.migration')

NAME = 'placement_foreign_resource_providers_update'
_LOG_EVERYTHING = (
    'UPDATE placement_change_stamp SET stamp = stamp + 1 WHERE id = 1; '
    'INSERT INTO placement_provider_changes (stamp, provider_id) '
    'SELECT stamp, -1 FROM placement_change_stamp WHERE id = 1;')


def upgrade():
    dialect = op.get_bind().dialect.name
    if dialect == 'postgresql':
        op.execute('DROP TRIGGER %s ON resource_providers' % NAME)
        op.execute(
            'CREATE CONSTRAINT TRIGGER %s AFTER UPDATE ON resource_providers '
            'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN '
            "(current_setting('placement.writer', true) "
            "IS DISTINCT FROM 'on') "
            'EXECUTE PROCEDURE placement_log_foreign_write()' % NAME)
    elif dialect == 'mysql':
        _mysql_trigger()
    else:
        op.execute('DROP TRIGGER %s' % NAME)
        op.execute(
            'CREATE TRIGGER %s AFTER UPDATE ON resource_providers FOR EACH '
            'ROW WHEN NOT EXISTS (SELECT 1 FROM placement_change_stamp '
            'WHERE id = 1 AND own_write = 1) BEGIN %s END'
            % (NAME, _LOG_EVERYTHING))


def _mysql_trigger():
    exists = op.get_bind().scalar(sa.text(
        'SELECT COUNT(*) FROM information_schema.triggers WHERE '
        'trigger_schema = DATABASE() AND trigger_name = :name'),
        {'name': NAME})
    if not exists:
        return
    op.execute('DROP TRIGGER %s' % NAME)
    try:
        op.execute(
            'CREATE TRIGGER %s AFTER UPDATE ON resource_providers FOR EACH '
            'ROW BEGIN IF @placement_writer IS NULL THEN %s END IF; END'
            % (NAME, _LOG_EVERYTHING))
    except sa_exc.DBAPIError as error:
        # The server allowed triggers when 0004 ran and no longer does:
        # none at all beats foreign writes seen on some tables only.
        LOG.warning('The database refused to create a trigger (%s); the '
                    'others that log writes made by anything else are '
                    'dropped too. See README.rst, "Writes made by anything '
                    'else".', error.orig)
        names = op.get_bind().scalars(sa.text(
            "SELECT trigger_name FROM information_schema.triggers WHERE "
            "trigger_schema = DATABASE() AND trigger_name LIKE "
            "'placement_foreign_%'")).all()
        for name in names:
            op.execute('DROP TRIGGER %s' % name)
