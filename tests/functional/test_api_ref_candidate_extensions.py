"""The examples of api-ref/allocation_candidates_extensions.rst are what
the service answers: the page's deployment is built, its three queries
sent, and each answer compared with the page's JSON blocks in order."""

import json
import pathlib
import re

PAGE = (pathlib.Path(__file__).parents[2] / 'api-ref' /
        'allocation_candidates_extensions.rst')
AGG = '3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a6b'
ASK = ('resources=VCPU:8,MEMORY_MB:4096,DISK_GB:100'
       '&required=HW_CPU_X86_AVX512F&member_of=' + AGG)
QUERIES = [
    '/allocation_candidates/explain?' + ASK,
    '/allocation_candidates/capacity?' + ASK,
    '/allocation_candidates/capacity?resources=VCPU:8,MEMORY_MB:4096,'
    'DISK_GB:400&member_of=' + AGG,
]
AVX = ['HW_CPU_X86_AVX512F']
PROVIDERS = [   # name, inventory, traits, in the aggregate
    ('cn1', {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 16384}}, AVX,
     True),
    ('cn2', {'VCPU': {'total': 64, 'reserved': 4},
             'MEMORY_MB': {'total': 65536}}, AVX, True),
    ('cn3', {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536},
             'DISK_GB': {'total': 1000}}, AVX, False),
    ('cn4', {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536}}, AVX,
     True),
    ('cn5', {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536}}, [],
     True),
    ('ss', {'DISK_GB': {'total': 2000}}, ['MISC_SHARES_VIA_AGGREGATE'],
     True),
]
PROJECT = '6f1e2d3c4b5a49788a9b0c1d2e3f4a5b'


def _json_blocks():
    """Each ``.. code-block:: json`` of the page, parsed."""
    text = PAGE.read_text()
    blocks = []
    for match in re.finditer(r'\.\. code-block:: json\n\n((?:(?: +.*)?\n)+)',
                             text):
        lines = match.group(1).rstrip().split('\n')
        blocks.append(json.loads('\n'.join(lines)))
    return blocks


def create_providers(client, providers, uuid_format, aggregate):
    """A page's providers ((name, inventory, traits, in ``aggregate``)),
    the Nth with the uuid ``uuid_format % N``."""
    for number, (name, inventory, traits, in_aggregate) in enumerate(
            providers, 1):
        uuid = uuid_format % number
        client.post('/resource_providers', json={'name': name, 'uuid': uuid})
        base = '/resource_providers/' + uuid
        generation = client.put(base + '/inventories', json={
            'resource_provider_generation': 0, 'inventories': inventory,
        }).json['resource_provider_generation']
        if traits:
            generation = client.put(base + '/traits', json={
                'resource_provider_generation': generation, 'traits': traits,
            }).json['resource_provider_generation']
        if in_aggregate:
            client.put(base + '/aggregates', json={
                'resource_provider_generation': generation,
                'aggregates': [aggregate]})


def _build(client):
    create_providers(client, PROVIDERS, 'a1000000-0000-4000-8000-%012d', AGG)
    client.put('/allocations/c1000000-0000-4000-8000-000000000001', json={
        'allocations': {'a1000000-0000-4000-8000-000000000002': {
            'resources': {'VCPU': 54}}},
        'consumer_generation': None, 'project_id': PROJECT,
        'user_id': PROJECT, 'consumer_type': 'INSTANCE'}, status=204)


def test_the_pages_examples_are_the_answers(client):
    _build(client)
    blocks = _json_blocks()
    assert len(blocks) == len(QUERIES)
    for query, expected in zip(QUERIES, blocks):
        assert client.get(query).json == expected, query
