"""The session settings every MySQL/MariaDB connection gets, from
[placement_database] (the options upstream reads through oslo.db)."""

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import engine
from placement.storage import tables

pytestmark = pytest.mark.backends('mysql')


def _session(db, variable):
    with db.engine.connect() as conn:
        return conn.exec_driver_sql('SELECT @@SESSION.%s' % variable).scalar()


def test_traditional_sql_mode_by_default(db):
    mode = _session(db, 'sql_mode').split(',')
    assert 'STRICT_ALL_TABLES' in mode and 'STRICT_TRANS_TABLES' in mode


def test_a_value_too_long_is_an_error_not_a_truncation(db):
    with pytest.raises(sa_exc.DataError):
        with db.engine.begin() as conn:
            conn.execute(tables.placement_aggregates.insert().values(
                uuid='x' * 37))


def test_sql_mode_is_configurable(database_url):
    db = engine.Database(engine.create_engine(
        database_url, mysql_sql_mode='ANSI_QUOTES'))
    try:
        assert _session(db, 'sql_mode') == 'ANSI_QUOTES'
        with db.engine.connect() as conn:
            # Double quotes now name a column, not a string.
            with pytest.raises(sa_exc.OperationalError):
                conn.execute(sa.text('SELECT "x"'))
    finally:
        db.dispose()


def test_wsrep_sync_wait_is_set_when_configured(database_url):
    db = engine.Database(engine.create_engine(database_url,
                                              mysql_wsrep_sync_wait=1))
    try:
        assert int(_session(db, 'wsrep_sync_wait')) == 1
    finally:
        db.dispose()
