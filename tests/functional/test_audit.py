"""GET /audit: each kind of finding built for real through the API (and
aged in the database where only time makes it), answered exactly, on
every backend; its filters, errors, versions and policy."""

import datetime
import logging
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import generation
from tests.functional.test_allocation_candidates import AGG_A
from tests.functional.test_allocation_candidates import AGG_B
from tests.functional.test_allocation_candidates import SHARES
from tests.functional.test_allocation_candidates import World

PROJECT = 'b5d4b4b4-5a4f-4a43-9d2a-0f6b3c3a1d10'
OTHER_PROJECT = 'c9a7d7e2-3c57-4c27-8c0e-9a0f3b6a2e21'
USER = '7d3f2f5a-0b3c-4a8e-9a51-3d6c6f8a9b32'
NAMESPACE = uuidlib.UUID('0c5f3a1e-8c5b-4a70-9e42-3b7a4f0e5d11')


def consumer(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


@pytest.fixture
def world(client):
    return World(client)


def claim(world, holdings, consumer_type='INSTANCE', project=PROJECT):
    """POST /allocations (1.28+): {consumer name: {provider name:
    {class: amount}}}, each consumer new."""
    world.client.post('/allocations', json={
        consumer(name): {
            'allocations': {world.uuid(rp): {'resources': resources}
                            for rp, resources in held.items()},
            'project_id': project, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': consumer_type}
        for name, held in holdings.items()}, status=204)


def change_inventory(world, name, resource_class, **fields):
    """PUT one class's record, ``fields`` merged over the current one."""
    uuid = world.uuid(name)
    url = '/resource_providers/%s/inventories/%s' % (uuid, resource_class)
    record = dict(world.client.get(url).json, **fields)
    record['resource_provider_generation'] = generation(
        world.client, world.rps[name])
    world.client.put(url, json=record)


def written_ago(foreign, name, seconds):
    """Make consumer ``name``'s allocations ``seconds`` old."""
    when = (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(seconds=seconds))
    with foreign.begin() as conn:
        conn.exec_driver_sql(
            'UPDATE allocations SET created_at = %s, updated_at = NULL '
            'WHERE consumer_id = %s' % (
                _literal(foreign, when), _literal(foreign, consumer(name))))


def _literal(engine, value):
    if isinstance(value, datetime.datetime):
        value = value.strftime('%Y-%m-%d %H:%M:%S')
    return "'%s'" % value


def audit(world, query='', status=200, **kwargs):
    return world.client.get('/audit' + ('?' + query if query else ''),
                            status=status, **kwargs)


def named(world, uuids):
    return [world.names.get(uuid, uuid) for uuid in uuids]


def by_consumer(names):
    return {consumer(name): name for name in names}


# -- over capacity ------------------------------------------------------------

def test_over_capacity_after_ratio_and_reserved_change(world, foreign):
    world.add('cn1', VCPU=16, MEMORY_MB=4096)
    world.add('cn2', VCPU=16, MEMORY_MB=4096)
    claim(world, {'a': {'cn1': {'VCPU': 4, 'MEMORY_MB': 1024}},
                  'b': {'cn1': {'VCPU': 4}},
                  'c': {'cn1': {'VCPU': 2}},
                  'd': {'cn2': {'MEMORY_MB': 3000}}})
    written_ago(foreign, 'a', 3600)     # b is the newer of the two 4s
    assert audit(world).json['over_capacity'] == []
    change_inventory(world, 'cn1', 'VCPU', allocation_ratio=0.5)
    change_inventory(world, 'cn2', 'MEMORY_MB', reserved=2048)
    found = audit(world, 'kind=over_capacity').json
    assert list(found) == ['over_capacity', 'counts']
    assert found['counts'] == {'over_capacity': 2}
    memory, vcpu = found['over_capacity']
    assert memory == {
        'resource_provider': {'uuid': world.uuid('cn2'), 'name': 'cn2'},
        'resource_class': 'MEMORY_MB', 'capacity': 2048, 'used': 3000,
        'over': 952, 'consumers': [consumer('d')],
        'used_by_consumer': {consumer('d'): 3000},
        'reason': 'used 3000 > capacity 2048 = (4096 - 2048 reserved) x '
                  '1.0'}
    assert vcpu['resource_provider']['name'] == 'cn1'
    assert (vcpu['capacity'], vcpu['used'], vcpu['over']) == (8, 10, 2)
    # Largest first, then newest.
    assert vcpu['consumers'] == [consumer(n) for n in 'bac']
    assert vcpu['reason'] == 'used 10 > capacity 8 = (16 - 0 reserved) x 0.5'


# -- split consumers ----------------------------------------------------------

def test_split_consumers_are_those_no_sharing_explains(world):
    world.add('cn1', VCPU=8, DISK_GB=100, aggregates=[AGG_A])
    world.add('cn1.numa0', 'cn1', VCPU=4)
    world.add('cn2', VCPU=8, aggregates=[AGG_B])
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_A])
    world.add('ss2', DISK_GB=100, traits=[SHARES])
    claim(world, {
        # Evacuated: the same server on the source and the destination.
        'evacuated': {'cn1': {'VCPU': 2}, 'cn2': {'VCPU': 2}},
        # Its disk on the pool cn1 shares: explained.
        'on_pool': {'cn1': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
        # A pool not shared with cn2: two unexplained trees.
        'stray_pool': {'cn2': {'VCPU': 1}, 'ss2': {'DISK_GB': 10}},
        # Two providers of one tree: one tree.
        'nested': {'cn1': {'DISK_GB': 5}, 'cn1.numa0': {'VCPU': 1}},
        # A volume alone on a pool: one tree.
        'pool_only': {'ss2': {'DISK_GB': 1}},
    }, project=OTHER_PROJECT)
    claim(world, {'migrating': {'cn1': {'VCPU': 1}, 'cn2': {'VCPU': 1},
                                'ss': {'DISK_GB': 1}}},
          consumer_type='MIGRATION')
    found = audit(world, 'kind=split_consumers').json['split_consumers']
    names = by_consumer(['evacuated', 'stray_pool', 'migrating'])
    assert sorted(names[f['consumer']] for f in found) == [
        'evacuated', 'migrating', 'stray_pool']
    evacuated = next(f for f in found
                     if f['consumer'] == consumer('evacuated'))
    roots = sorted([world.uuid('cn1'), world.uuid('cn2')])
    assert evacuated == {
        'consumer': consumer('evacuated'), 'consumer_type': 'INSTANCE',
        'project_id': OTHER_PROJECT, 'user_id': USER, 'roots': roots,
        'trees': [{'root': root, 'resources': {root: {'VCPU': 2}}}
                  for root in roots],
        'reason': evacuated['reason']}
    assert evacuated['reason'].startswith('holds in 2 trees')
    migrating = next(f for f in found
                     if f['consumer'] == consumer('migrating'))
    # The pool is explained by cn1, but cn1 and cn2 are still two trees.
    assert sorted(named(world, migrating['roots'])) == ['cn1', 'cn2', 'ss']
    assert migrating['consumer_type'] == 'MIGRATION'
    stray = next(f for f in found if f['consumer'] == consumer('stray_pool'))
    assert sorted(named(world, stray['roots'])) == ['cn2', 'ss2']
    # Sharing ss2 with cn2 explains it.
    world.set_aggregates('cn2', AGG_B)
    world.set_aggregates('ss2', AGG_B)
    found = audit(world, 'kind=split_consumers').json['split_consumers']
    assert sorted(by_consumer(['evacuated', 'migrating']).get(f['consumer'])
                  for f in found) == ['evacuated', 'migrating']


# -- stale migrations ---------------------------------------------------------

def test_stale_migrations_are_old_migration_consumers(world, foreign):
    world.add('cn1', VCPU=8)
    world.add('cn2', VCPU=8)
    claim(world, {'old': {'cn1': {'VCPU': 1}, 'cn2': {'VCPU': 1}},
                  'recent': {'cn2': {'VCPU': 1}}},
          consumer_type='MIGRATION')
    claim(world, {'old_server': {'cn1': {'VCPU': 1}}})
    written_ago(foreign, 'old', 90000)
    written_ago(foreign, 'recent', 600)
    written_ago(foreign, 'old_server', 900000)
    found = audit(world, 'kind=stale_migrations').json
    assert found['counts'] == {'stale_migrations': 1}
    stale, = found['stale_migrations']
    assert 90000 <= stale['age_seconds'] < 90000 + 120
    assert stale == dict(stale, consumer=consumer('old'),
                         consumer_type='MIGRATION', project_id=PROJECT,
                         user_id=USER, resource_providers=sorted(
                             [world.uuid('cn1'), world.uuid('cn2')]))
    assert 'stale_after 86400' in stale['reason']
    found = audit(world, 'kind=stale_migrations&stale_after=300').json
    assert [f['consumer'] for f in found['stale_migrations']] == [
        consumer('old'), consumer('recent')]
    found = audit(world, 'kind=stale_migrations&stale_after=100000').json
    assert found['stale_migrations'] == []


# -- unusable inventory -------------------------------------------------------

def test_unusable_inventory_but_not_all_reserved(world):
    world.client.put('/resource_classes/CUSTOM_BAREMETAL', status=(201, 204))
    world.add('ironic', CUSTOM_BAREMETAL={'total': 1, 'reserved': 1})
    world.add('units', VCPU={'total': 8, 'min_unit': 4, 'max_unit': 2})
    world.add('steps', VCPU={'total': 8, 'min_unit': 3, 'max_unit': 5,
                             'step_size': 6})
    world.add('small', VCPU={'total': 4, 'min_unit': 3, 'reserved': 2},
              MEMORY_MB=1024)
    world.add('fine', VCPU={'total': 8, 'min_unit': 2, 'step_size': 2})
    # Accepted as upstream accepts it: the capacity, -0.5, rounds to 0.
    world.add('over_reserved', VCPU={'total': 1, 'reserved': 2,
                                     'allocation_ratio': 0.5})
    found = audit(world, 'kind=unusable_inventory').json
    assert [(world.names[f['resource_provider']['uuid']],
             f['resource_class'], f['reason'])
            for f in found['unusable_inventory']] == sorted([
        ('units', 'VCPU', 'min_unit 4 > max_unit 2'),
        ('steps', 'VCPU', 'no multiple of step_size 6 lies from min_unit 3 '
                          'to max_unit 5'),
        ('small', 'VCPU', 'capacity 2 = (4 - 2 reserved) x 1.0 < 3, the '
                          'smallest amount allowed (min_unit 3, step_size '
                          '1)'),
        ('over_reserved', 'VCPU', 'capacity 0 = (1 - 2 reserved) x 0.5 < 1, '
                                  'the smallest amount allowed (min_unit 1, '
                                  'step_size 1)'),
    ], key=lambda f: world.uuid(f[0]))


# -- filters ------------------------------------------------------------------

@pytest.fixture
def troubled(world, foreign):
    """Two racks (aggregates A and B), each with a finding of each kind
    about consumers: cn1 (A) over capacity, held by PROJECT's server a;
    cn3 (B) over, held by OTHER_PROJECT's server b; split c (cn1, cn2)
    and d (cn3, cn4); stale migrations e (cn2) and f (cn4), of OTHER's."""
    for name, aggregate in (('cn1', AGG_A), ('cn2', AGG_A), ('cn3', AGG_B),
                            ('cn4', AGG_B)):
        world.add(name, VCPU=8, aggregates=[aggregate])
    world.add('cn1.numa0', 'cn1', VCPU=2, MEMORY_MB={
        'total': 10, 'min_unit': 20})
    claim(world, {'a': {'cn1': {'VCPU': 6}},
                  'c': {'cn1': {'VCPU': 1}, 'cn2': {'VCPU': 1}}})
    claim(world, {'b': {'cn3': {'VCPU': 6}},
                  'd': {'cn3': {'VCPU': 1}, 'cn4': {'VCPU': 1}}},
          project=OTHER_PROJECT)
    claim(world, {'e': {'cn2': {'VCPU': 1}}}, consumer_type='MIGRATION')
    claim(world, {'f': {'cn4': {'VCPU': 1}}}, consumer_type='MIGRATION',
          project=OTHER_PROJECT)
    written_ago(foreign, 'e', 100000)
    written_ago(foreign, 'f', 200000)
    change_inventory(world, 'cn1', 'VCPU', total=4)    # 3 over
    change_inventory(world, 'cn3', 'VCPU', total=5)    # 2 over
    return world


def _summary(world, body):
    """{kind: [provider or consumer names]} of an audit's answer."""
    consumers = {consumer(name): name for name in 'abcdef'}
    summary = {}
    for kind, findings in body.items():
        if kind == 'counts':
            continue
        summary[kind] = [
            world.names[f['resource_provider']['uuid']]
            if 'resource_provider' in f else consumers[f['consumer']]
            for f in findings]
    return summary


def test_filters_narrow_every_kind(troubled):
    world = troubled
    assert _summary(world, audit(world).json) == {
        'over_capacity': ['cn1', 'cn3'], 'split_consumers': ['d', 'c'],
        'stale_migrations': ['f', 'e'], 'unusable_inventory': ['cn1.numa0']}
    assert _summary(world, audit(world, 'in_tree=%s' % world.uuid(
        'cn1.numa0')).json) == {
        'over_capacity': ['cn1'], 'split_consumers': ['c'],
        'stale_migrations': [], 'unusable_inventory': ['cn1.numa0']}
    assert _summary(world, audit(world, 'member_of=%s' % AGG_B).json) == {
        'over_capacity': ['cn3'], 'split_consumers': ['d'],
        'stale_migrations': ['f'], 'unusable_inventory': []}
    assert _summary(world, audit(world, 'member_of=in:%s,%s&member_of=!%s'
                                 % (AGG_A, AGG_B, AGG_B)).json)[
        'stale_migrations'] == ['e']
    assert _summary(world, audit(world, 'project_id=%s'
                                 % OTHER_PROJECT).json) == {
        'over_capacity': ['cn3'], 'split_consumers': ['d'],
        'stale_migrations': ['f'], 'unusable_inventory': []}
    body = audit(world, 'kind=split_consumers,over_capacity&limit=1').json
    assert body['counts'] == {'over_capacity': 2, 'split_consumers': 2}
    assert _summary(world, body) == {'over_capacity': ['cn1'],
                                     'split_consumers': ['d']}
    unknown = str(uuidlib.uuid4())
    assert _summary(world, audit(world, 'in_tree=' + unknown).json) == {
        'over_capacity': [], 'split_consumers': [], 'stale_migrations': [],
        'unusable_inventory': []}


# -- errors, versions, policy -------------------------------------------------

@pytest.mark.parametrize('query', [
    'kind=leaks', 'kind=over_capacity,', 'stale_after=-1', 'stale_after=x',
    'limit=0', 'in_tree=not-a-uuid', 'member_of=nope', 'color=red',
    'project_id='])
def test_bad_queries_are_400s(world, query):
    resp = audit(world, query, status=400)
    assert error(resp)['code'] == 'placement.undefined_code'


def test_served_at_every_microversion_to_admins_only(world):
    for version in ('1.0', '1.39'):
        assert audit(world, headers={
            'OpenStack-API-Version': 'placement %s' % version}).json[
            'counts'] == {kind: 0 for kind in (
                'over_capacity', 'split_consumers', 'stale_migrations',
                'unusable_inventory')}
    world.client.token = 'user'
    assert error(audit(world, status=403))['code'] == (
        'placement.undefined_code')


# -- the warning a write leaves ----------------------------------------------

def _over_capacity_warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and 'over-capacity' in
            r.getMessage()]


def test_writes_leaving_a_provider_over_capacity_warn(world, caplog):
    world.add('cn1', VCPU=8, MEMORY_MB=1024)
    claim(world, {'a': {'cn1': {'VCPU': 6, 'MEMORY_MB': 512}}})
    caplog.set_level(logging.WARNING)
    change_inventory(world, 'cn1', 'VCPU', allocation_ratio=0.5)
    assert _over_capacity_warnings(caplog) == [
        'Resource provider %s is now over-capacity for VCPU: 6 used, '
        'capacity 4' % world.uuid('cn1')]
    caplog.clear()
    world.client.put(
        '/resource_providers/%s/inventories' % world.uuid('cn1'), json={
            'resource_provider_generation': generation(
                world.client, world.rps['cn1']),
            'inventories': {'VCPU': {'total': 8, 'allocation_ratio': 0.5},
                            'MEMORY_MB': {'total': 1024, 'reserved': 768}}})
    assert sorted(_over_capacity_warnings(caplog)) == [
        'Resource provider %s is now over-capacity for %s' % (
            world.uuid('cn1'), words)
        for words in ('MEMORY_MB: 512 used, capacity 256',
                      'VCPU: 6 used, capacity 4')]
    caplog.clear()
    # A reshape that keeps the allocations but shrinks the inventory.
    world.client.post('/reshaper', json={
        'inventories': {world.uuid('cn1'): {
            'resource_provider_generation': generation(
                world.client, world.rps['cn1']),
            'inventories': {'VCPU': {'total': 5},
                            'MEMORY_MB': {'total': 1024}}}},
        'allocations': {}}, status=204,
        headers={'X-Roles': 'admin,service'})     # reshaper: service only
    assert _over_capacity_warnings(caplog) == [
        'Resource provider %s is now over-capacity for VCPU: 6 used, '
        'capacity 5' % world.uuid('cn1')]


# -- kept in memory between audits -------------------------------------------

def _split_names(world):
    found = audit(world, 'kind=split_consumers').json['split_consumers']
    names = {consumer(name): name for name in ('a', 'b', 'c')}
    return sorted(names[f['consumer']] for f in found)


def test_split_consumers_follow_every_write_between_audits(world, foreign):
    """One process audits again and again; each answer is what a scan of
    the tables would say, whoever wrote in between."""
    world.add('cn1', VCPU=8, aggregates=[AGG_A])
    world.add('cn2', VCPU=8)
    world.add('ss', DISK_GB=100, traits=[SHARES], aggregates=[AGG_B])
    claim(world, {'a': {'cn1': {'VCPU': 1}, 'cn2': {'VCPU': 1}},
                  'b': {'cn1': {'VCPU': 1}, 'ss': {'DISK_GB': 1}}})
    assert _split_names(world) == ['a', 'b']
    # The pool joins cn1's aggregate: b is explained.
    world.set_aggregates('ss', AGG_A, AGG_B)
    assert _split_names(world) == ['a']
    # a moves to cn2 alone; c is evacuated.
    world.client.put('/allocations/' + consumer('a'), json={
        'allocations': {world.uuid('cn2'): {'resources': {'VCPU': 2}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': 1,
        'consumer_type': 'INSTANCE'}, status=204)
    claim(world, {'c': {'cn1': {'VCPU': 1}, 'cn2': {'VCPU': 1}}})
    assert _split_names(world) == ['c']
    # cn2 becomes cn1's child: c holds in one tree (1.37 re-parents).
    world.client.put('/resource_providers/' + world.uuid('cn2'), json={
        'name': 'cn2', 'parent_provider_uuid': world.uuid('cn1')})
    assert _split_names(world) == []
    # The pool stops sharing: b is split again.
    world.set_traits('ss')
    assert _split_names(world) == ['b']
    # SQL by hand: c's allocations on cn1 moved to the pool.
    with foreign.begin() as conn:
        conn.execute(sa.text(
            'UPDATE allocations SET resource_provider_id = (SELECT id FROM '
            'resource_providers WHERE uuid = :pool) WHERE consumer_id = :c '
            'AND resource_provider_id = (SELECT id FROM resource_providers '
            'WHERE uuid = :cn1)'), {'pool': world.uuid('ss'),
                                    'c': consumer('c'),
                                    'cn1': world.uuid('cn1')})
    assert _split_names(world) == ['b', 'c']
    world.client.delete('/allocations/' + consumer('b'), status=204)
    assert _split_names(world) == ['c']
