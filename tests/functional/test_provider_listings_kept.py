"""Short listings of providers answered from memory equal a fresh read,
always, and cost no question of the state once kept.

``placement.state.listing.body`` keeps a listing's body until the change
log names a write that may move it: for a tree (``in_tree``), a write to
one of its providers, a provider created in it or moved into it (logged
with the tree's root); for any other filter, a write to any provider.
Each test lists first (so that the answers are kept), writes, and
requires the next answers to equal what SQL says at that moment.
"""

import uuid as uuidlib

import pytest

from placement.state import listing
from placement.storage import resource_providers as rp_storage

from tests.functional import kept_answers_cases
from tests.functional.kept_answers_cases import sql

NAMESPACE = uuidlib.UUID('5b0f3c1e-8d6a-4c2b-9e7f-1a2b3c4d5e6f')
AGGREGATE = str(uuidlib.uuid5(NAMESPACE, 'aggregate'))
SHARING = ('/resource_providers?member_of=in:%s'
           '&required=MISC_SHARES_VIA_AGGREGATE' % AGGREGATE)
FIELDS = ('uuid', 'name', 'generation', 'parent_provider_uuid',
          'root_provider_uuid')

hosts_alone = kept_answers_cases.hosts     # the fixture
asked = kept_answers_cases.asked     # the fixture


@pytest.fixture
def hosts(client, hosts_alone):
    """The two compute nodes, the first in AGGREGATE (not sharing): the
    state knows the aggregate, so that it answers the sharing listing."""
    client.put('/resource_providers/%s/aggregates' % hosts_alone[0], json={
        'resource_provider_generation': _generation(client, hosts_alone[0]),
        'aggregates': [AGGREGATE]}, version='1.19')
    return hosts_alone


def _tree(host):
    return '/resource_providers?in_tree=%s' % host


def _listings(client, hosts):
    paths = [_tree(host) for host in hosts] + [SHARING]
    return [sorted(tuple(provider[field] for field in FIELDS)
                   for provider in client.get(path, version='1.18').json[
                       'resource_providers'])
            for path in paths]


def _fresh(db, hosts):
    """What the tables say, in ``_listings``' form."""
    filters = [rp_storage.Filters(in_tree=host) for host in hosts] + [
        rp_storage.Filters(member_of=[{AGGREGATE}], required_traits=[
            {'MISC_SHARES_VIA_AGGREGATE'}])]
    return [sorted(tuple(provider[field] for field in FIELDS)
                   for provider in db.read(rp_storage.list_providers, each))
            for each in filters]


def _kept(db, asked):
    return {key[0] for key, _shape in kept_answers_cases.kept_keys(
        db, asked, listing.SHELF)}


def _generation(client, uuid):
    return client.get('/resource_providers/' + uuid).json['generation']


def _share(client, uuid):
    """``uuid`` in AGGREGATE, sharing through it."""
    client.put('/resource_providers/%s/aggregates' % uuid, json={
        'resource_provider_generation': _generation(client, uuid),
        'aggregates': [AGGREGATE]}, version='1.19')
    client.put('/resource_providers/%s/traits' % uuid, json={
        'resource_provider_generation': _generation(client, uuid),
        'traits': ['MISC_SHARES_VIA_AGGREGATE']}, version='1.6')


def test_kept_listings_ask_the_state_nothing(asked, client, db, hosts,
                                             monkeypatch):
    first = _listings(client, hosts)
    assert first == _fresh(db, hosts)
    assert _kept(db, asked) == set(hosts) | {None}
    kept_answers_cases.asking_the_state_fails(monkeypatch)
    assert _listings(client, hosts) == first


def test_a_write_in_one_tree_keeps_the_other_tree(asked, client, db,
                                                   hosts):
    _listings(client, hosts)
    kept_answers_cases.reserve_a_vcpu(client, hosts)
    client.get(_tree(hosts[1]), version='1.18')
    assert _kept(db, asked) == {hosts[1]}
    assert _listings(client, hosts) == _fresh(db, hosts)


def _child_of(client, parent, name='numa0'):
    return client.post('/resource_providers', json={
        'name': name, 'parent_provider_uuid': parent},
        version='1.20').json['uuid']


def _with_child(client, hosts):
    return _child_of(client, hosts[0])


def _with_sharing(client, hosts):
    _share(client, hosts[1])


def _child(client, hosts, _made):
    _child_of(client, hosts[0])


def _grandchild(client, hosts, child):
    _child_of(client, child, 'pf0')


def _moved_to_another_tree(client, hosts, _made):
    """cn2 under cn1: cn1's tree gains it, cn2's listing moves."""
    client.put('/resource_providers/' + hosts[1], json={
        'name': 'cn2', 'parent_provider_uuid': hosts[0]}, version='1.37')


def _child_moved_out(client, hosts, child):
    client.put('/resource_providers/' + child, json={
        'name': 'numa0', 'parent_provider_uuid': hosts[1]}, version='1.37')


def _child_deleted(client, hosts, child):
    client.delete('/resource_providers/' + child)


def _renamed(client, hosts, _made):
    client.put('/resource_providers/' + hosts[1], json={'name': 'cn2b'})


def _inventory(client, hosts, _made):
    kept_answers_cases.reserve_a_vcpu(client, hosts)


def _sharing(client, hosts, _made):
    _share(client, hosts[1])


def _no_longer_sharing(client, hosts, _made):
    client.put('/resource_providers/%s/traits' % hosts[1], json={
        'resource_provider_generation': _generation(client, hosts[1]),
        'traits': []}, version='1.6')


# name: (what is made before the listings are kept, the write)
WRITES = {
    'a child created': (None, _child),
    'a grandchild created': (_with_child, _grandchild),
    'a root moved under another tree': (None, _moved_to_another_tree),
    'a child moved to another tree': (_with_child, _child_moved_out),
    'a child deleted': (_with_child, _child_deleted),
    'a provider renamed': (None, _renamed),
    'an inventory': (None, _inventory),
    'a provider sharing': (None, _sharing),
    'a provider no longer sharing': (_with_sharing, _no_longer_sharing),
}


@pytest.mark.parametrize('write', sorted(WRITES))
def test_our_write_is_seen_by_the_next_listing(client, db, hosts, write):
    setup, change = WRITES[write]
    made = setup(client, hosts) if setup else None
    kept_answers_cases.seen_by_the_next_answers(
        lambda: _listings(client, hosts), lambda: _fresh(db, hosts),
        lambda: change(client, hosts, made))


def _moved_by_hand(foreign, hosts):
    """cn2 under cn1, by SQL that is not this service's."""
    with foreign.begin() as conn:
        sql(conn, 'UPDATE resource_providers SET parent_provider_id = '
                  '(SELECT id FROM (SELECT id FROM resource_providers '
                  'WHERE uuid = :root) AS cn1), root_provider_id = '
                  '(SELECT id FROM (SELECT id FROM resource_providers '
                  'WHERE uuid = :root) AS cn1) WHERE uuid = :child',
            root=hosts[0], child=hosts[1])


def test_a_foreign_write_is_seen_by_the_next_listing(client, db, foreign,
                                                     hosts):
    kept_answers_cases.seen_by_the_next_answers(
        lambda: _listings(client, hosts), lambda: _fresh(db, hosts),
        lambda: _moved_by_hand(foreign, hosts))


def test_a_tree_too_large_is_not_kept(asked, client, db, hosts,
                                      monkeypatch):
    monkeypatch.setattr(listing, 'TREE_OWNERS_AT_MOST', 1)
    _child_of(client, hosts[0])
    _listings(client, hosts)
    assert _kept(db, asked) == {hosts[1], None}
