"""The differential replay's comparison: what counts as a difference."""

import json

from tests.differential import replay
from tests.differential.sequence import Generator
from tests.differential.sequence import Step

PORTS = [1111, 2222]


def answer(status, body, **headers):
    headers = {name.replace('_', '-'): value
               for name, value in headers.items()}
    headers.setdefault('content-type', 'application/json')
    return replay.Answer(status, headers, json.dumps(body).encode())


def error(status, detail):
    return {'errors': [{'status': status, 'detail': detail,
                        'request_id': 'req-%d' % len(detail)}]}


def compare(step, ours, theirs, details=False):
    return replay.differences(step, ours, theirs, PORTS, details)


def test_same_answers_with_lists_in_another_order_agree():
    step = Step('GET', '/resource_providers')
    ours = answer(200, {'resource_providers': [{'uuid': 'a'}, {'uuid': 'b'}]})
    theirs = answer(200, {'resource_providers': [{'uuid': 'b'},
                                                 {'uuid': 'a'}]})
    assert compare(step, ours, theirs) == []


def test_status_headers_and_bodies_are_compared():
    step = Step('GET', '/')
    assert compare(step, answer(200, {}), answer(404, {}))[0] == (
        'status 200 vs upstream 404')
    found = compare(step, answer(405, {}, allow='GET, PUT'),
                    answer(405, {}, allow='PUT, GET'))
    assert found and found[0].startswith('headers')
    assert compare(step, answer(200, {'a': 1}), answer(200, {'a': 2}))


def test_location_is_compared_without_the_servers_ports():
    step = Step('POST', '/resource_providers')
    ours = answer(201, None, location='http://127.0.0.1:1111/rp/x')
    theirs = answer(201, None, location='http://127.0.0.1:2222/rp/x')
    assert compare(step, ours, theirs) == []


def test_error_details_only_when_asked_for():
    step = Step('GET', '/')
    ours = answer(400, error(400, 'one wording'))
    theirs = answer(400, error(400, 'another wording'))
    assert compare(step, ours, theirs) == []
    assert compare(step, ours, theirs, details=True)


def test_quoted_lists_in_details_are_sets():
    step = Step('PUT', '/allocations/c')
    ours = answer(409, error(409, "Inventory for 'A, B' on 'x, y' invalid"))
    theirs = answer(409, error(409, "Inventory for 'B, A' on 'y, x' invalid"))
    assert compare(step, ours, theirs, details=True) == []
    ours = answer(400, error(400, "['_1', '_3'] not found in ['', '1']"))
    theirs = answer(400, error(400, "['_3', '_1'] not found in ['', '1']"))
    assert compare(step, ours, theirs, details=True) == []
    theirs = answer(400, error(400, "['_3', '_2'] not found in ['', '1']"))
    assert compare(step, ours, theirs, details=True)


def test_vary_is_not_compared_on_errors():
    step = Step('GET', '/x')
    ours = answer(404, {}, vary='openstack-api-version')
    assert compare(step, ours, answer(404, {})) == []
    assert compare(step, answer(200, {}, vary='openstack-api-version'),
                   answer(200, {}))


def test_limited_candidates_are_compared_by_count():
    step = Step('GET', '/allocation_candidates?resources=VCPU:1&limit=1')

    def candidates(uuid):
        return answer(200, {'allocation_requests': [{'allocations': {
            uuid: {'resources': {'VCPU': 1}}}}], 'provider_summaries': {}})
    assert compare(step, candidates('a'), candidates('b')) == []
    unlimited = Step('GET', '/allocation_candidates?resources=VCPU:1')
    assert compare(unlimited, candidates('a'), candidates('b'))


def test_a_seed_always_draws_the_same_sequence():
    def draw(seed):
        generator = Generator(seed)
        return [str(generator.next()) for _ in range(50)]
    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def candidates(*requests):
    return answer(200, {'allocation_requests': list(requests),
                        'provider_summaries': {}})


def test_a_candidate_allocating_other_amounts_than_asked_is_over_allocated():
    step = Step('GET', '/allocation_candidates?resources=DISK_GB:1,VGPU:1'
                '&resources1=DISK_GB:1&group_policy=isolate')
    exact = {'allocations': {'a': {'resources': {'DISK_GB': 1}},
                             'b': {'resources': {'DISK_GB': 1, 'VGPU': 1}}}}
    summed = {'allocations': {'a': {'resources': {'DISK_GB': 2,
                                                  'VGPU': 1}}}}
    upstream_bug = {'allocations': {'a': {'resources': {'DISK_GB': 3,
                                                        'VGPU': 1}}}}
    assert not replay.over_allocated(step, candidates(exact, summed))
    assert replay.over_allocated(step, candidates(exact, upstream_bug))


def test_over_allocation_reads_both_shapes_and_only_candidates():
    step = Step('GET', '/allocation_candidates?resources=VCPU:2',
                version='1.10')
    listed = {'allocations': [{'resource_provider': {'uuid': 'a'},
                               'resources': {'VCPU': 2}}]}
    assert not replay.over_allocated(step, candidates(listed))
    listed['allocations'][0]['resources']['VCPU'] = 3
    assert replay.over_allocated(step, candidates(listed))
    other = Step('GET', '/resource_providers?resources=VCPU:2')
    assert not replay.over_allocated(other, candidates(listed))
    assert not replay.over_allocated(step, answer(400, error(400, 'x')))


def test_edges_name_only_the_differences_made_on_purpose():
    from tests.differential import edges
    assert edges.known('GET', '/usages?project_id=%00', (400, ''),
                       (500, '')) == "upstream's own error"
    assert edges.known('GET', '/resource_providers?name=%00', (400, ''),
                       (200, ''))
    assert edges.known('PATCH', '/allocations/x', (415, ''), (405, ''))
    assert edges.known('GET', '/resource_providers', (400, ''),
                       (200, '')) is None
    assert edges.known('GET', '/nope', (500, ''), (404, '')) is None


def test_edge_requests_carry_the_microversion_and_headers_asked_for():
    from tests.differential import edges
    method, path, body, headers = edges.request(
        'PUT', '/x', {'a': 1}, '1.2', Accept=None, X_Auth_Token='u')
    assert (method, path, body) == ('PUT', '/x', b'{"a": 1}')
    assert headers == {'X-Auth-Token': 'u', 'Content-Type': 'application/json',
                       'OpenStack-API-Version': 'placement 1.2'}
    assert 'OpenStack-API-Version' not in edges.request(
        'GET', '/', version=None)[3]
    assert sum(1 for group in edges.CASES for _ in group()) > 900
