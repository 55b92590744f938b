"""Foreign writes to consumers and their owners reach the change log.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

Each process keeps the project usages it answered in memory
(placement/storage/project_usages.py) until the change log says that
project's usage moved.  A foreign write to ``allocations`` is logged
already (revision 0004); these triggers log one to ``consumers``,
``projects``, ``users`` or ``consumer_types`` too, as EVERYTHING: moving
a consumer to another project, or changing a project's external id, by
hand changes what a project uses without touching an allocation.

Where a MariaDB server refused revision 0004's triggers there are none
to complement, and this revision makes none either (the README's way
back runs it again with 0004).  Written out in full, like the other
revisions.
"""

import logging

from alembic import op
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

LOG = logging.getLogger('alembic.runtime.migration')

TABLES = ('consumers', 'projects', 'users', 'consumer_types')
OPERATIONS = ('insert', 'update', 'delete')
# How many triggers revision 0004 made on MySQL.
_MYSQL_0004_TRIGGERS = 24

_LOG_EVERYTHING = (
    'UPDATE placement_change_stamp SET stamp = stamp + 1 WHERE id = 1; '
    'INSERT INTO placement_provider_changes (stamp, provider_id) '
    'SELECT stamp, -1 FROM placement_change_stamp WHERE id = 1;')


def upgrade():
    dialect = op.get_bind().dialect.name
    if dialect == 'postgresql':
        _postgresql_triggers()
    elif dialect == 'mysql':
        _mysql_triggers()
    else:
        _sqlite_triggers()


def _trigger_name(table, operation):
    return 'placement_foreign_%s_%s' % (table, operation)


def _postgresql_triggers():
    """Revision 0004's function, the way 0004 calls it."""
    foreign = ("current_setting('placement.writer', true) "
               "IS DISTINCT FROM 'on'")
    for table in TABLES:
        for operation in OPERATIONS:
            op.execute(
                'CREATE CONSTRAINT TRIGGER %s AFTER %s ON %s '
                'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (%s) '
                'EXECUTE PROCEDURE placement_log_foreign_write()'
                % (_trigger_name(table, operation), operation.upper(),
                   table, foreign))
        op.execute(
            'CREATE TRIGGER %s AFTER TRUNCATE ON %s FOR EACH STATEMENT '
            'EXECUTE PROCEDURE placement_log_foreign_write()'
            % (_trigger_name(table, 'truncate'), table))


def _existing_mysql_triggers():
    return op.get_bind().scalars(sa.text(
        "SELECT trigger_name FROM information_schema.triggers WHERE "
        "trigger_schema = DATABASE() AND trigger_name LIKE "
        "'placement_foreign_%'")).all()


def _mysql_triggers():
    if len(_existing_mysql_triggers()) < _MYSQL_0004_TRIGGERS:
        return
    for table in TABLES:
        for operation in OPERATIONS:
            try:
                op.execute(
                    'CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW '
                    'BEGIN IF @placement_writer IS NULL THEN %s END IF; '
                    'END' % (_trigger_name(table, operation),
                             operation.upper(), table, _LOG_EVERYTHING))
            except sa_exc.DBAPIError as error:
                # The server allowed triggers when 0004 ran and no longer
                # does: none at all beats foreign writes seen on some
                # tables only.
                LOG.warning(
                    'The database refused to create a trigger (%s); the '
                    'others that log writes made by anything else are '
                    'dropped too. See README.rst, "Writes made by anything '
                    'else".', error.orig)
                for name in _existing_mysql_triggers():
                    op.execute('DROP TRIGGER %s' % name)
                return


def _sqlite_triggers():
    when = ('NOT EXISTS (SELECT 1 FROM placement_change_stamp '
            'WHERE id = 1 AND own_write = 1)')
    for table in TABLES:
        for operation in OPERATIONS:
            op.execute(
                'CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW WHEN %s '
                'BEGIN %s END'
                % (_trigger_name(table, operation), operation.upper(),
                   table, when, _LOG_EVERYTHING))
