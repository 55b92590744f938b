"""Send a fixed list of edge requests to this service and to upstream
openstack-placement side by side, and report where the status or the
media type of the answer differs.

    .venv/bin/python -m tests.differential.edges [--backend mysql]

Where ``replay`` draws whole sequences, these are the requests a random
walk rarely makes: Accept headers that take JSON, text, neither or
nothing; microversion headers malformed in a dozen ways; bodies of
every media type; tokens without a project; repeated, empty and
undecodable query parameters; inventory, class, trait, aggregate,
allocation and reshaper bodies at the edges of what each microversion
accepts.  Both servers start from one provider tree (a root with
inventory and a child without) on databases of their own (``benchmarks/
harness.py``); the requests run in order on both, so that a write one
server took and the other refused shows up where it happens.  The exit
status is 1 when any answer differs, but for those ``known`` says are
on purpose (printed with the reason): upstream's own 500s, this
service's extensions, and NUL in a path or query refused on every
database.
"""

import argparse
import http.client
import json
import sys
import urllib.parse

from benchmarks import harness

ROOT = '11111111-2222-3333-4444-555555555555'
CHILD = '22222222-2222-3333-4444-555555555555'
CONSUMER = '33333333-2222-3333-4444-555555555555'
VERSION = 'OpenStack-API-Version'
JSON = 'application/json'


def request(method, path, body=None, version='1.39', **headers):
    """(method, path, body bytes or None, headers); ``version`` None
    sends no microversion, a header given as None is left out."""
    sent = {'X-Auth-Token': 'admin'}
    if version is not None:
        sent[VERSION] = 'placement %s' % version
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        sent['Content-Type'] = JSON
    sent.update({name.replace('_', '-'): value
                 for name, value in headers.items()})
    return method, path, body, {name: value for name, value in sent.items()
                                if value is not None}


SETUP = [
    request('POST', '/resource_providers', {'name': 'root', 'uuid': ROOT},
            '1.20'),
    request('POST', '/resource_providers', {
        'name': 'child', 'uuid': CHILD, 'parent_provider_uuid': ROOT},
        '1.20'),
    request('PUT', '/resource_providers/%s/inventories' % ROOT, {
        'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 8},
            'MEMORY_MB': {'total': 1024, 'step_size': 256, 'min_unit': 256,
                          'max_unit': 512}}}),
]


def negotiation():
    """Accept headers, microversion headers, tokens."""
    for accept in (None, '', '*/*', JSON, 'text/plain', 'text/html',
                   'application/xml', 'application/json;q=0',
                   'application/*', 'text/*, application/json;q=0.1'):
        for path in ('/', '/resource_providers', '/nope',
                     '/resource_providers/' + ROOT):
            yield request('GET', path, Accept=accept)
    for version in ('latest', '1.40', '0.9', '2.0', '1.a', '', ' 1.2',
                    '1.02', '1.1 ', '1.9999999999999999999',
                    '1.2, compute 2.1'):
        for path in ('/', '/resource_providers', '/nope',
                     '/allocation_candidates?resources=VCPU:1'):
            yield request('GET', path, version=version)
    for raw in ('compute 2.1', 'PLACEMENT 1.2', 'placement'):
        yield request('GET', '/resource_providers', version=None,
                      OpenStack_API_Version=raw)
    for token in (None, '', 'user', 'user:project', 'admin:'):
        yield request('GET', '/resource_providers', X_Auth_Token=token)
        yield request('GET', '/', None, X_Auth_Token=token)


def media_types():
    """Bodies sent as every media type, and bodies missing."""
    writes = [('POST', '/resource_providers', b'{"name": "n-%d"}'),
              ('PUT', '/resource_providers/' + CHILD, b'{"name": "child"}'),
              ('POST', '/resource_classes', b'{"name": "CUSTOM_MEDIA"}'),
              ('PUT', '/traits/CUSTOM_MEDIA', b''),
              ('POST', '/reshaper', b'{}'), ('POST', '/allocations', b'{}')]
    types = (None, JSON, 'application/json; charset=utf-8', 'text/plain',
             'application/merge-patch+json', 'APPLICATION/JSON', '')
    for number, content_type in enumerate(types):
        for method, path, body in writes:
            if b'%d' in body:
                body = body % number
            yield request(method, path, body, Content_Type=content_type)
    for body in (b'', None):
        for method, path in (
                ('POST', '/resource_providers'),
                ('PUT', '/resource_providers/%s/inventories' % CHILD),
                ('PUT', '/allocations/' + CONSUMER),
                ('PUT', '/resource_providers/%s/traits' % CHILD)):
            yield request(method, path, body, Content_Type=JSON)


def queries():
    """Listings and candidates with repeated, empty or odd parameters."""
    for query in ('limit=', 'limit=0', 'limit=-1', 'limit=abc',
                  'limit=1&limit=2', 'resources=VCPU:1&resources=VCPU:2',
                  'name=a&name=b', 'required=A&required=B',
                  'member_of=%s&member_of=%s' % (ROOT, ROOT),
                  'uuid=' + ROOT.upper(), 'in_tree=' + ROOT.upper(),
                  '%ff=1', '=1', '&&', 'a', 'resources', 'name=%00'):
        for version in ('1.0', '1.14', '1.18', '1.22', '1.39'):
            yield request('GET', '/resource_providers?' + query,
                          version=version)
    for query in ('limit=1&limit=2', 'group_policy=none&group_policy=isolate',
                  'resources=MEMORY_MB:1', 'required=', 'required=%20',
                  'resources1=VCPU:1', 'resources1=VCPU:1&resources2=VCPU:1',
                  'member_of=in:%s&member_of=!%s' % (ROOT, ROOT),
                  'required=in:A,!B', 'same_subtree=_1',
                  'resources_x=VCPU:1&same_subtree=_x', 'root_required=in:A',
                  'root_required=A,!A', 'in_tree1=' + ROOT,
                  'in_tree=%s&in_tree=%s' % (ROOT, ROOT)):
        for version in ('1.10', '1.21', '1.25', '1.33', '1.36', '1.39'):
            yield request('GET', '/allocation_candidates?resources=VCPU:1&'
                          + query, version=version)


def inventories():
    for inventory in (
            {'total': 0}, {'total': -1}, {'total': 1, 'reserved': 2},
            {'total': 1, 'reserved': 1}, {'total': 4, 'min_unit': 5},
            {'total': 4, 'max_unit': 0},
            {'total': 4, 'min_unit': 3, 'max_unit': 2},
            {'total': 4, 'step_size': 3, 'max_unit': 4},
            {'total': 4, 'allocation_ratio': 0},
            {'total': 4, 'allocation_ratio': '1.0'},
            {'total': 4, 'extra': 1}, {'total': '4'}, {'total': 4.0},
            {'total': None}, {}, {'total': 2147483647},
            {'total': 2147483648}, {'total': 4, 'reserved': -1},
            {'total': 4, 'allocation_ratio': 3.5e39}):
        for version in ('1.0', '1.26', '1.39'):
            path = '/resource_providers/%s/inventories' % CHILD
            yield request('PUT', path, {'resource_provider_generation': 0,
                                        'inventories': {'DISK_GB': inventory}},
                          version)
            yield request('POST', path, dict(
                inventory, resource_class='DISK_GB',
                resource_provider_generation=0), version)
            yield request('PUT', path + '/DISK_GB', dict(
                inventory, resource_provider_generation=0), version)


def names_and_associations():
    for name in ('CUSTOM_OK1', 'custom_lower', 'CUSTOM_', 'CUSTOM_A-B',
                 'CUSTOM_' + 'A' * 248, 'CUSTOM_' + 'A' * 249, 'VCPU',
                 'NOTCUSTOM', 'CUSTOM_A%20B', 'CUSTOM_%00'):
        for version in ('1.2', '1.7', '1.39'):
            yield request('POST', '/resource_classes', {'name': name},
                          version)
            yield request('PUT', '/resource_classes/' + name,
                          {'name': name + 'X'} if version == '1.2' else None,
                          version)
            yield request('PUT', '/traits/' + name, None, version)
    for aggregates in ([], [ROOT], [ROOT, ROOT], ['not-uuid'],
                       [ROOT.upper()], None, {}, [1]):
        for version in ('1.1', '1.18', '1.19', '1.39'):
            body = (aggregates if version < '1.19' else {
                'aggregates': aggregates, 'resource_provider_generation': 0})
            yield request('PUT', '/resource_providers/%s/aggregates' % CHILD,
                          body, version)
    for traits in ([], ['HW_CPU_X86_AVX'], ['HW_CPU_X86_AVX'] * 2, ['NOPE'],
                   ['custom_x'], None, 'x'):
        path = '/resource_providers/%s/traits' % CHILD
        yield request('PUT', path, {'traits': traits,
                                    'resource_provider_generation': 0}, '1.6')
        yield request('PUT', path, {'traits': traits}, '1.6')


def allocations():
    owner = {'project_id': 'p', 'user_id': 'u'}
    new = dict(owner, consumer_generation=None)
    for body in (
            dict(new, allocations={ROOT: {'resources': {'VCPU': 1}}}),
            dict(new, allocations={ROOT: {'resources': {'MEMORY_MB': 100}}}),
            dict(new, allocations={ROOT: {'resources': {'MEMORY_MB': 768}}}),
            dict(new, allocations={ROOT: {'resources': {'VCPU': 0}}}),
            dict(owner, allocations={ROOT: {'resources': {'VCPU': 1}}}),
            dict(owner, allocations={ROOT: {'resources': {'VCPU': 1}}},
                 consumer_generation=0),
            dict(new, allocations={ROOT: {'resources': {'VCPU': 1}}},
                 consumer_type='lower'),
            dict(new, allocations={ROOT: {'resources': {'VCPU': 1}}},
                 consumer_type='MIGRATION'),
            dict(new, allocations={ROOT: {'resources': {'DISK_GB': 1}}}),
            dict(new, allocations={ROOT: {'resources': {'CUSTOM_NOPE': 1}}}),
            dict(new, allocations={ROOT: {}}), dict(new, allocations={}),
            dict(new, allocations={ROOT: {'resources': {'VCPU': 1},
                                          'generation': 5}}),
            dict(owner, allocations=[{'resource_provider': {'uuid': ROOT},
                                      'resources': {'VCPU': 1}}]),
            {'allocations': [{'resource_provider': {'uuid': ROOT},
                              'resources': {'VCPU': 1}}] * 2},
            dict(owner, allocations=[])):
        for version in ('1.0', '1.8', '1.11', '1.12', '1.28', '1.37', '1.38',
                        '1.39'):
            yield request('PUT', '/allocations/' + CONSUMER, body, version)
            yield request('POST', '/allocations', {CONSUMER: body}, version)
        yield request('DELETE', '/allocations/' + CONSUMER)
    for version in ('1.28', '1.39'):
        for inventories_ in ({}, {ROOT: {'resource_provider_generation': 99,
                                         'inventories': {}}}):
            yield request('POST', '/reshaper', {'inventories': inventories_,
                                                'allocations': {}}, version)


def methods():
    for method in ('PATCH', 'DELETE', 'HEAD', 'TRACE', 'OPTIONS', 'FOO',
                   'PROPFIND'):
        for path in ('/', '/resource_providers', '/allocations/' + ROOT,
                     '/reshaper', '/nope'):
            yield request(method, path)


CASES = (negotiation, media_types, queries, inventories,
         names_and_associations, allocations, methods)


def known(method, path, ours, theirs):
    """Why this service answers differently on purpose, or None."""
    if theirs[0] >= 500 and ours[0] < 500:
        return "upstream's own error"
    if method == 'PATCH' and path.startswith('/allocations/'):
        return 'the JSON merge patch of a consumer\'s allocations (1.28)'
    if '%00' in path and ours[0] == 400:
        return ('NUL, which no database stores alike, refused on every one '
                '(upstream: 404 before routing, else 500 on PostgreSQL and '
                'found nowhere on MySQL)')
    return None


def send(port, method, path, body, headers):
    """(status, media type) of the answer."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    try:
        conn.request(method, urllib.parse.quote(path, safe='/?=&:,!%;'),
                     body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    media_type = (response.getheader('Content-Type') or '').split(';')[0]
    return response.status, (media_type.strip().lower() if raw else '')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    args = parser.parse_args(argv)
    differing = 0
    sent = 0
    with harness.Stack(workers=1, backend=args.backend) as stack:
        ports = [stack.servers[name].port for name in ('ours', 'upstream')]
        for case in SETUP:
            answers = [send(port, *case) for port in ports]
            if answers[0] != answers[1] or answers[0][0] >= 300:
                raise SystemExit('set-up refused: %s %s' % (case, answers))
        for group in CASES:
            for method, path, body, headers in group():
                sent += 1
                ours, theirs = (send(port, method, path, body, headers)
                                for port in ports)
                if ours == theirs:
                    continue
                reason = known(method, path, ours, theirs)
                differing += reason is None
                print('%s%s %s %s %s\n    ours %s, upstream %s' % (
                    '(%s) ' % reason if reason else '', method, path,
                    (body or b'')[:120].decode('utf-8', 'replace'), headers,
                    ours, theirs))
    print('%d requests, %d answered differently' % (sent, differing))
    return 1 if differing else 0


if __name__ == '__main__':
    sys.exit(main())
