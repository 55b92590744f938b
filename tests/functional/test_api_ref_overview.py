"""The examples of api-ref/overview.rst are what the service answers: the
page's deployment is built, its requests sent, and each answer compared
with the page's JSON blocks in order."""

import json
import pathlib
import re

PAGE = pathlib.Path(__file__).parents[2] / 'api-ref' / 'overview.rst'
AGG = '3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a6b'
PROJECT = '6f1e2d3c4b5a49788a9b0c1d2e3f4a5b'
USER = '9d8c7b6a5f4e43218a9b0c1d2e3f4a5b'
PROVIDERS = [   # name, parent number, inventory, traits, in the aggregate
    ('cn1', None, {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768}},
     ['HW_CPU_X86_AVX2'], True),
    ('cn1-nic', 1, {'SRIOV_NET_VF': {'total': 8}}, ['HW_NIC_SRIOV'], False),
    ('cn2', None, {'VCPU': {'total': 16, 'allocation_ratio': 4.0},
                   'MEMORY_MB': {'total': 32768, 'reserved': 512}},
     ['HW_CPU_X86_AVX2'], True),
    ('ss', None, {'DISK_GB': {'total': 2000, 'reserved': 100}},
     ['MISC_SHARES_VIA_AGGREGATE'], True),
]
CONSUMERS = [   # number, {provider number: resources}
    (1, {1: {'VCPU': 4, 'MEMORY_MB': 8192}, 2: {'SRIOV_NET_VF': 2},
         4: {'DISK_GB': 100}}),
    (2, {3: {'VCPU': 40, 'MEMORY_MB': 16384}}),
]
REQUESTS = [
    '/overview',
    '/overview/providers?limit=2',
    '/overview/providers?limit=2&marker=a3000000-0000-4000-8000-000000000002',
    '/overview/providers?required=HW_CPU_X86_AVX2&free=VCPU:8',
    '/overview/providers/a3000000-0000-4000-8000-000000000002',
]


def provider_uuid(number):
    return 'a3000000-0000-4000-8000-%012d' % number


def consumer_uuid(number):
    return 'c3000000-0000-4000-8000-%012d' % number


def build(client):
    """cn1 with a NIC below it, cn2, and a shared pool ss, all but the
    NIC in aggregate AGG; an instance on cn1 with a VF of its NIC and
    its disk on ss, another holding 40 VCPU on cn2; then cn2's VCPU
    allocation ratio lowered from 4.0 to 2.0, under its usage."""
    for number, (name, parent, inventory, traits, in_aggregate) in (
            enumerate(PROVIDERS, 1)):
        body = {'name': name, 'uuid': provider_uuid(number)}
        if parent:
            body['parent_provider_uuid'] = provider_uuid(parent)
        client.post('/resource_providers', json=body)
        base = '/resource_providers/' + provider_uuid(number)
        generation = client.put(base + '/inventories', json={
            'resource_provider_generation': 0, 'inventories': inventory,
        }).json['resource_provider_generation']
        generation = client.put(base + '/traits', json={
            'resource_provider_generation': generation, 'traits': traits,
        }).json['resource_provider_generation']
        if in_aggregate:
            client.put(base + '/aggregates', json={
                'resource_provider_generation': generation,
                'aggregates': [AGG]})
    client.post('/allocations', json={consumer_uuid(number): {
        'allocations': {provider_uuid(rp): {'resources': resources}
                        for rp, resources in held.items()},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None,
        'consumer_type': 'INSTANCE'} for number, held in CONSUMERS},
        status=204)
    base = '/resource_providers/%s/inventories/VCPU' % provider_uuid(3)
    record = client.get(base).json
    client.put(base, json=dict(record, allocation_ratio=2.0))


def _json_blocks():
    """Each ``.. code-block:: json`` of the page, parsed."""
    return [json.loads(match.group(1)) for match in re.finditer(
        r'\.\. code-block:: json\n\n((?:(?: +.*)?\n)+)', PAGE.read_text())]


def test_the_pages_examples_are_the_answers(client):
    build(client)
    blocks = _json_blocks()
    assert len(blocks) == len(REQUESTS)
    for path, expected in zip(REQUESTS, blocks):
        assert client.get(path).json == expected, path


def test_the_pages_requests_are_its_console_lines():
    lines = re.findall(r'\$ curl -s "\$\{H\[@\]\}" "\$P(.*)"',
                       PAGE.read_text())
    assert [line.replace('$AGG', AGG) for line in lines] == REQUESTS
