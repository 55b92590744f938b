"""One round of churn through the API, for ``host_memory.py --rounds``:
providers made and deleted (nested trees under new roots, sharing
providers in new aggregates, custom traits and resource classes of the
round's own) and consumers claiming on them and freeing, so that every
structure of the in-memory state grows and then has nothing left to
keep.  Each round's names and uuids are new."""

import concurrent.futures
import uuid as uuidlib

import candidates

NAMESPACE = uuidlib.UUID('7d1e6c0b-2a55-4f3e-9b61-3c9d0f5a8e42')
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
THREADS = 8


def _uuid(*parts):
    return str(uuidlib.uuid5(NAMESPACE, '/'.join(map(str, parts))))


def _call(port, method, path, body=None, expect=(200, 201, 204)):
    status, raw, _ = candidates.Connection(port, 600).request(method, path,
                                                              body)
    if status not in expect:
        raise RuntimeError('%s %s: %s %s' % (method, path, status,
                                             raw[:300]))


def _tree(port, number, index, trait, klass):
    """A root, a child with the round's class and trait, a sharing pool
    in an aggregate of its own: three providers; their uuids."""
    root, child, pool = (_uuid(number, index, kind)
                         for kind in ('root', 'child', 'pool'))
    aggregate = _uuid(number, index, 'aggregate')
    _call(port, 'POST', '/resource_providers', {'name': root, 'uuid': root})
    _call(port, 'POST', '/resource_providers', {
        'name': child, 'uuid': child, 'parent_provider_uuid': root})
    _call(port, 'POST', '/resource_providers', {'name': pool, 'uuid': pool})
    for uuid, inventory, traits in (
            (child, {'VCPU': {'total': 64}, klass: {'total': 16}}, [trait]),
            (pool, {'DISK_GB': {'total': 10000}}, [SHARES])):
        base = '/resource_providers/%s' % uuid
        _call(port, 'PUT', base + '/inventories', {
            'resource_provider_generation': 0, 'inventories': inventory})
        _call(port, 'PUT', base + '/traits', {
            'resource_provider_generation': 1, 'traits': traits})
        _call(port, 'PUT', base + '/aggregates', {
            'resource_provider_generation': 2, 'aggregates': [aggregate]})
    return [child, pool, root]


def _claims(port, number, index, child, pool, consumers):
    made = []
    for holder in range(consumers):
        consumer = _uuid(number, index, 'consumer', holder)
        _call(port, 'PUT', '/allocations/%s' % consumer, {
            'allocations': {child: {'resources': {'VCPU': 1}},
                            pool: {'resources': {'DISK_GB': 1}}},
            'project_id': _uuid(number, 'project'), 'user_id': 'churn',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        made.append(consumer)
    return made


def round_trip(port, providers, number):
    """Make ``providers`` providers (in trees of three) and four
    consumers per provider, read candidates, then delete it all."""
    trait = 'CUSTOM_CHURN_%d' % number
    klass = 'CUSTOM_CHURN_%d' % number
    _call(port, 'PUT', '/traits/%s' % trait)
    _call(port, 'PUT', '/resource_classes/%s' % klass)
    trees = max(1, providers // 3)
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        made = list(pool.map(lambda index: _tree(port, number, index, trait,
                                                 klass), range(trees)))
        consumers = list(pool.map(
            lambda item: _claims(port, number, item[0], item[1][0],
                                 item[1][1], 12),
            enumerate(made)))
        _call(port, 'GET', '/allocation_candidates?resources=VCPU:1,'
                           'DISK_GB:1&required=%s' % trait)
        list(pool.map(lambda consumer: _call(
            port, 'DELETE', '/allocations/%s' % consumer),
            [consumer for held in consumers for consumer in held]))
        list(pool.map(lambda uuids: [_call(
            port, 'DELETE', '/resource_providers/%s' % uuid)
            for uuid in uuids], made))
    _call(port, 'DELETE', '/traits/%s' % trait)
    _call(port, 'DELETE', '/resource_classes/%s' % klass)
