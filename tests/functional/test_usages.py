"""GET /resource_providers/{uuid}/usages and GET /usages (1.9; by consumer
type from 1.38)."""

import re

import pytest

from tests.functional.allocation_helpers import ALT_PROJECT
from tests.functional.allocation_helpers import ALT_USER
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import C3
from tests.functional.allocation_helpers import C4
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import GMT_DATE
from tests.functional.allocation_helpers import PROJECT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import UNKNOWN_RP
from tests.functional.allocation_helpers import USER

C5 = '55555555-5555-4555-8555-555555555555'


def _usages(client, query, version='1.38', status=200):
    return client.get('/usages?' + query, version=version, status=status)


def _provider_usages(client, rp, **kwargs):
    return client.get('/resource_providers/%s/usages' % rp['uuid'], **kwargs)


@pytest.fixture
def rp(client):
    return provider(client, 'rp', VCPU=32, MEMORY_MB=4096, DISK_GB=2048)


@pytest.fixture
def seeded(client, rp):
    """Consumers of two projects, two users and three types (one untyped).
    """
    uuid = rp['uuid']
    put(client, C1, {uuid: {'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 10}})
    put(client, C2, {uuid: {'VCPU': 1, 'DISK_GB': 5}}, user=ALT_USER)
    put(client, C3, {uuid: {'VCPU': 4}}, consumer_type='MIGRATION')
    client.put('/allocations/' + C4, version='1.37', status=204, json={
        'allocations': {uuid: {'resources': {'DISK_GB': 20,
                                             'MEMORY_MB': 128}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None})
    put(client, C5, {uuid: {'VCPU': 8}}, project=ALT_PROJECT)
    return rp


# -- a provider's usages ----------------------------------------------------

def test_provider_usages_of_unknown_provider_is_404(client):
    resp = client.get('/resource_providers/%s/usages' % UNKNOWN_RP,
                      status=404)
    assert ('No resource provider with uuid %s found' % UNKNOWN_RP
            in error(resp)['detail'])


def test_provider_without_inventory_has_no_usages(client):
    bare = provider(client, 'bare')
    assert _provider_usages(client, bare).json == {
        'resource_provider_generation': 0, 'usages': {}}


def test_every_inventory_class_is_listed_with_zero_when_unused(client, rp):
    assert _provider_usages(client, rp).json == {
        'resource_provider_generation': 1,
        'usages': {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}}


def test_provider_usages_sum_its_consumers(client, seeded):
    other = provider(client, 'other', VCPU=4)
    put(client, '66666666-6666-4666-8666-666666666666',
        {other['uuid']: {'VCPU': 3}})
    assert _provider_usages(client, seeded).json == {
        'resource_provider_generation': 6,
        'usages': {'VCPU': 15, 'MEMORY_MB': 640, 'DISK_GB': 35}}
    assert _provider_usages(client, other).json['usages'] == {'VCPU': 3}


def test_provider_usages_cache_headers_from_1_15(client, rp):
    old = _provider_usages(client, rp, version='1.14')
    assert 'Cache-Control' not in old.headers
    assert 'Last-Modified' not in old.headers
    new = _provider_usages(client, rp, version='1.15')
    assert new.headers['Cache-Control'] == 'no-cache'
    assert re.match(GMT_DATE, new.headers['Last-Modified'])


# -- GET /usages before 1.38 -------------------------------------------------

def test_usages_is_404_before_1_9(client):
    _usages(client, 'project_id=' + PROJECT, version='1.8', status=404)


@pytest.mark.parametrize('version', ['1.9', '1.38'])
def test_project_id_is_required(client, version):
    resp = client.get('/usages', version=version, status=400)
    assert "'project_id' is a required property" in error(resp)['detail']
    resp = _usages(client, 'user_id=' + USER, version=version, status=400)
    assert "'project_id' is a required property" in error(resp)['detail']


@pytest.mark.parametrize('query, failure', [
    ('project_id=', "Failed validating 'minLength'"),
    ('project_id=%s&user_id=' % PROJECT, "Failed validating 'minLength'"),
    ('project_id=' + 'x' * 256, "Failed validating 'maxLength'"),
    ('project_id=%s&user_id=%s' % (PROJECT, 'x' * 256),
     "Failed validating 'maxLength'"),
    ('project_id=%s&dummy=1' % PROJECT,
     'Additional properties are not allowed'),
    ('project_id=%s&consumer_type=INSTANCE' % PROJECT,
     'Additional properties are not allowed'),
])
def test_bad_queries_at_1_9(client, query, failure):
    resp = _usages(client, query, version='1.37', status=400)
    assert failure in error(resp)['detail']


def test_unknown_project_or_user_uses_nothing(client, seeded):
    assert _usages(client, 'project_id=nobody', '1.9').json == {'usages': {}}
    assert _usages(client, 'project_id=%s&user_id=nobody' % PROJECT,
                   '1.9').json == {'usages': {}}
    assert _usages(client, 'project_id=nobody').json == {'usages': {}}


def test_project_usages(client, seeded):
    assert _usages(client, 'project_id=' + PROJECT, '1.9').json == {
        'usages': {'VCPU': 7, 'MEMORY_MB': 640, 'DISK_GB': 35}}
    assert _usages(client, 'project_id=' + ALT_PROJECT, '1.37').json == {
        'usages': {'VCPU': 8}}


def test_project_and_user_usages(client, seeded):
    query = 'project_id=%s&user_id=%s' % (PROJECT, USER)
    assert _usages(client, query, '1.9').json == {
        'usages': {'VCPU': 6, 'MEMORY_MB': 640, 'DISK_GB': 30}}
    query = 'project_id=%s&user_id=%s' % (PROJECT, ALT_USER)
    assert _usages(client, query, '1.9').json == {
        'usages': {'VCPU': 1, 'DISK_GB': 5}}
    # The user's consumers of another project do not count.
    query = 'project_id=%s&user_id=%s' % (ALT_PROJECT, ALT_USER)
    assert _usages(client, query, '1.9').json == {'usages': {}}


def test_usages_follow_writes_and_deletes(client, seeded):
    put(client, C1, {seeded['uuid']: {'VCPU': 1}}, 1)
    client.delete('/allocations/' + C3, status=204)
    assert _usages(client, 'project_id=' + PROJECT, '1.9').json == {
        'usages': {'VCPU': 2, 'MEMORY_MB': 128, 'DISK_GB': 25}}


def test_usages_cache_headers_from_1_15(client):
    old = _usages(client, 'project_id=' + PROJECT, '1.14')
    assert 'Cache-Control' not in old.headers
    assert 'Last-Modified' not in old.headers
    new = _usages(client, 'project_id=' + PROJECT, '1.15')
    assert new.headers['Cache-Control'] == 'no-cache'
    assert re.match(GMT_DATE, new.headers['Last-Modified'])


# -- GET /usages by consumer type (1.38) ------------------------------------

INSTANCE = {'VCPU': 3, 'MEMORY_MB': 512, 'DISK_GB': 15, 'consumer_count': 2}
MIGRATION = {'VCPU': 4, 'consumer_count': 1}
UNTYPED = {'DISK_GB': 20, 'MEMORY_MB': 128, 'consumer_count': 1}


def test_grouped_by_consumer_type(client, seeded):
    assert _usages(client, 'project_id=' + PROJECT).json == {'usages': {
        'INSTANCE': INSTANCE, 'MIGRATION': MIGRATION, 'unknown': UNTYPED}}
    assert _usages(client, 'project_id=' + ALT_PROJECT).json == {
        'usages': {'INSTANCE': {'VCPU': 8, 'consumer_count': 1}}}


def test_grouped_by_consumer_type_for_a_user(client, seeded):
    query = 'project_id=%s&user_id=%s' % (PROJECT, USER)
    assert _usages(client, query).json == {'usages': {
        'INSTANCE': {'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 10,
                     'consumer_count': 1},
        'MIGRATION': MIGRATION, 'unknown': UNTYPED}}


@pytest.mark.parametrize('consumer_type, expected', [
    ('INSTANCE', {'INSTANCE': INSTANCE}),
    ('MIGRATION', {'MIGRATION': MIGRATION}),
    ('unknown', {'unknown': UNTYPED}),
    ('all', {'all': {'VCPU': 7, 'MEMORY_MB': 640, 'DISK_GB': 35,
                     'consumer_count': 4}}),
    # Names only: these are not the special values.
    ('COW', {}), ('ALL', {}), ('UNKNOWN', {}),
])
def test_filtered_by_consumer_type(client, seeded, consumer_type, expected):
    resp = _usages(client, 'project_id=%s&consumer_type=%s'
                   % (PROJECT, consumer_type))
    assert resp.json == {'usages': expected}


def test_all_for_a_user(client, seeded):
    query = 'project_id=%s&user_id=%s&consumer_type=all' % (PROJECT, USER)
    assert _usages(client, query).json == {'usages': {'all': {
        'VCPU': 6, 'MEMORY_MB': 640, 'DISK_GB': 30, 'consumer_count': 3}}}


def test_a_consumer_of_several_classes_counts_once(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 1, 'MEMORY_MB': 1, 'DISK_GB': 1}})
    other = provider(client, 'other', VCPU=4)
    put(client, C2, {rp['uuid']: {'VCPU': 1}, other['uuid']: {'VCPU': 2}})
    expected = {'VCPU': 4, 'MEMORY_MB': 1, 'DISK_GB': 1, 'consumer_count': 2}
    assert _usages(client, 'project_id=' + PROJECT).json == {
        'usages': {'INSTANCE': expected}}
    assert _usages(client, 'project_id=%s&consumer_type=all'
                   % PROJECT).json == {'usages': {'all': expected}}


def test_a_retyped_consumer_moves_group(client, rp):
    put(client, C1, {rp['uuid']: {'VCPU': 2}})
    put(client, C1, {rp['uuid']: {'VCPU': 2}}, 1, consumer_type='PONY')
    assert _usages(client, 'project_id=' + PROJECT).json == {
        'usages': {'PONY': {'VCPU': 2, 'consumer_count': 1}}}


def test_empty_project_by_type(client, rp):
    # The project is known (it had a consumer) but uses nothing now.
    put(client, C1, {rp['uuid']: {'VCPU': 2}})
    client.delete('/allocations/' + C1, status=204)
    for query in ('', '&consumer_type=all', '&consumer_type=unknown',
                  '&consumer_type=INSTANCE'):
        assert _usages(client, 'project_id=%s%s' % (PROJECT, query)).json == {
            'usages': {}}


@pytest.mark.parametrize('consumer_type, failure', [
    ('pony', 'pattern'), ('Instance', 'pattern'), ('A-B', 'pattern'),
    ('', None)])
def test_invalid_consumer_type_is_400(client, consumer_type, failure):
    resp = _usages(client, 'project_id=%s&consumer_type=%s'
                   % (PROJECT, consumer_type), status=400)
    assert 'Invalid query string parameters' in error(resp)['detail']
    if failure:
        assert "Failed validating '%s'" % failure in error(resp)['detail']


def test_other_parameters_still_refused_at_1_38(client):
    resp = _usages(client, 'project_id=%s&dummy=1' % PROJECT, status=400)
    assert 'Additional properties are not allowed' in error(resp)['detail']


def test_a_user_without_roles_is_refused(client):
    client.token = 'user'
    resp = _usages(client, 'project_id=' + PROJECT, status=403)
    assert 'placement:usages' in error(resp)['detail']


def test_a_project_reader_sees_its_own_project_only(client, seeded):
    client.token = 'reader:' + PROJECT
    reader = {'X-Roles': 'reader'}
    resp = client.get('/usages?project_id=' + PROJECT, headers=reader)
    assert resp.json['usages']['MIGRATION'] == MIGRATION
    resp = client.get('/usages?project_id=' + ALT_PROJECT, headers=reader,
                      status=403)
    assert 'placement:usages' in error(resp)['detail']
    # A provider's usage is for admins and services.
    client.get('/resource_providers/%s/usages' % seeded['uuid'],
               headers=reader, status=403)
    client.get('/resource_providers/%s/usages' % seeded['uuid'],
               headers={'X-Roles': 'service'})
