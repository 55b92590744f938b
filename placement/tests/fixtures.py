"""``Database``: a migrated database holding only the standard names, for
one test of another project's suite.

Its database is the configured ``[placement_database] connection`` when
one is set (nova points it at a per-test SQLite file), else a fresh SQLite
file of its own, removed afterwards. Either way it is migrated and given
the standard resource classes and traits, and the ``engine.Database``
serving it is recorded against the configuration, so every
``PlacementFixture`` built on that configuration serves the same database
through the same engine (and the same in-memory candidates state).
"""

import os
import shutil
import tempfile
import threading
import weakref

import fixtures

from placement.conf import database as database_conf
from placement.storage import engine
from placement.storage import migration
from placement.storage import standard_sync

# The engine.Database of each configuration a Database fixture is set up
# on, by id() (ConfigOpts objects cannot be hashed).  An entry goes at the
# fixture's cleanup, or when its configuration is collected: Python gives
# a dead object's id to a new one, and a configuration thrown away
# without the cleanup must not hand its database to its successor.
_DATABASES = {}

_template_lock = threading.Lock()
_template_bytes = None


def database_for(conf):
    """The ``engine.Database`` a ``Database`` fixture set up for ``conf``,
    or None."""
    return _DATABASES.get(id(conf))


def serving_database(conf, fixture):
    """The engine a fixture serving ``conf`` uses: the one a ``Database``
    fixture set up for ``conf``, so that every fixture on a configuration
    shares its data and its candidates state, else one of its own on the
    configured connection, disposed at ``fixture``'s cleanup."""
    db = database_for(conf)
    if db is None:
        db = engine.Database.from_conf(conf)
        fixture.addCleanup(db.dispose)
    return db


def _migrate(db):
    migration.upgrade(db.engine)
    db.write(standard_sync.sync_all)


def _template():
    """The bytes of a migrated, synced SQLite database, made once per
    process: writing them out is far quicker than migrating each test's
    database from nothing.

    Kept in memory, not as a file: consumers' test cases
    (``oslotest.base.BaseTestCase``'s ``NestedTempfile``) point
    ``tempfile`` at a directory of each test's own and remove it when the
    test ends, so no file made during one test can be counted on by the
    next.  The scratch directory it is made in is removed at once.
    """
    global _template_bytes
    with _template_lock:
        if _template_bytes is None:
            directory = tempfile.mkdtemp(prefix='placement-template-')
            try:
                path = os.path.join(directory, 'template.sqlite')
                db = engine.Database(engine.create_engine('sqlite:///' + path))
                _migrate(db)
                db.dispose()   # checkpoints the WAL into the file
                with open(path, 'rb') as template:
                    _template_bytes = template.read()
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        return _template_bytes


class Database(fixtures.Fixture):
    """A database for one test, migrated and with the standard names.

    ``conf_fixture`` is an ``oslo_config.fixture.Config``. With
    ``set_config`` the database's URL is written to its
    ``[placement_database] connection``, for code that reads it there.
    """

    def __init__(self, conf_fixture, set_config=False):
        super().__init__()
        self.conf_fixture = conf_fixture
        self.set_config = set_config

    def _setUp(self):
        conf = self.conf_fixture.conf
        database_conf.register_opts(conf)
        fresh = (None if conf.placement_database.connection
                 else self._fresh_sqlite())
        if fresh and self.set_config:
            self.conf_fixture.config(group='placement_database',
                                     connection=fresh)
        self.db = engine.Database.from_conf(conf, fresh)
        self.addCleanup(self.db.dispose)
        _migrate(self.db)
        _DATABASES[id(conf)] = self.db
        self.addCleanup(_DATABASES.pop, id(conf), None)
        weakref.finalize(conf, _DATABASES.pop, id(conf), None)

    def _fresh_sqlite(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 'placement.sqlite')
        with open(path, 'wb') as fresh:
            fresh.write(_template())
        return 'sqlite:///' + path
