"""The examples of api-ref/audit.rst are what the service answers: the
page's deployment is built, its requests sent, and each answer compared
with the page's JSON blocks in order (a stale migration's age, and the
reason that states it, depend on the day the test runs: they are
compared in form only)."""

import json
import pathlib
import re

import sqlalchemy as sa

from tests.functional.test_api_ref_candidate_extensions import (
    create_providers)

PAGE = pathlib.Path(__file__).parents[2] / 'api-ref' / 'audit.rst'
AGG = '3f2a6c1e-8b7d-4e5f-9a0b-1c2d3e4f5a6b'
PROJECT = '6f1e2d3c4b5a49788a9b0c1d2e3f4a5b'
PROVIDER_UUID = 'a2000000-0000-4000-8000-%012d'
USER = '9d8c7b6a5f4e43218a9b0c1d2e3f4a5b'
SHARES = ['MISC_SHARES_VIA_AGGREGATE']
PROVIDERS = [   # name, inventory, traits, in the aggregate
    ('cn1', {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768}}, [],
     True),
    ('cn2', {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768}}, [],
     True),
    ('cn3', {'VCPU': {'total': 16, 'min_unit': 4, 'max_unit': 2}}, [],
     False),
    ('ss', {'DISK_GB': {'total': 2000}}, SHARES, True),
]
CONSUMERS = [   # number, type, {provider number: resources}
    (1, 'INSTANCE', {1: {'VCPU': 8, 'MEMORY_MB': 8192},
                     4: {'DISK_GB': 100}}),
    (2, 'INSTANCE', {1: {'VCPU': 4, 'MEMORY_MB': 4096},
                     2: {'VCPU': 4, 'MEMORY_MB': 4096}}),
    (3, 'MIGRATION', {2: {'VCPU': 2, 'MEMORY_MB': 2048}}),
]
REQUESTS = [
    ('GET', '/audit', None),
    ('GET', '/audit?kind=over_capacity&in_tree=' + 'a2000000-0000-4000-8000'
     '-000000000001', None),
    ('POST', '/audit/what_if', {
        'inventories': {'a2000000-0000-4000-8000-000000000002': {
            'VCPU': {'allocation_ratio': 0.5}}},
        'resources': 'VCPU:2,MEMORY_MB:2048'}),
]


def provider_uuid(number):
    return PROVIDER_UUID % number


def consumer_uuid(number):
    return 'c2000000-0000-4000-8000-%012d' % number


def build(client, foreign):
    """The page's deployment: cn1 and cn2 in a rack (aggregate AGG) with
    a shared pool; an instance on cn1 with its disk on the pool, one
    evacuated from cn1 to cn2 and left on both, a migration on cn2 last
    written on 1 January 2026; then cn1's VCPU allocation ratio lowered
    to 0.5, under its usage."""
    create_providers(client, PROVIDERS, PROVIDER_UUID, AGG)
    client.post('/allocations', json={consumer_uuid(number): {
        'allocations': {provider_uuid(rp): {'resources': resources}
                        for rp, resources in held.items()},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None,
        'consumer_type': kind} for number, kind, held in CONSUMERS},
        status=204)
    with foreign.begin() as conn:
        conn.execute(sa.text(
            "UPDATE allocations SET created_at = '2026-01-01 00:00:00' "
            'WHERE consumer_id = :consumer'), {'consumer': consumer_uuid(3)})
    base = '/resource_providers/%s/inventories/VCPU' % provider_uuid(1)
    record = client.get(base).json
    client.put(base, json=dict(record, allocation_ratio=0.5))


def _json_blocks():
    """Each ``.. code-block:: json`` of the page, parsed."""
    blocks = []
    for match in re.finditer(r'\.\. code-block:: json\n\n((?:(?: +.*)?\n)+)',
                             PAGE.read_text()):
        blocks.append(json.loads(match.group(1)))
    return blocks


def _dated(body):
    """``body`` with each stale migration's age and reason reduced to
    their form."""
    for finding in body.get('stale_migrations', ()):
        assert finding['age_seconds'] > 86400
        finding['age_seconds'] = 'N'
        finding['reason'] = re.sub(r', \d+ s ago', ', N s ago',
                                   finding['reason'])
    return body


def answers(client):
    for method, path, body in REQUESTS:
        if method == 'GET':
            yield client.get(path).json
        else:
            yield client.post(path, json=body).json


def test_the_pages_examples_are_the_answers(client, foreign):
    build(client, foreign)
    blocks = _json_blocks()
    assert len(blocks) == len(REQUESTS)
    for request, answer, expected in zip(REQUESTS, answers(client), blocks):
        assert _dated(answer) == _dated(expected), request
