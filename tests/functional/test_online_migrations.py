"""``placement-manage db online_data_migrations`` on the data upstream's
releases before Stein left behind, while the API serves it.

The data is written as upstream left it, by SQL outside this service:
providers without a root id (some the roots of trees, one nested under
another that lacks one), allocations whose consumers have no record.
Each test then reads through the API (the same process and state a
serving worker keeps) before and after the command.
"""

import re

import pytest
import sqlalchemy as sa

from placement.cmd import manage
from placement.cmd import status
from placement.storage import online_migrations
from placement.storage import tables

INCOMPLETE = '00000000-0000-0000-0000-000000000000'
VCPU = 0
ROOTS = ['%08d-0000-4000-8000-000000000000' % n for n in (1, 2, 3)]
CHILD = '%08d-0000-4000-8000-000000000000' % 4
GRANDCHILD = '%08d-0000-4000-8000-000000000000' % 5
ORPHANS = ['c%07d-0000-4000-8000-000000000000' % n for n in (1, 2, 3)]


@pytest.fixture
def unmigrated(foreign):
    """Three parentless providers without a root id, the first with a
    child and a grandchild that lack one too, 8 VCPU on each root and 8 on
    the grandchild; three consumers without a record, the first holding
    on two roots (rows of two allocations)."""
    rp = tables.resource_providers
    with foreign.begin() as conn:
        for number, uuid in enumerate(ROOTS, 1):
            conn.execute(rp.insert().values(id=number, uuid=uuid,
                                            name='cn%d' % number,
                                            generation=1))
        conn.execute(rp.insert().values(id=4, uuid=CHILD, name='numa',
                                        generation=1, parent_provider_id=1))
        conn.execute(rp.insert().values(id=5, uuid=GRANDCHILD, name='pf',
                                        generation=1, parent_provider_id=4))
        for provider in (1, 2, 3, 5):
            conn.execute(tables.inventories.insert().values(
                resource_provider_id=provider, resource_class_id=VCPU,
                total=8, reserved=0, min_unit=1, max_unit=8, step_size=1,
                allocation_ratio=1.0))
        conn.execute(tables.allocations.insert(), [
            {'resource_provider_id': 1, 'consumer_id': ORPHANS[0],
             'resource_class_id': VCPU, 'used': 2},
            {'resource_provider_id': 2, 'consumer_id': ORPHANS[0],
             'resource_class_id': VCPU, 'used': 1},
            {'resource_provider_id': 2, 'consumer_id': ORPHANS[1],
             'resource_class_id': VCPU, 'used': 3},
            {'resource_provider_id': 3, 'consumer_id': ORPHANS[2],
             'resource_class_id': VCPU, 'used': 4}])


def _migrate(config_file, capsys, *args):
    """(exit status, {migration: (found, completed)} from its table)."""
    code = manage.main(['--config-file', config_file, 'db',
                        'online_data_migrations', *args])
    rows = re.findall(r'^\|\s*(\w+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|$',
                      capsys.readouterr().out, re.MULTILINE)
    return code, {name: (int(found), int(done))
                  for name, found, done in rows}


def _roots(foreign):
    with foreign.connect() as conn:
        return dict(conn.execute(sa.select(
            tables.resource_providers.c.uuid,
            tables.resource_providers.c.root_provider_id)).all())


def test_a_limited_batch_says_more_may_be_left_until_nothing_is(
        unmigrated, config_file, capsys, foreign):
    code, counts = _migrate(config_file, capsys, '--max-count', '2')
    # Two roots at most, and no budget left for the consumers.
    assert (code, counts) == (1, {'set_root_provider_ids': (2, 2)})
    code, counts = _migrate(config_file, capsys, '--max-count', '2')
    # The third root and the child (whose parent has its root now).
    assert (code, counts) == (1, {'set_root_provider_ids': (2, 2)})
    code, counts = _migrate(config_file, capsys, '--max-count', '4')
    assert (code, counts) == (1, {'set_root_provider_ids': (1, 1),
                                  'create_incomplete_consumers': (3, 3)})
    code, counts = _migrate(config_file, capsys, '--max-count', '4')
    assert (code, counts) == (0, {'set_root_provider_ids': (0, 0),
                                  'create_incomplete_consumers': (0, 0)})
    assert set(_roots(foreign).values()) == {1, 2, 3}


def test_unlimited_runs_batches_until_done(unmigrated, config_file, capsys,
                                           foreign):
    code, counts = _migrate(config_file, capsys)
    # The grandchild is found twice: in the first batch its parent had no
    # root yet, so only the second could give it one.
    assert (code, counts) == (0, {'set_root_provider_ids': (6, 5),
                                  'create_incomplete_consumers': (3, 3)})
    assert _roots(foreign) == {ROOTS[0]: 1, ROOTS[1]: 2, ROOTS[2]: 3,
                               CHILD: 1, GRANDCHILD: 1}
    consumers = tables.consumers
    with foreign.connect() as conn:
        made = conn.execute(
            sa.select(consumers.c.uuid, tables.projects.c.external_id,
                      tables.users.c.external_id, consumers.c.generation,
                      consumers.c.consumer_type_id)
            .select_from(consumers.join(
                tables.projects,
                consumers.c.project_id == tables.projects.c.id)
                .join(tables.users,
                      consumers.c.user_id == tables.users.c.id))).all()
    assert sorted(tuple(row) for row in made) == [
        (uuid, INCOMPLETE, INCOMPLETE, 0, None) for uuid in ORPHANS]


def test_the_placeholder_project_and_user_are_configurable(
        unmigrated, config_file, capsys, foreign):
    with open(config_file, 'a') as handle:
        handle.write('[placement]\nincomplete_consumer_project_id = legacy-p'
                     '\nincomplete_consumer_user_id = legacy-u\n')
    assert _migrate(config_file, capsys)[0] == 0
    with foreign.connect() as conn:
        assert conn.execute(sa.select(
            tables.projects.c.external_id, tables.users.c.external_id)
            .select_from(tables.consumers.join(
                tables.projects,
                tables.consumers.c.project_id == tables.projects.c.id)
                .join(tables.users,
                      tables.consumers.c.user_id == tables.users.c.id))
            .distinct()).all() == [('legacy-p', 'legacy-u')]


def test_a_failing_migration_is_status_2_unless_a_limited_batch_did_work(
        unmigrated, config_file, capsys, monkeypatch):
    def broken(conn, count, conf):
        raise RuntimeError('broken on purpose')

    monkeypatch.setattr(online_migrations, 'MIGRATIONS',
                        online_migrations.MIGRATIONS + (broken,))
    # The limited batch did something: what it did may unblock the other.
    code, counts = _migrate(config_file, capsys, '--max-count', '10')
    assert code == 1
    assert counts['broken'] == (0, 0)
    code, counts = _migrate(config_file, capsys)
    assert code == 2


def test_upgrade_check_names_what_is_left_until_it_is_done(
        unmigrated, config_file, capsys):
    code = status.main(['--config-file', config_file, 'upgrade', 'check'])
    out = capsys.readouterr().out
    assert code == status.FAILURE
    assert 'There are 5 resource providers without a root' in out
    assert 'There are 3 consumers holding allocations without a' in out
    _migrate(config_file, capsys)
    assert status.main(['--config-file', config_file, 'upgrade',
                        'check']) == status.SUCCESS


def test_the_api_serves_the_data_before_and_after_exactly(
        unmigrated, client, config_file, capsys):
    """A missing root reads as the provider itself (what the migration
    writes for a root); after the migration the nested providers join
    their tree, and the orphaned allocations their placeholder consumer:
    each answer, from memory or from SQL, as a fresh read gives it."""
    def tree(uuid):
        return sorted(rp['uuid'] for rp in client.get(
            '/resource_providers?in_tree=%s' % uuid).json[
                'resource_providers'])

    def root_of(uuid):
        return client.get('/resource_providers/%s' % uuid).json[
            'root_provider_uuid']

    def candidates():
        body = client.get('/allocation_candidates?resources=VCPU:2').json
        return sorted(body['provider_summaries'])

    def incomplete_usage():
        return client.get('/usages?project_id=%s' % INCOMPLETE,
                          version='1.37').json['usages']

    assert [root_of(uuid) for uuid in ROOTS] == ROOTS
    assert tree(ROOTS[0]) == [ROOTS[0]]
    assert tree(GRANDCHILD) == [GRANDCHILD]
    assert candidates() == sorted(ROOTS + [GRANDCHILD])
    assert incomplete_usage() == {}
    usage = client.get('/resource_providers/%s/usages' % ROOTS[1]).json
    assert usage['usages'] == {'VCPU': 4}
    assert client.get('/allocations/%s' % ORPHANS[1]).json[
        'allocations'] == {}

    assert _migrate(config_file, capsys)[0] == 0

    assert [root_of(uuid) for uuid in ROOTS] == ROOTS
    assert tree(ROOTS[0]) == sorted([ROOTS[0], CHILD, GRANDCHILD])
    assert root_of(GRANDCHILD) == ROOTS[0]
    # The grandchild is no tree of its own now: a request for VCPU finds
    # it in its root's tree.
    assert candidates() == sorted(ROOTS + [CHILD, GRANDCHILD])
    assert incomplete_usage() == {'VCPU': 10}
    allocations = client.get('/allocations/%s' % ORPHANS[1]).json
    assert allocations == {
        'allocations': {ROOTS[1]: {'resources': {'VCPU': 3},
                                   'generation': 1}},
        'consumer_generation': 0, 'consumer_type': 'unknown',
        'project_id': INCOMPLETE, 'user_id': INCOMPLETE}
    # A client can take the consumer over from here, at generation 0.
    client.put('/allocations/%s' % ORPHANS[1], json={
        'allocations': {ROOTS[1]: {'resources': {'VCPU': 1}}},
        'consumer_generation': 0, 'project_id': 'p', 'user_id': 'u',
        'consumer_type': 'INSTANCE'}, status=204)
    assert incomplete_usage() == {'VCPU': 7}


def test_db_sync_says_what_is_left(unmigrated, config_file, capsys):
    assert manage.main(['--config-file', config_file, 'db', 'sync']) == 0
    assert ('Data upstream left to its online migrations: 5 resource '
            'provider(s) without a root provider id; 3 consumer(s) holding '
            'allocations without a consumer record. Run "placement-manage '
            'db online_data_migrations".' in capsys.readouterr().out)
