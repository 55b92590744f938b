"""Writes this service did not make reach the change log too.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

Every write transaction of this service logs what it changed (see
placement/storage/changes.py), but an operator's SQL, upstream Placement
sharing the database during a migration, or a script emptying tables
logs nothing, and the in-memory candidate state would keep answering
from before them.  Triggers on every table that state is read from
therefore log such a write as EVERYTHING (provider id -1) under a new
stamp, so the next search reloads whole.

They fire only for writes that are not this service's, told apart
without a round trip per request:

- PostgreSQL: our connections set ``placement.writer = 'on'`` when
  opened; a foreign transaction is logged once, at its commit (deferred
  constraint triggers and a transaction-local setting), and TRUNCATE is
  caught by statement triggers.
- MariaDB/MySQL: our connections set ``@placement_writer = 1`` when
  opened; a foreign write is logged per row, as it is made (MySQL has
  neither deferred triggers nor transaction scoped variables), and a
  TRUNCATE fires no trigger at all.
- SQLite: a foreign connection would not have any function of ours, so
  our write transactions (serialised, they start with BEGIN IMMEDIATE)
  set the stamp row's own_write (revision 0003) first and clear it
  just before commit; the triggers fire only while it is clear.

A MariaDB server with binary logging refuses CREATE TRIGGER to a user
without SUPER unless log_bin_trust_function_creators is on: the upgrade
then goes on without the triggers and says so loudly (the service is
exact for its own writes only, as before this revision).  This revision
creates triggers only, so that it can be applied again once the server
allows them (README.rst, "Writes made by anything else").

Written out in full, like the other revisions, so that it does the same
for ever; the setting names are repeated in placement/storage/engine.py
and placement/storage/changes.py.
"""

import logging

from alembic import op
from sqlalchemy import exc as sa_exc

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

LOG = logging.getLogger('alembic.runtime.migration')

# The tables the in-memory candidate state is read from.
TABLES = ('resource_providers', 'inventories', 'allocations',
          'resource_provider_traits', 'resource_provider_aggregates',
          'placement_aggregates', 'resource_classes', 'traits')
OPERATIONS = ('insert', 'update', 'delete')
# resource_providers columns the state holds: a foreign update of only
# others (a generation bump, a rename, timestamps) changes no candidate.
PROVIDER_COLUMNS = ('id', 'uuid', 'parent_provider_id', 'root_provider_id')

# The statements every trigger runs: a new stamp, EVERYTHING under it.
_LOG_EVERYTHING = (
    'UPDATE placement_change_stamp SET stamp = stamp + 1 WHERE id = 1; '
    'INSERT INTO placement_provider_changes (stamp, provider_id) '
    'SELECT stamp, -1 FROM placement_change_stamp WHERE id = 1;')

# MySQL errors that mean "not allowed to create triggers": binary logging
# without SUPER (1419), no TRIGGER privilege (1142).
_MYSQL_REFUSED = (1419, 1142)


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


def _provider_moved(old_new_differ):
    """SQL true when an update changed a column the state holds."""
    return ' OR '.join(old_new_differ % (column, column)
                       for column in PROVIDER_COLUMNS)


def _postgresql_triggers():
    op.execute(
        "CREATE FUNCTION placement_log_foreign_write() RETURNS trigger "
        "LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN "
        "IF current_setting('placement.writer', true) IS DISTINCT FROM 'on' "
        "AND current_setting('placement.foreign_logged', true) "
        "IS DISTINCT FROM 'on' THEN " + _LOG_EVERYTHING +
        " PERFORM set_config('placement.foreign_logged', 'on', true); "
        "END IF; RETURN NULL; END $$")
    foreign = ("current_setting('placement.writer', true) "
               "IS DISTINCT FROM 'on'")
    for table in TABLES:
        for operation in OPERATIONS:
            when = foreign
            if table == 'resource_providers' and operation == 'update':
                when += ' AND (%s)' % _provider_moved(
                    'OLD.%s IS DISTINCT FROM NEW.%s')
            # Deferred to commit, so that a foreign transaction takes the
            # stamp's row lock last, as ours do, and in the same order.
            op.execute(
                'CREATE CONSTRAINT TRIGGER %s AFTER %s ON %s '
                'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (%s) '
                'EXECUTE PROCEDURE placement_log_foreign_write()'
                % (_trigger_name(table, operation), operation.upper(),
                   table, when))
        op.execute(
            'CREATE TRIGGER %s AFTER TRUNCATE ON %s FOR EACH STATEMENT '
            'EXECUTE PROCEDURE placement_log_foreign_write()'
            % (_trigger_name(table, 'truncate'), table))


def _mysql_triggers():
    made = []
    for table in TABLES:
        for operation in OPERATIONS:
            condition = '@placement_writer IS NULL'
            if table == 'resource_providers' and operation == 'update':
                condition += ' AND (%s)' % _provider_moved(
                    'NOT (OLD.%s <=> NEW.%s)')
            name = _trigger_name(table, operation)
            try:
                op.execute(
                    'CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW '
                    'BEGIN IF %s THEN %s END IF; END'
                    % (name, operation.upper(), table, condition,
                       _LOG_EVERYTHING))
            except sa_exc.DBAPIError as error:
                if error.orig.args[0] not in _MYSQL_REFUSED:
                    raise
                _mysql_refused(error, made)
                return
            made.append(name)


def _mysql_refused(error, made):
    """Undo the triggers made so far (a foreign write seen on some tables
    only would be worse than none) and say what is missing."""
    for name in made:
        op.execute('DROP TRIGGER %s' % name)
    LOG.warning(
        'The database refused to create triggers (%s). Placement stays '
        'exact for its own writes, but allocation candidates may answer '
        'from before writes made by anything else (SQL run by hand, '
        'another Placement service on the same database). See README.rst, '
        '"Writes made by anything else", for how to add the triggers '
        'later.', error.orig)


def _sqlite_triggers():
    for table in TABLES:
        for operation in OPERATIONS:
            when = ('NOT EXISTS (SELECT 1 FROM placement_change_stamp '
                    'WHERE id = 1 AND own_write = 1)')
            if table == 'resource_providers' and operation == 'update':
                when += ' AND (%s)' % _provider_moved(
                    'OLD.%s IS NOT NEW.%s')
            op.execute(
                'CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW WHEN %s '
                'BEGIN %s END'
                % (_trigger_name(table, operation), operation.upper(),
                   table, when, _LOG_EVERYTHING))
