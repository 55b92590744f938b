"""POST /reshaper (1.30): inventories and allocations of a tree moved at
once, all or nothing."""

import pytest
import webtest

from placement import app as placement_app
from tests.conftest import Client

from tests.functional.allocation_helpers import allocation_rows
from tests.functional.allocation_helpers import ALT_USER
from tests.functional.allocation_helpers import C1
from tests.functional.allocation_helpers import C2
from tests.functional.allocation_helpers import C3
from tests.functional.allocation_helpers import C4
from tests.functional.allocation_helpers import CONCURRENT
from tests.functional.allocation_helpers import consumer_body
from tests.functional.allocation_helpers import consumer_generation
from tests.functional.allocation_helpers import consumer_rows
from tests.functional.allocation_helpers import error
from tests.functional.allocation_helpers import generation
from tests.functional.allocation_helpers import generations
from tests.functional.allocation_helpers import get
from tests.functional.allocation_helpers import held
from tests.functional.allocation_helpers import IN_USE
from tests.functional.allocation_helpers import inventories
from tests.functional.allocation_helpers import MAX_INT
from tests.functional.allocation_helpers import provider
from tests.functional.allocation_helpers import put
from tests.functional.allocation_helpers import RP_NOT_FOUND
from tests.functional.allocation_helpers import UNKNOWN_RP
from tests.functional.allocation_helpers import usages

DISK = {'total': 2048, 'step_size': 10, 'min_unit': 10, 'max_unit': 1200}
CHILD_VCPU = {'total': 10, 'max_unit': 8}


def _full(record):
    """An inventory record as GET returns it."""
    full = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}
    full.update(record)
    return full


@pytest.fixture
def tree(client):
    """A root with DISK_GB and VCPU used by three consumers (as upstream's
    AllocationFixture) and a child with nothing yet."""
    root = provider(client, 'root', DISK_GB={
        'total': 2048, 'step_size': 10, 'min_unit': 10, 'max_unit': 1000},
        VCPU={'total': 10, 'max_unit': 10})
    put(client, C1, {root['uuid']: {'DISK_GB': 1000}})
    put(client, C2, {root['uuid']: {'VCPU': 6}})
    put(client, C3, {root['uuid']: {'DISK_GB': 20, 'VCPU': 1}},
        user=ALT_USER)
    child = provider(client, 'child', parent=root)
    return root, child


# The reshaper's default policy is service-only.
SERVICE = {'X-Roles': 'admin,service'}


def _reshape(client, inventories_, allocations, status=204, version=None,
             headers=SERVICE):
    return client.post('/reshaper', status=status, version=version,
                       headers=headers, json={
                           'inventories': inventories_,
                           'allocations': allocations})


def _inv(client, rp, **records):
    return {rp['uuid']: {'resource_provider_generation': generation(
        client, rp), 'inventories': records}}


def _move_to_child(client, root, child, disk=DISK, child_vcpu=CHILD_VCPU):
    """The body that moves VCPU and its allocations to the child."""
    invs = dict(_inv(client, root, DISK_GB=disk),
                **_inv(client, child, VCPU=child_vcpu))
    allocations = {
        C1: consumer_body({root['uuid']: {'DISK_GB': 1000}}, 1),
        C2: consumer_body({child['uuid']: {'VCPU': 6}}, 1),
        C3: consumer_body({root['uuid']: {'DISK_GB': 20},
                           child['uuid']: {'VCPU': 1}}, 1, user=ALT_USER)}
    return invs, allocations


def _state(client, db, *rps):
    """All that a refused reshape must leave as it was."""
    return {'inventories': [inventories(client, rp) for rp in rps],
            'generations': generations(client, *rps),
            'usages': [usages(client, rp) for rp in rps],
            'rows': allocation_rows(db),
            'consumers': [get(client, c) for c in (C1, C2, C3, C4)]}


# -- the endpoint -----------------------------------------------------------

def test_reshaper_is_404_before_1_30(client, tree):
    resp = _reshape(client, *_move_to_child(client, *tree), status=404,
                    version='1.29')
    assert error(resp)['title'] == 'Not Found'


def test_reshaper_is_post_only(client):
    resp = client.get('/reshaper', status=405)
    assert resp.headers['Allow'] == 'POST'


@pytest.mark.parametrize('token, headers', [
    ('user', {}), ('admin', {}), ('user', {'X-Roles': 'member,reader'})])
def test_reshaper_needs_the_service_role(client, tree, token, headers):
    body = _move_to_child(client, *tree)
    client.token = token
    resp = _reshape(client, *body, status=403, headers=headers)
    assert ('Policy does not allow placement:reshaper:reshape'
            in error(resp)['detail'])


def test_admin_may_reshape_with_the_deprecated_defaults(client, conf, db,
                                                       tree):
    conf.set_override('enforce_new_defaults', False, group='oslo_policy')
    legacy = Client(webtest.TestApp(placement_app.build_app(
        conf, db, prepare=False)))
    _reshape(legacy, *_move_to_child(client, *tree), headers={})
    assert usages(client, tree[1]) == {'VCPU': 7}


@pytest.mark.parametrize('body, message', [
    ({'cows': 'moo'}, 'JSON does not validate'),
    ({'inventories': {}}, "'allocations' is a required property"),
    ({'inventories': {}, 'allocations': {}}, 'JSON does not validate'),
])
def test_malformed_bodies(client, body, message):
    resp = client.post('/reshaper', json=body, status=400, headers=SERVICE)
    assert message in error(resp)['detail']


def test_unexpected_fields_are_refused(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    invs[root['uuid']]['inventories']['DISK_GB'] = dict(DISK, bad_field='moo')
    resp = _reshape(client, invs, allocations, status=400)
    assert "'bad_field' was unexpected" in error(resp)['detail']
    invs, allocations = _move_to_child(client, root, child)
    allocations[C1]['bad_field'] = 'moo'
    resp = _reshape(client, invs, allocations, status=400)
    assert "'bad_field' was unexpected" in error(resp)['detail']
    assert _state(client, db, root, child) == before


# -- a successful reshape ---------------------------------------------------

def test_move_vcpu_inventory_and_allocations_to_a_child(client, tree):
    root, child = tree
    before = generations(client, root, child)
    _reshape(client, *_move_to_child(client, root, child))
    assert inventories(client, root) == {'DISK_GB': _full(DISK)}
    assert inventories(client, child) == {'VCPU': _full(CHILD_VCPU)}
    assert held(client, C1) == {root['uuid']: {'DISK_GB': 1000}}
    assert held(client, C2) == {child['uuid']: {'VCPU': 6}}
    assert held(client, C3) == {root['uuid']: {'DISK_GB': 20},
                                child['uuid']: {'VCPU': 1}}
    assert usages(client, root) == {'DISK_GB': 1020}
    assert usages(client, child) == {'VCPU': 7}
    # As upstream: the interim inventory, the allocations and the final
    # inventory each move a provider's generation.
    assert generations(client, root, child) == [before[0] + 3,
                                                before[1] + 3]
    assert [consumer_generation(client, c) for c in (C1, C2, C3)] == [
        2, 2, 2]


def test_move_back_with_new_and_emptied_consumers(client, db, tree):
    root, child = tree
    _reshape(client, *_move_to_child(client, root, child))
    before = generations(client, root, child)
    invs = dict(_inv(client, root, DISK_GB=DISK, VCPU=CHILD_VCPU),
                **_inv(client, child))
    _reshape(client, invs, {
        C1: consumer_body({root['uuid']: {'DISK_GB': 1000}}, 2),
        C4: consumer_body({root['uuid']: {'VCPU': 6}}, None),
        C2: consumer_body({}, 2),
        C3: consumer_body({root['uuid']: {'DISK_GB': 20, 'VCPU': 1}}, 2,
                          user=ALT_USER)})
    assert inventories(client, root) == {'DISK_GB': _full(DISK),
                                         'VCPU': _full(CHILD_VCPU)}
    assert inventories(client, child) == {}
    assert usages(client, root) == {'DISK_GB': 1020, 'VCPU': 7}
    assert usages(client, child) == {}
    assert held(client, C4) == {root['uuid']: {'VCPU': 6}}
    assert get(client, C2) == {'allocations': {}}
    assert consumer_rows(db, C2) == 0
    # The child's empty inventory needs no interim step, but the emptied
    # consumer and the final inventory move it.
    assert generations(client, root, child) == [before[0] + 3,
                                                before[1] + 2]


def test_inventory_only_reshape(client, tree):
    root, child = tree
    _reshape(client, _inv(client, child, MEMORY_MB={'total': 2048}), {})
    assert inventories(client, child) == {'MEMORY_MB': _full(
        {'total': 2048})}


def test_consumer_type_at_1_38(client, db, tree):
    root, child = tree
    invs, allocations = _move_to_child(client, root, child)
    del allocations[C2]['consumer_type']
    resp = _reshape(client, invs, allocations, status=400, version='1.38')
    assert "'consumer_type' is a required property" in error(resp)['detail']
    allocations[C2]['consumer_type'] = 'RESHAPED'
    resp = _reshape(client, invs, allocations, status=400, version='1.37')
    assert "'consumer_type' was unexpected" in error(resp)['detail']
    _reshape(client, invs, allocations, version='1.38')
    assert get(client, C2)['consumer_type'] == 'RESHAPED'
    assert get(client, C1)['consumer_type'] == 'INSTANCE'


def test_mappings_from_1_34(client, tree):
    root, child = tree
    invs, allocations = _move_to_child(client, root, child)
    for body in allocations.values():
        del body['consumer_type']
    allocations[C1]['mappings'] = {'': [root['uuid']]}
    resp = _reshape(client, invs, allocations, status=400, version='1.33')
    assert 'Additional properties are not allowed' in error(resp)['detail']
    _reshape(client, invs, allocations, version='1.34')
    assert usages(client, child) == {'VCPU': 7}


# -- refused reshapes change nothing ---------------------------------------

def test_unknown_provider_in_inventories(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    invs[UNKNOWN_RP] = invs.pop(child['uuid'])
    resp = _reshape(client, invs, allocations, status=400)
    assert error(resp)['code'] == RP_NOT_FOUND
    assert ('Resource provider %s in inventories not found' % UNKNOWN_RP
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_unknown_provider_in_allocations(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    allocations[C4] = consumer_body({UNKNOWN_RP: {'VCPU': 1}})
    resp = _reshape(client, invs, allocations, status=400)
    assert ("Allocation for resource provider '%s' that does not exist."
            % UNKNOWN_RP in error(resp)['detail'])
    assert _state(client, db, root, child) == before
    assert consumer_rows(db, C4) == 0


def test_stale_provider_generation(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    current = invs[root['uuid']]['resource_provider_generation']
    invs[root['uuid']]['resource_provider_generation'] = current - 1
    resp = _reshape(client, invs, allocations, status=409)
    assert error(resp)['code'] == CONCURRENT
    assert ('resource provider generation conflict for provider %s: '
            'actual: %d, given: %d' % (root['uuid'], current, current - 1)
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_reserved_above_total_is_refused(client, db, tree):
    """Upstream stores such an inventory from the reshaper (a capacity
    below zero); we refuse it as the inventory API does."""
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(
        client, root, child, child_vcpu={'total': 4, 'reserved': 5})
    resp = _reshape(client, invs, allocations, status=400)
    assert ("Invalid inventory for 'VCPU' on resource provider '%s'. The "
            "reserved value is greater than total." % child['uuid']
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_stale_consumer_generation(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    allocations[C3]['consumer_generation'] = 99
    resp = _reshape(client, invs, allocations, status=409)
    assert error(resp)['code'] == CONCURRENT
    assert ('consumer generation conflict - expected 1 but got 99'
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_unknown_resource_class(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    invs[root['uuid']]['inventories'] = {'DISK_OF_STEEL': DISK}
    resp = _reshape(client, invs, allocations, status=400)
    assert 'No such resource class DISK_OF_STEEL' in error(resp)['detail']
    assert _state(client, db, root, child) == before


@pytest.mark.parametrize('disk, child_vcpu, message', [
    # max_unit of DISK_GB below an allocation of 1000
    (dict(DISK, max_unit=600), CHILD_VCPU,
     "'DISK_GB' on resource provider '{root}'. The requested amount would "
     "violate inventory constraints."),
    # the child too small for the 7 VCPU moved onto it
    (DISK, {'total': 6, 'max_unit': 6},
     "'VCPU' on resource provider '{child}'. The requested amount would "
     "exceed the capacity."),
])
def test_allocations_that_do_not_fit(client, db, tree, disk, child_vcpu,
                                     message):
    root, child = tree
    before = _state(client, db, root, child)
    resp = _reshape(client, *_move_to_child(client, root, child, disk,
                                            child_vcpu), status=409)
    assert 'Unable to allocate inventory: Unable to create allocation for ' \
        in error(resp)['detail']
    assert message.format(root=root['uuid'], child=child['uuid']) in (
        error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_new_consumer_that_does_not_fit_is_not_created(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    # VCPU shrinks to 1 while C2 still holds 6: a new claim makes it worse.
    invs = _inv(client, root, DISK_GB=DISK, VCPU={'total': 1})
    resp = _reshape(client, invs, {
        C4: consumer_body({root['uuid']: {'VCPU': 1}}, None)}, status=409)
    assert 'Unable to allocate inventory' in error(resp)['detail']
    assert _state(client, db, root, child) == before
    assert consumer_rows(db, C4) == 0


def test_removing_inventory_still_allocated(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    # DISK_GB goes away while C1 and C3 still hold some.
    resp = _reshape(client, _inv(client, root, VCPU={'total': 10}), {},
                    status=409)
    assert error(resp)['code'] == IN_USE
    assert ("update conflict: Inventory for 'DISK_GB' on resource provider "
            "'%s' in use" % root['uuid'] in error(resp)['detail'])
    # Moving only some of the allocations away is not enough either.
    invs, allocations = _move_to_child(client, root, child)
    invs[root['uuid']]['inventories'] = {}
    resp = _reshape(client, invs, allocations, status=409)
    assert error(resp)['code'] == IN_USE
    assert _state(client, db, root, child) == before


def test_unknown_resource_class_in_allocations(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    allocations[C4] = consumer_body({root['uuid']: {'CUSTOM_PONY': 1}})
    resp = _reshape(client, invs, allocations, status=400)
    assert ('malformed reshaper data: No such resource class CUSTOM_PONY'
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before
    assert consumer_rows(db, C4) == 0


def test_allocation_of_a_class_the_provider_will_not_have(client, db, tree):
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    # The child gets VCPU only, but C2 asks it for DISK_GB.
    allocations[C2] = consumer_body({child['uuid']: {'VCPU': 6,
                                                     'DISK_GB': 10}}, 1)
    resp = _reshape(client, invs, allocations, status=409)
    assert ("Unable to allocate inventory: Inventory for 'DISK_GB' on "
            "resource provider '%s' invalid." % child['uuid']
            in error(resp)['detail'])
    assert _state(client, db, root, child) == before


def test_inventory_may_shrink_below_untouched_usage(client, tree):
    # As upstream: only the allocations written are checked against the
    # new inventory; C2's 6 VCPU stay although only 1 is left.
    root, child = tree
    _reshape(client, _inv(client, root, DISK_GB=DISK, VCPU={'total': 1}), {})
    assert inventories(client, root)['VCPU']['total'] == 1
    assert usages(client, root) == {'DISK_GB': 1020, 'VCPU': 7}
    assert held(client, C2) == {root['uuid']: {'VCPU': 6}}


def test_amount_beyond_the_largest_integer_is_409(client, db, tree):
    # As upstream: no inventory can hold it, so the capacity check refuses
    # it before anything is stored.
    root, child = tree
    before = _state(client, db, root, child)
    invs, allocations = _move_to_child(client, root, child)
    allocations[C2] = consumer_body({child['uuid']: {'VCPU': MAX_INT + 1}},
                                    1)
    resp = _reshape(client, invs, allocations, status=409)
    assert 'Unable to allocate inventory' in error(resp)['detail']
    assert _state(client, db, root, child) == before
