"""DELETE /resource_providers/{uuid}."""

import sqlalchemy as sa

from placement.storage import tables
from tests.functional.test_resource_providers_list import add_inventory
from tests.functional.test_resource_providers_list import allocate
from tests.functional.test_resource_providers_list import give_traits
from tests.functional.test_resource_providers_list import join_aggregates
from tests.functional.test_resource_providers_list import new_provider

UNKNOWN_UUID = 'd67370b5-4dc0-470d-a4fa-85e8e89abc6c'
AGG = 'a0a0a0a0-0000-4000-8000-00000000000a'


def url(provider):
    return '/resource_providers/' + provider['uuid']


def _count(db, table, provider_id):
    return db.read(lambda conn: conn.scalar(
        sa.select(sa.func.count()).select_from(table)
        .where(table.c.resource_provider_id == provider_id)))


def _provider_id(db, provider):
    rp = tables.resource_providers
    return db.read(lambda conn: conn.scalar(
        sa.select(rp.c.id).where(rp.c.uuid == provider['uuid'])))


def test_delete_is_204_and_the_provider_is_gone(client):
    rp = new_provider(client, 'rp')
    resp = client.delete(url(rp), status=204)
    assert resp.body == b''
    assert 'Content-Type' not in resp.headers
    client.get(url(rp), status=404)
    assert client.get('/resource_providers').json == {
        'resource_providers': []}


def test_delete_takes_inventories_traits_and_aggregate_links(client, db):
    rp = new_provider(client, 'rp')
    keep = new_provider(client, 'keep')
    for provider in (rp, keep):
        add_inventory(db, provider, 'VCPU', total=4)
        give_traits(db, provider, 'HW_CPU_X86_SGX')
        join_aggregates(db, provider, AGG)
    rp_id, keep_id = _provider_id(db, rp), _provider_id(db, keep)
    client.delete(url(rp), status=204)
    for table in (tables.inventories, tables.resource_provider_traits,
                  tables.resource_provider_aggregates):
        assert _count(db, table, rp_id) == 0
        assert _count(db, table, keep_id) == 1
    # The aggregate itself and the trait stay: others may use them.
    assert client.get('/resource_providers?member_of=' + AGG).json[
        'resource_providers'][0]['name'] == 'keep'


def test_unknown_provider_is_404(client):
    resp = client.delete('/resource_providers/' + UNKNOWN_UUID, status=404)
    assert ('No resource provider with uuid %s found for delete'
            % UNKNOWN_UUID) in resp.json['errors'][0]['detail']


def test_deleting_twice_is_404(client):
    rp = new_provider(client, 'rp')
    client.delete(url(rp), status=204)
    client.delete(url(rp), status=404)


def test_a_parent_cannot_be_deleted(client):
    root = new_provider(client, 'root')
    child = new_provider(client, 'child', parent=root)
    resp = client.delete(url(root), status=409)
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.resource_provider.cannot_delete_parent'
    assert ('Unable to delete parent resource provider %s: It has child '
            'resource providers.' % root['uuid']) in error['detail']
    client.delete(url(child), status=204)
    client.delete(url(root), status=204)


def test_a_provider_with_allocations_cannot_be_deleted(client, db):
    rp = new_provider(client, 'rp')
    add_inventory(db, rp, 'VCPU', total=4)
    allocate(db, rp, 'VCPU', 1)
    resp = client.delete(url(rp), status=409)
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.resource_provider.inuse'
    assert ('Unable to delete resource provider %s: Resource provider has '
            'allocations.' % rp['uuid']) in error['detail']
    # Nothing was removed.
    assert _count(db, tables.inventories, _provider_id(db, rp)) == 1


def test_a_child_can_be_deleted(client):
    root = new_provider(client, 'root')
    child = new_provider(client, 'child', parent=root)
    client.delete(url(child), status=204)
    assert [rp['name'] for rp in client.get(
        '/resource_providers?in_tree=' + root['uuid']).json[
        'resource_providers']] == ['root']


def test_delete_needs_policy_before_lookup(client):
    client.token = 'user'
    client.delete('/resource_providers/' + UNKNOWN_UUID, status=403)
