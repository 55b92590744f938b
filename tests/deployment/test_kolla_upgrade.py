"""An upstream database, left with unmigrated data, upgraded by kolla.

A deployment that ran upstream Placement long ago may still hold data
that upstream's online data migrations were meant to fix: providers
without ``root_provider_id`` and allocations whose consumer has no
``consumers`` row, recorded at the first upstream revision
(``b4ed3a175331``, before the two that refuse such data).  Here upstream
openstack-placement 16.0.0 fills the database through its API, served in
kolla's placement-api container (kolla's scripts, kolla-ansible's
configuration: ``kolla.py``), the way ``tools/adopt_upstream_database.py``
fills it (its ``fill``); the database is then put back to that older
state: the parentless providers' ``root_provider_id`` set to NULL, two
consumers' rows deleted (their allocations kept), and the schema at
``b4ed3a175331`` (``consumer_types`` and ``consumers.consumer_type_id``
of ``422ece571366`` dropped, the indexes ``a082b8bb98d0`` dropped made
again).

kolla's bootstrap container with this service then runs ``db sync`` and
``db online_data_migrations``: it must exit 0 and leave every root set
and every allocation's consumer recorded, under upstream's placeholder
project and user (``[placement] incomplete_consumer_project_id`` and
``incomplete_consumer_user_id``, which kolla's placement.conf leaves at
their defaults).  Then the placement_api container serves it, and every
read (providers, trees, inventories, usages, allocations, traits,
aggregates, allocation candidates) must answer exactly as upstream
16.0.0 answers, served in the same container on the same repaired
database.
"""

import importlib.util
import pathlib

import pytest

from tests.deployment import kolla

ROOT = pathlib.Path(__file__).parents[2]
PLACEHOLDER = '00000000-0000-0000-0000-000000000000'
UPSTREAM_FIRST_REVISION = 'b4ed3a175331'
# a082b8bb98d0 dropped these (upstream's b4ed3a175331 made them).
REDUNDANT_INDEXES = (
    ('inventories_resource_provider_id_idx', 'inventories',
     'resource_provider_id'),
    ('inventories_resource_provider_resource_class_idx', 'inventories',
     'resource_provider_id, resource_class_id'),
    ('ix_placement_aggregates_uuid', 'placement_aggregates', 'uuid'),
    ('resource_providers_name_idx', 'resource_providers', 'name'),
    ('resource_providers_uuid_idx', 'resource_providers', 'uuid'),
)


@pytest.fixture(scope='module')
def adopt():
    """``tools/adopt_upstream_database.py``: its ``fill``, ``snapshot``
    and ``compare``."""
    spec = importlib.util.spec_from_file_location(
        '_adopt_upstream_database',
        ROOT / 'tools' / 'adopt_upstream_database.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _age(mariadb, database, orphaned):
    """Make ``database`` (upstream 16.0.0's) look as an older upstream
    one left it: see the module's docstring."""
    consumers = ', '.join("'%s'" % uuid for uuid in orphaned)
    mariadb.execute(
        'UPDATE resource_providers SET root_provider_id = NULL '
        'WHERE parent_provider_id IS NULL',
        'DELETE FROM consumers WHERE uuid IN (%s)' % consumers,
        'ALTER TABLE consumers DROP FOREIGN KEY '
        'consumers_consumer_type_id_fkey',
        'ALTER TABLE consumers DROP INDEX consumers_consumer_type_id_idx',
        'ALTER TABLE consumers DROP COLUMN consumer_type_id',
        'DROP TABLE consumer_types',
        *['CREATE INDEX %s ON %s (%s)' % index
          for index in REDUNDANT_INDEXES],
        "UPDATE alembic_version SET version_num = '%s'"
        % UPSTREAM_FIRST_REVISION,
        database=database)


def _state(mariadb, database, orphaned):
    """(parentless providers without a root, {orphaned consumer: (its
    project's external id, its user's)} for those with a row)."""
    rootless = mariadb.execute(
        'SELECT COUNT(*) FROM resource_providers '
        'WHERE root_provider_id IS NULL', database=database)[0][0]
    rows = mariadb.execute(
        'SELECT c.uuid, p.external_id, u.external_id FROM consumers c '
        'JOIN projects p ON p.id = c.project_id '
        'JOIN users u ON u.id = c.user_id WHERE c.uuid IN (%s)'
        % ', '.join("'%s'" % uuid for uuid in orphaned), database=database)
    return rootless, {row[0]: (row[1], row[2]) for row in rows}


def _reads(adopt, port):
    client = adopt.Client(port)
    found = adopt.snapshot(client)
    for path, versions in (
            ('/usages?project_id=%s' % PLACEHOLDER, ('1.9', '1.38')),
            ('/usages?project_id=%s&user_id=%s' % (PLACEHOLDER, PLACEHOLDER),
             ('1.9', '1.38')),
            ('/resource_providers?in_tree=%s' % adopt.SHARED,
             ('1.14', '1.38')),
            ('/allocation_candidates?resources=VCPU:1,DISK_GB:10'
             '&member_of=%s' % adopt.AGG, ('1.21', '1.38'))):
        for version in versions:
            found['%s @%s' % (path, version)] = client.call(
                'GET', path, version=version)
    for consumer in (adopt.INSTANCE2, adopt.MIGRATION):
        found['/allocations/%s @1.12' % consumer] = client.call(
            'GET', '/allocations/%s' % consumer, version='1.12')
    return found


def test_upstream_database_upgraded_by_kolla_bootstrap(
        kolla_image, deployment_mariadb, workdir, upstream_venv, adopt):
    database = 'placement_kolla_upgrade'
    orphaned = (adopt.INSTANCE2, adopt.MIGRATION)
    upstream = kolla.Deployment(kolla_image, deployment_mariadb,
                                workdir / 'upstream', database=database,
                                venv=upstream_venv)
    status, output = upstream.run(KOLLA_BOOTSTRAP='')
    assert status == 0, output[-3000:]
    with upstream.api():
        adopt.fill(adopt.Client(upstream.port))
    _age(deployment_mariadb, database, orphaned)
    assert _state(deployment_mariadb, database, orphaned) == (2, {})

    # Upstream's own bootstrap cannot upgrade it: its db sync refuses
    # the unmigrated data (611cd6dffd7b) before online_data_migrations
    # is reached, and leaves the revision as it was.
    status, output = upstream.run(KOLLA_BOOTSTRAP='')
    assert status == 1, output[-3000:]
    assert 'online_data_migrations' in output
    assert deployment_mariadb.execute(
        'SELECT version_num FROM alembic_version', database=database) == \
        ((UPSTREAM_FIRST_REVISION,),)

    ours = kolla.Deployment(kolla_image, deployment_mariadb,
                            workdir / 'ours', database=database)
    status, output = ours.run(KOLLA_BOOTSTRAP='')
    assert status == 0, output[-3000:]
    assert _state(deployment_mariadb, database, orphaned) == (0, {
        consumer: (PLACEHOLDER, PLACEHOLDER) for consumer in orphaned})
    # Nothing is left to migrate: the next runs say so with 0.
    status, output = ours.run(KOLLA_OSM='')
    assert status == 0, output[-3000:]

    with ours.api():
        served = _reads(adopt, ours.port)
    # The repaired data as the API shows it.
    tree = served['/resource_providers?in_tree=%s @%s'
                  % (adopt.CN, adopt.VERSION)]
    assert tree[0] == 200
    assert {provider['root_provider_uuid']
            for provider in tree[1]['resource_providers']} == {adopt.CN}
    for consumer in orphaned:
        status, body = served['/allocations/%s @1.12' % consumer]
        assert status == 200 and body['allocations'], body
        assert (body['project_id'], body['user_id']) == \
            (PLACEHOLDER, PLACEHOLDER)

    with upstream.api():
        expected = _reads(adopt, upstream.port)
    assert served.keys() == expected.keys()
    problems = adopt.compare('ours vs upstream', expected, served)
    assert not problems, '\n'.join(problems)
