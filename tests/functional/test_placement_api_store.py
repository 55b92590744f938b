"""placement-api's workers keep their answers in one store of the host.

With more than one worker, ``cmd/api.py`` has the workers it forks keep
the answers they give (``state.kept_answers``) in the host's store
(``state.answer_store``), a file each maps; with one there is nothing to
share.  ``test_wsgi_servers`` checks the same of uwsgi and mod_wsgi.
"""

from tests import processes
from tests.functional import server
from tests.functional.test_wsgi_servers import _stores_mapped


def _allocations_path(port):
    """The allocations path of a provider made for the test."""
    status, _, body = server.exchange(port, 'POST', '/resource_providers',
                                      {'name': 'kept'})
    assert status == 200, body
    return '/resource_providers/%s/allocations' % body['uuid']


def _mapped_after_asking(port, process, path, workers):
    """Each worker's stores mapped, once every one of them has answered
    ``path`` (at most 50 rounds of asking)."""
    stores = {}
    for _ in range(50):
        for _ in range(10):
            status, _, body = server.exchange(port, 'GET', path)
            assert status == 200, body
        stores = {pid: _stores_mapped(pid)
                  for pid in processes.children_of(process.pid)}
        if len(stores) == workers and all(stores.values()):
            break
    return stores


def test_the_workers_of_placement_api_share_one_store(database_url,
                                                      tmp_path):
    with server.started(database_url, tmp_path, workers=2) as (port,
                                                               process):
        stores = _mapped_after_asking(port, process,
                                      _allocations_path(port), 2)
    assert len(stores) == 2, stores
    assert len(set(stores.values())) == 1, stores
    assert len(next(iter(stores.values()))) == 1, stores


def test_one_worker_keeps_its_answers_in_its_own_memory(database_url,
                                                        tmp_path):
    with server.started(database_url, tmp_path, workers=1) as (port,
                                                               process):
        path = _allocations_path(port)
        for _ in range(5):
            assert server.exchange(port, 'GET', path)[0] == 200
        pids = [process.pid] + processes.children_of(process.pid)
        assert {pid: _stores_mapped(pid) for pid in pids} == {
            pid: frozenset() for pid in pids}
