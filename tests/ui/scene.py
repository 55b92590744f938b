"""A small cloud with everything the dashboard draws, built through the
API: nested trees, a sharing provider, a provider over capacity, a
consumer split across two trees, a migration, and enough alike compute
nodes to page through.

``build(call)`` takes ``call(method, path, body=None) -> (status,
decoded body)`` (a live server's or a webtest client's, admin token,
microversion 1.39) and returns a ``Scene`` naming what it made.
"""

import dataclasses
import uuid as uuidlib

NAMESPACE = uuidlib.UUID('5d0c7a38-2f4e-4b8a-9c61-0e3f2a1b7d90')
AGG_RACK = '3b1f6c2a-7d4e-4f8a-9b0c-1d2e3f4a5b6c'
AGG_EDGE = '8e7d6c5b-4a39-4281-b7f6-e5d4c3b2a190'
PROJECT_A = 'a0a0a0a0a0a04a0aa0a0a0a0a0a0a0a0'
PROJECT_B = 'b0b0b0b0b0b04b0bb0b0b0b0b0b0b0b0'
USER_A = 'a1a1a1a1a1a14a1aa1a1a1a1a1a1a1a1'
USER_B = 'b1b1b1b1b1b14b1bb1b1b1b1b1b1b1b1'
FILLERS = 24

# name, parent, inventory, traits, aggregates
PROVIDERS = [
    ('cn1', None, {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768},
                   'DISK_GB': {'total': 500, 'reserved': 20}},
     ['HW_CPU_X86_AVX2', 'CUSTOM_RACK_A'], [AGG_RACK]),
    ('cn1-numa0', 'cn1', {'VCPU': {'total': 8},
                          'MEMORY_MB': {'total': 16384}},
     ['HW_NUMA_ROOT'], []),
    ('cn1-numa0-pf0', 'cn1-numa0', {'SRIOV_NET_VF': {'total': 8}},
     ['CUSTOM_PHYSNET_A'], []),
    ('cn1-numa1', 'cn1', {'VCPU': {'total': 8},
                          'MEMORY_MB': {'total': 16384}},
     ['HW_NUMA_ROOT'], []),
    ('cn2', None, {'VCPU': {'total': 32, 'allocation_ratio': 4.0},
                   'MEMORY_MB': {'total': 65536, 'reserved': 512}},
     ['HW_CPU_X86_AVX2', 'CUSTOM_RACK_A'], [AGG_RACK]),
    ('cn3', None, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}},
     [], [AGG_EDGE]),
    ('ss1', None, {'DISK_GB': {'total': 10000, 'reserved': 100}},
     ['MISC_SHARES_VIA_AGGREGATE'], [AGG_RACK]),
] + [('fill-%02d' % number, None,
      {'VCPU': {'total': 4 + number % 3 * 4},
       'MEMORY_MB': {'total': 4096 * (1 + number % 2)}},
      ['CUSTOM_FILLER'] if number % 2 else [], [AGG_EDGE] if number < 6
      else []) for number in range(FILLERS)]

# consumer, type, project, user, {provider: resources}
CONSUMERS = [
    ('inst-a', 'INSTANCE', PROJECT_A, USER_A,
     {'cn1-numa0': {'VCPU': 2, 'MEMORY_MB': 4096},
      'ss1': {'DISK_GB': 100}}),
    ('inst-b', 'INSTANCE', PROJECT_B, USER_B,
     {'cn2': {'VCPU': 8, 'MEMORY_MB': 16384}}),
    # Evacuated from cn1 and left on both: split across two trees.
    ('evacuated', 'INSTANCE', PROJECT_A, USER_A,
     {'cn1': {'VCPU': 2}, 'cn3': {'VCPU': 2}}),
    ('heavy', 'INSTANCE', PROJECT_B, USER_B,
     {'cn3': {'VCPU': 4, 'MEMORY_MB': 2048}}),
    ('mig', 'MIGRATION', PROJECT_B, USER_B, {'cn2': {'VCPU': 1}}),
    ('filler-user', 'INSTANCE', PROJECT_A, USER_A,
     {'fill-01': {'VCPU': 3}, 'fill-04': {'VCPU': 1,
                                          'MEMORY_MB': 1024}}),
]


def provider_uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, 'provider ' + name))


def consumer_uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, 'consumer ' + name))


@dataclasses.dataclass
class Scene:
    providers: dict     # name -> uuid
    consumers: dict     # name -> uuid

    def name_of(self, uuid):
        return {value: key for key, value in self.providers.items()}[uuid]


def _ok(answer, *expected):
    status, body = answer
    assert status in expected, (status, body)
    return body


def build(call):
    for _, _, _, traits, _ in PROVIDERS:
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                _ok(call('PUT', '/traits/' + trait), 201, 204)
    for name, parent, inventory, traits, aggregates in PROVIDERS:
        body = {'name': name, 'uuid': provider_uuid(name)}
        if parent:
            body['parent_provider_uuid'] = provider_uuid(parent)
        _ok(call('POST', '/resource_providers', body), 200)
        uuid = provider_uuid(name)
        generation = _ok(call('PUT', '/resource_providers/%s/inventories'
                              % uuid, {'resource_provider_generation': 0,
                                       'inventories': inventory}),
                         200)['resource_provider_generation']
        if traits:
            generation = _ok(call(
                'PUT', '/resource_providers/%s/traits' % uuid,
                {'traits': traits, 'resource_provider_generation':
                 generation}), 200)['resource_provider_generation']
        if aggregates:
            _ok(call('PUT', '/resource_providers/%s/aggregates' % uuid,
                     {'aggregates': aggregates,
                      'resource_provider_generation': generation}), 200)
    _ok(call('POST', '/allocations', {
        consumer_uuid(name): {
            'allocations': {provider_uuid(rp): {'resources': resources}
                            for rp, resources in held.items()},
            'project_id': project, 'user_id': user,
            'consumer_generation': None, 'consumer_type': kind}
        for name, kind, project, user, held in CONSUMERS}), 204)
    # cn3's VCPU allocation ratio lowered under its usage (6 used):
    # capacity 4, 2 over.
    url = '/resource_providers/%s/inventories/VCPU' % provider_uuid('cn3')
    record = _ok(call('GET', url), 200)
    record['allocation_ratio'] = 0.5
    _ok(call('PUT', url, record), 200)
    return Scene({name: provider_uuid(name) for name, *_ in PROVIDERS},
                 {name: consumer_uuid(name) for name, *_ in CONSUMERS})
