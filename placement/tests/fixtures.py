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

import atexit
import shutil
import tempfile
import threading

import fixtures

from placement.conf import database as database_conf
from placement.storage import engine
from placement.storage import migration
from placement.storage import standard_sync

# The engine.Database of each configuration a Database fixture is set up
# on, by id() (ConfigOpts objects cannot be hashed); removed at cleanup.
_DATABASES = {}

_template_lock = threading.Lock()
_template_path = None


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
    """A migrated, synced SQLite file made once per process: copying it is
    far quicker than migrating each test's database from nothing."""
    global _template_path
    with _template_lock:
        if _template_path is None:
            directory = tempfile.mkdtemp(prefix='placement-template-')
            atexit.register(shutil.rmtree, directory, True)
            path = '%s/template.sqlite' % directory
            db = engine.Database(engine.create_engine('sqlite:///' + path))
            _migrate(db)
            db.dispose()   # checkpoints the WAL into the file
            _template_path = path
        return _template_path


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

    def _fresh_sqlite(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = '%s/placement.sqlite' % directory
        shutil.copyfile(_template(), path)
        return 'sqlite:///' + path
