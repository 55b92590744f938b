"""An empty database per test on each backend, for test cases written
the way consumers write theirs (testtools, not pytest fixtures): a
subclass per backend names it in ``backend``, and the test reads the
database's URL from ``self.connection``."""

import uuid

import pytest

from tests import conftest


def empty_database(backend, request, tmp_path):
    """An empty database on ``backend``: its URL, and a function that
    removes it (None for SQLite, whose file goes with ``tmp_path``)."""
    name = 'consumer_%s' % uuid.uuid4().hex
    if backend == 'sqlite':
        return 'sqlite:///%s' % (tmp_path / 'nova-placement.sqlite'), None
    if backend == 'postgresql':
        cluster = request.getfixturevalue('postgres')
        cluster.create_database(name)
        return cluster.url(name), lambda: cluster.drop_database(name)
    server = request.getfixturevalue('mariadb')
    server.create_database(name)
    return server.url(name), lambda: server.execute(
        'DROP DATABASE IF EXISTS %s' % name)


class OnEachBackend:
    """Mixin giving each test ``self.connection``, an empty database on
    ``self.backend``; skipped when ``--backend`` leaves that one out."""

    backend = None

    @pytest.fixture(autouse=True)
    def _database(self, request, tmp_path):
        if self.backend not in (request.config.getoption('backend')
                                or conftest.BACKENDS):
            pytest.skip('backend %s not selected' % self.backend)
        self.connection, drop = empty_database(self.backend, request,
                                               tmp_path)
        yield
        if drop:
            drop()
