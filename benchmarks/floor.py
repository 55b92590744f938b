"""Each call of nova's steady traffic against its floor, in one process.

The floor of a call is what the same answer costs when it is already
made: the same status, headers and body bytes, sent by a resource that
looks them up in a dict, through the same application (request id, the
request's log line, noauth2, the context, microversion negotiation, the
request checks, falcon's routing).  What a call costs above its floor is
what this service does to answer it: the freshness check, policy,
reading memory or SQL, serializing.

Both run the WSGI application in this process, called directly (no HTTP
server, no client), on a throwaway PostgreSQL cluster loaded with
``traffic.py``'s cloud (its nodes, traits, aggregates and servers), and
are timed in this process's CPU (PostgreSQL's is not counted).  A call
is measured over every node in turn after one unmeasured pass, so that
answers kept in memory are kept, as in a cloud at rest.  ``--profile``
then says where the difference goes, by the parts every call is made
of (cProfile, cumulative time within the call).

    .venv/bin/python benchmarks/floor.py [--nodes 200] [--passes 5]
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

import falcon  # noqa: E402

from benchmarks import traffic  # noqa: E402
from placement import app as placement_app  # noqa: E402
from placement.storage import engine  # noqa: E402
from placement import config_loader  # noqa: E402
from tests import pg_cluster  # noqa: E402

SERVERS_PER_NODE = 20
# (name in the profile's report, the functions whose cumulative time it is)
PARTS = (
    ('freshness', ('unchanged',)),
    ('policy', ('can',)),
    ('SQL', ('run', 'peek_rows')),
    ('state', ('answer_here',)),
    ('JSON', ('encode_json',)),
    ('log line', ('_write',)),
)


class Answering:
    """A WSGI application called in this process, as a server would."""

    def __init__(self, application):
        self.application = application

    def call(self, method, path, microversion, body=None):
        """(status, headers, body bytes)."""
        path, _, query = path.partition('?')
        data = json.dumps(body).encode() if body is not None else b''
        environ = {
            'REQUEST_METHOD': method, 'PATH_INFO': path,
            'QUERY_STRING': query, 'SERVER_NAME': 'localhost',
            'SERVER_PORT': '80', 'SERVER_PROTOCOL': 'HTTP/1.1',
            'REMOTE_ADDR': '127.0.0.1', 'wsgi.url_scheme': 'http',
            'wsgi.input': io.BytesIO(data), 'wsgi.errors': sys.stderr,
            'wsgi.version': (1, 0), 'wsgi.multithread': False,
            'wsgi.multiprocess': True, 'wsgi.run_once': False,
            'HTTP_X_AUTH_TOKEN': 'admin', 'HTTP_ACCEPT': 'application/json',
            'HTTP_OPENSTACK_API_VERSION': 'placement %s' % microversion}
        if data:
            environ['CONTENT_TYPE'] = 'application/json'
            environ['CONTENT_LENGTH'] = str(len(data))
        started = []

        def start_response(status, headers, exc_info=None):
            started.append((status, headers))
        result = self.application(environ, start_response)
        try:
            payload = b''.join(result)
        finally:
            close = getattr(result, 'close', None)
            if close is not None:
                close()
        status, headers = started[0]
        return int(status[:3]), headers, payload

    def json(self, method, path, microversion='1.39', body=None):
        status, _headers, payload = self.call(method, path, microversion,
                                              body)
        if status >= 300:
            raise RuntimeError('%s %s: %s %s' % (method, path, status,
                                                 payload[:300]))
        return json.loads(payload) if payload else None


class Prepared:
    """Every route's resource in the floor's application: the answer
    recorded for the request's method and URI, sent as it was."""

    def __init__(self, answers):
        self.answers = answers

    def _send(self, req, resp, **_params):
        status, headers, payload = self.answers[req.method,
                                                req.relative_uri]
        resp.status = falcon.code_to_http_status(status)
        for name, value in headers:
            if name.lower() not in ('content-length', 'vary',
                                    'openstack-api-version',
                                    'x-openstack-request-id',
                                    'openstack-request-id'):
                resp.set_header(name, value)
        resp.data = payload

    on_get = on_put = _send


def load(client, nodes):
    """traffic.py's cloud: the nodes, then their servers."""
    for node in range(nodes):
        generation = client.json('POST', '/resource_providers', body={
            'uuid': traffic.node_uuid(node),
            'name': 'compute-%05d' % node})['generation']
        path = traffic.provider_path(node)
        generation = client.json('PUT', path + '/inventories', body={
            'resource_provider_generation': generation,
            'inventories': traffic.INVENTORY})['resource_provider_generation']
        generation = client.json('PUT', path + '/traits', body={
            'resource_provider_generation': generation,
            'traits': traffic.node_traits(node)})[
                'resource_provider_generation']
        client.json('PUT', path + '/aggregates', '1.19', body={
            'resource_provider_generation': generation,
            'aggregates': [traffic.aggregate_uuid(node)]})
    for first in range(0, nodes * SERVERS_PER_NODE, traffic.BATCH):
        body = {}
        for index in range(first, min(first + traffic.BATCH,
                                      nodes * SERVERS_PER_NODE)):
            body[traffic.consumer_uuid(index)] = {
                'allocations': {
                    traffic.node_uuid(index // SERVERS_PER_NODE): {
                        'resources': traffic.SERVER_RESOURCES}},
                'project_id': traffic.project_uuid(index % traffic.PROJECTS),
                'user_id': traffic.user_uuid(index % traffic.USERS),
                'consumer_generation': None, 'consumer_type': 'INSTANCE'}
        client.json('POST', '/allocations', '1.38', body=body)


def requests(call, nodes, client):
    """The requests (method, path, body maker) of ``call``, one per
    node: reads as traffic.py sends them, writes as nova's report client
    does (the body at the generation the last answer gave)."""
    if call in ('put_inventories', 'put_traits'):
        return [_write(call, node, client) for node in range(nodes)]
    found = []
    for node in range(nodes):
        if call == 'consumer':
            path = '/allocations/%s' % traffic.consumer_uuid(
                node * SERVERS_PER_NODE)
        elif call == 'usages':
            path = '/usages?project_id=%s' % traffic.project_uuid(
                node % traffic.PROJECTS)
        elif call == 'in_tree':
            path = '/resource_providers?in_tree=%s' % traffic.node_uuid(node)
        elif call == 'sharing':
            path = traffic.sharing_path(node)
        else:
            path = traffic.provider_path(node, {
                'allocations': '/allocations', 'aggregates': '/aggregates',
                'traits': '/traits', 'get_inventories': '/inventories',
                'provider_usages': '/usages'}[call])
        found.append(('GET', path, _no_body))
    return found


def _write(call, node, client):
    """A PUT of the node's inventories (MEMORY_MB's reserved stepping) or
    traits (COMPUTE_STATUS_DISABLED toggling) at its generation now."""
    suffix = '/inventories' if call == 'put_inventories' else '/traits'
    path = traffic.provider_path(node, suffix)
    microversion = traffic.CALLS[call][2]

    def body():
        current = client.json('GET', path, microversion)
        if call == 'put_inventories':
            inventories = current['inventories']
            memory = inventories['MEMORY_MB']
            memory['reserved'] = traffic.next_reserved(memory['reserved'])
            made = {'inventories': inventories}
        else:
            made = {'traits': traffic.node_traits(
                node, traffic.DISABLED not in current['traits'])}
        made['resource_provider_generation'] = current[
            'resource_provider_generation']
        return made
    return ('PUT', path, body)


def measure(client, call, made, passes, profile=None):
    """CPU microseconds per request of ``made`` ((method, path, body
    maker) triples; each body made, a PUT's by a GET, outside the time),
    over ``passes`` passes; with ``profile`` (a cProfile Profile) the
    requests run under it."""
    microversion = traffic.CALLS[call][2]
    spent = 0.0
    count = 0
    for _ in range(passes):
        for method, path, make_body in made:
            body = make_body()
            started = time.process_time()
            if profile is not None:
                profile.enable()
            status, _headers, _payload = client.call(method, path,
                                                     microversion, body)
            if profile is not None:
                profile.disable()
            spent += time.process_time() - started
            count += 1
            if status != 200:
                raise RuntimeError('%s %s: %s' % (method, path, status))
    return spent / count * 1e6


def ours_and_floor(conf, nodes, passes, profile_parts, detail=None):
    """[[call, ours, floor, parts or None]] per call of ``traffic.CALLS``
    (CPU microseconds per request)."""
    database = engine.Database.from_conf(conf)
    ours = Answering(placement_app.build_app(conf, database))
    try:
        return _measured(conf, ours, nodes, passes, profile_parts, detail)
    finally:
        database.dispose()


def _measured(conf, ours, nodes, passes, profile_parts, detail):
    load(ours, nodes)
    answers = {}
    recorded = {}
    rows = []
    for call in traffic.CALLS:
        microversion = traffic.CALLS[call][2]
        built = requests(call, nodes, ours)
        for method, path, make_body in built:     # the unmeasured pass
            answers[method, path] = ours.call(method, path, microversion,
                                              make_body())
        recorded[call] = [(method, path, _no_body)
                          for method, path, _ in built]
        reads = built[0][0] == 'GET'
        rows.append([call, measure(ours, call, built, passes),
                     _parts(ours, call, built)
                     if profile_parts and reads else None])
        if call == detail and reads:
            _print_detail(ours, call, built)
    floor = Answering(_floor_app(conf, answers))
    for row in rows:
        row.insert(2, measure(floor, row[0], recorded[row[0]], passes))
    return rows


def _no_body():
    return None


def _parts(client, call, made):
    """{part: share of the call's profiled time} (``PARTS``): the
    cumulative time of each part's functions in this service's code."""
    profile = cProfile.Profile(time.process_time)
    measure(client, call, made, 1, profile)
    stats = pstats.Stats(profile)
    total = max(stats.total_tt, 1e-9)
    return {name: min(1.0, sum(
        values[3] for (path, _line, found), values in stats.stats.items()
        if found in functions and '/placement/' in path) / total)
        for name, functions in PARTS}


def _print_detail(client, call, made):
    """cProfile's 30 functions of most cumulative time in ``call``."""
    profile = cProfile.Profile(time.process_time)
    measure(client, call, made, 1, profile)
    print('--- %s, one pass under cProfile:' % traffic.CALLS[call][0])
    pstats.Stats(profile).sort_stats('cumulative').print_stats(30)


def _floor_app(conf, answers):
    """The application with every route's resource a Prepared one."""
    real = placement_app.routes
    resource = Prepared(answers)
    placement_app.routes = lambda: [(template, resource)
                                    for template, _ in real()]
    try:
        return placement_app.build_app(conf, prepare=False)
    finally:
        placement_app.routes = real


def config(url, state_path):
    """The configuration a server would load: logging set up as it sets
    it up (each request's line goes to a file, as kolla's do)."""
    path = os.path.join(state_path, 'placement.conf')
    with open(path, 'w') as handle:
        handle.write('[DEFAULT]\nlog_file = %s\nstate_path = %s\n'
                     '[api]\nauth_strategy = noauth2\n'
                     '[placement_database]\nconnection = %s\n'
                     'sync_on_startup = true\n'
                     '[oslo_policy]\npolicy_file = %s\n'
                     % (os.path.join(state_path, 'placement.log'),
                        state_path, url,
                        os.path.join(state_path, 'policy.yaml')))
    with open(os.path.join(state_path, 'policy.yaml'), 'w') as handle:
        handle.write('{}\n')
    return config_loader.load(['--config-file', path])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', type=int, default=200)
    parser.add_argument('--passes', type=int, default=5,
                        help='measured passes over the nodes per call')
    parser.add_argument('--profile', action='store_true',
                        help='where each read\'s time above its floor goes')
    parser.add_argument('--detail', choices=list(traffic.CALLS),
                        help='print the cProfile of one read')
    args = parser.parse_args()
    cluster = pg_cluster.Cluster().start()
    try:
        cluster.create_database('floor')
        with tempfile.TemporaryDirectory() as state_path:
            rows = ours_and_floor(config(cluster.url('floor'), state_path),
                                  args.nodes, args.passes, args.profile,
                                  args.detail)
    finally:
        cluster.stop()
    print('%d nodes x %d servers, PostgreSQL, in one process; CPU us per '
          'request' % (args.nodes, SERVERS_PER_NODE))
    header = '%-50s %7s %7s %7s' % ('call', 'ours', 'floor', 'above')
    if args.profile:
        header += '   ' + ' '.join('%9s' % name for name, _ in PARTS)
    print(header)
    for call, spent, floor, parts in rows:
        line = '%-50s %7.0f %7.0f %7.0f' % (traffic.CALLS[call][0], spent,
                                            floor, spent - floor)
        if parts:
            line += '   ' + ' '.join('%8.0f%%' % (100 * parts[name])
                                     for name, _ in PARTS)
        print(line)


if __name__ == '__main__':
    main()
