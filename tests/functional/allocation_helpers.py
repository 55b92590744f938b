"""Helpers shared by the allocation, usage and reshaper tests.

Everything goes through the API (providers, inventories, allocations), so
the tests read like a client's session; ``consumer_rows`` looks straight
into the database for what the API cannot show (a consumer record left
without allocations).
"""

import sqlalchemy as sa

from placement.storage import tables

PROJECT = '42a32c07-3eeb-4401-9373-68a8cdca6784'
USER = '66cb2f29-c86d-47c3-8af5-69ae7b778c70'
ALT_PROJECT = 'b2e599e0-ded8-47fd-b8ab-ceb7fca578bd'
ALT_USER = '8c974f9a-f266-42f7-8613-a8017cbfb87f'
INCOMPLETE = '00000000-0000-0000-0000-000000000000'
MAX_INT = 2147483647

CONCURRENT = 'placement.concurrent_update'
IN_USE = 'placement.inventory.inuse'
UNDEFINED = 'placement.undefined_code'
RP_NOT_FOUND = 'placement.resource_provider.not_found'

C1 = '11111111-1111-4111-8111-111111111111'
C2 = '22222222-2222-4222-8222-222222222222'
C3 = '33333333-3333-4333-8333-333333333333'
C4 = '44444444-4444-4444-8444-444444444444'
UNKNOWN_RP = 'be8b9cba-e7db-4a12-a386-99b4242167fe'

GMT_DATE = r'^\w+, \d+ \w+ \d{4} [\d:]+ GMT$'


def error(resp):
    return resp.json['errors'][0]


def provider(client, name, parent=None, **inventory):
    """A new provider; ``inventory`` is {class: total or record}."""
    body = {'name': name}
    if parent is not None:
        body['parent_provider_uuid'] = parent['uuid']
    rp = client.post('/resource_providers', json=body).json
    if inventory:
        set_inventory(client, rp, **inventory)
    return rp


def set_inventory(client, rp, **inventory):
    records = {name: value if isinstance(value, dict) else {'total': value}
               for name, value in inventory.items()}
    return client.put(
        '/resource_providers/%s/inventories' % rp['uuid'],
        json={'resource_provider_generation': generation(client, rp),
              'inventories': records})


def generation(client, rp):
    return client.get('/resource_providers/' + rp['uuid']).json['generation']


def generations(client, *rps):
    return [generation(client, rp) for rp in rps]


def inventories(client, rp):
    return client.get('/resource_providers/%s/inventories'
                      % rp['uuid']).json['inventories']


def usages(client, rp):
    return client.get('/resource_providers/%s/usages'
                      % rp['uuid']).json['usages']


def consumer_body(allocations, consumer_generation=None,
                  consumer_type='INSTANCE', project=PROJECT, user=USER):
    """One consumer's body at 1.38: ``allocations`` is {provider uuid:
    {class: amount}}."""
    return {
        'allocations': {rp: {'resources': resources}
                        for rp, resources in allocations.items()},
        'consumer_generation': consumer_generation,
        'consumer_type': consumer_type,
        'project_id': project, 'user_id': user}


def put(client, consumer, allocations, consumer_generation=None,
        status=204, version=None, **fields):
    return client.put('/allocations/' + consumer,
                      json=consumer_body(allocations, consumer_generation,
                                         **fields),
                      status=status, version=version)


def get(client, consumer, version=None):
    return client.get('/allocations/' + consumer, version=version).json


def held(client, consumer):
    """{provider uuid: {class: amount}} the consumer holds."""
    return {rp: entry['resources'] for rp, entry in
            get(client, consumer)['allocations'].items()}


def consumer_generation(client, consumer):
    return get(client, consumer).get('consumer_generation')


def consumer_rows(db, consumer):
    """How many consumer records ``consumer`` has (0 or 1)."""
    table = tables.consumers
    return db.read(lambda conn: conn.scalar(
        sa.select(sa.func.count()).select_from(table)
        .where(table.c.uuid == consumer)))


def allocation_rows(db):
    """Every allocation row as (consumer, provider id, class id, used)."""
    table = tables.allocations
    return db.read(lambda conn: sorted(
        tuple(row) for row in conn.execute(sa.select(
            table.c.consumer_id, table.c.resource_provider_id,
            table.c.resource_class_id, table.c.used))))
