"""Nothing the in-memory state keeps outlives what exists: rounds that
make and then delete providers (nested trees, sharing ones), custom
traits, classes and aggregates, and consumers holding on them leave
every structure of the state as large as it was before them."""

import gc

from placement.state import snapshot

SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def _sizes(db):
    """{field: how many entries} of every container the state keeps."""
    gc.collect()
    with snapshot.of(db).fresh() as state:
        return {name: len(value) for name, value in vars(state).items()
                if hasattr(value, '__len__') and not isinstance(value, str)}


def _uuid(round_, kind, number):
    return '%08d-%04d-4000-8000-%012d' % (round_, kind, number)


def _round(client, number, trees=4):
    """Make a cloud of its own, let the state read it, delete it all."""
    trait = 'CUSTOM_CHURN_%d' % number
    klass = 'CUSTOM_CHURN_%d' % number
    client.put('/traits/%s' % trait, status=201)
    client.put('/resource_classes/%s' % klass, status=201)
    made, consumers = [], []
    for tree in range(trees):
        aggregate = _uuid(number, 9, tree)
        root = _uuid(number, 1, tree)
        child = _uuid(number, 2, tree)
        pool = _uuid(number, 3, tree)
        client.post('/resource_providers', json={'name': root, 'uuid': root})
        client.post('/resource_providers', json={
            'name': child, 'uuid': child, 'parent_provider_uuid': root})
        client.post('/resource_providers', json={'name': pool, 'uuid': pool})
        for uuid, inventory, traits in (
                (child, {'VCPU': {'total': 8}, klass: {'total': 4}}, [trait]),
                (pool, {'DISK_GB': {'total': 100}}, [SHARES])):
            client.put('/resource_providers/%s/inventories' % uuid, json={
                'resource_provider_generation': 0,
                'inventories': inventory})
            client.put('/resource_providers/%s/traits' % uuid, json={
                'resource_provider_generation': 1, 'traits': traits})
            client.put('/resource_providers/%s/aggregates' % uuid, json={
                'resource_provider_generation': 2,
                'aggregates': [aggregate, _uuid(number, 8, 0)]})
        made += [child, pool, root]
        for holder in range(2):
            consumer = _uuid(number, 5, tree * 10 + holder)
            client.put('/allocations/%s' % consumer, json={
                'allocations': {child: {'resources': {'VCPU': 1, klass: 1}},
                                pool: {'resources': {'DISK_GB': 10}}},
                'project_id': 'p%d' % number, 'user_id': 'u',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'},
                status=204)
            consumers.append(consumer)
    answer = client.get('/allocation_candidates?resources=VCPU:1,DISK_GB:1'
                        '&required=%s' % trait).json
    assert len(answer['allocation_requests']) == trees * trees
    client.get('/resource_providers?member_of=%s' % _uuid(number, 8, 0))
    for consumer in consumers:
        client.delete('/allocations/%s' % consumer, status=204)
    for uuid in made:
        client.delete('/resource_providers/%s' % uuid, status=204)
    client.delete('/traits/%s' % trait, status=204)
    client.delete('/resource_classes/%s' % klass, status=204)
    assert client.get('/allocation_candidates?resources=VCPU:1').json[
        'allocation_requests'] == []


def test_rounds_of_churn_leave_the_state_as_large_as_before(client, db):
    client.post('/resource_providers', json={'name': 'stays'})
    client.get('/allocation_candidates?resources=VCPU:1')
    before = _sizes(db)
    for number in range(1, 4):
        _round(client, number)
        assert _sizes(db) == before, number
