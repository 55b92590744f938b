"""Traces where the deployment asks for them (``placement.tracing``):
kolla-ansible's ``[profiler]`` settings (``enabled``, ``hmac_keys``,
``connection_string`` of a redis, ``trace_sqlalchemy``), a request signed
as nova's scheduler signs it, and the trace read back with osprofiler's
own command: the request, the question asked of the state, the catch-up
with the change log before it, SQL, and under kolla's uwsgi the round
trip to a state reader.  A request unsigned, or signed with another key,
leaves no trace."""

import json
import os
import subprocess
import sys
import time
import uuid

from osprofiler import profiler
from osprofiler import web
import pytest

from tests import installed
from tests import redis_server
from tests import wsgi_servers
from tests.functional import server

pytestmark = pytest.mark.backends('sqlite', 'postgresql')

KEY = 'SECRET_KEY'
QUERY = '/allocation_candidates?resources=VCPU:1'


@pytest.fixture(scope='module')
def redis():
    installed.require('Redis', redis_server.installed)
    with redis_server.running() as (url, _):
        yield url


@pytest.fixture(scope='module')
def redis_sentinel():
    """(the server's URL, kolla-ansible's through its Sentinel)."""
    installed.require('Redis', redis_server.installed)
    with redis_server.running(sentinel=True) as urls:
        yield urls


def _profiler_section(connection_string):
    """What kolla-ansible writes with ``enable_osprofiler``."""
    return ('[profiler]\nenabled = true\ntrace_sqlalchemy = true\n'
            'hmac_keys = %s\nconnection_string = %s\n'
            % (KEY, connection_string))


def _signed(key=KEY):
    """(the headers nova's scheduler sends, the trace's id), signed with
    ``key`` by osprofiler as nova's client signs them."""
    profiler.init(hmac_key=key)
    with profiler.Trace('nova-scheduler'):
        headers = web.get_trace_id_headers()
        trace_id = profiler.get().get_base_id()
    profiler.clean()
    return headers, trace_id


def _seed(port):
    rp = str(uuid.uuid4())
    assert server.request(port, 'POST', '/resource_providers',
                          {'name': 'cn1', 'uuid': rp})[0] == 200
    assert server.request(
        port, 'PUT', '/resource_providers/%s/inventories' % rp,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': 8}}})[0] == 200


def _trace(redis_url, trace_id):
    """The trace as osprofiler's command shows it (None when there is
    none): every span's name."""
    found = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'osprofiler'),
         'trace', 'show', '--connection-string', redis_url, '--json',
         trace_id], capture_output=True, text=True, timeout=60)
    if found.returncode != 0 or not found.stdout.strip():
        return None
    names = []

    def walk(node):
        names.append(node['info']['name'])
        for child in node.get('children', ()):
            walk(child)

    for child in json.loads(found.stdout)['children']:
        walk(child)
    return names


def _asked(port, redis_url):
    headers, trace_id = _signed()
    status, _, body = server.exchange(port, 'GET', QUERY, headers=headers)
    assert status == 200 and len(body['allocation_requests']) == 1
    return _trace(redis_url, trace_id)


def _unseen(port, redis_url):
    """An unsigned request and one signed with another key: no trace."""
    for headers, trace_id in ((None, str(uuid.uuid4())),
                              _signed('ANOTHER_KEY')):
        assert server.exchange(port, 'GET', QUERY, headers=headers)[0] == (
            200)
        assert _trace(redis_url, trace_id) is None


def test_placement_api_traces_a_signed_request(
        redis, database_url, tmp_path):
    with server.running(database_url, tmp_path,
                        extra_config=_profiler_section(redis)) as port:
        _seed(port)
        names = _asked(port, redis)
        _unseen(port, redis)
    assert names[0] == 'wsgi', names
    for name in ('state.catch_up', 'state.question', 'db'):
        assert name in names, names


def test_kolla_s_uwsgi_traces_the_round_trip_to_a_reader(
        redis, database_url, tmp_path):
    with wsgi_servers.started('uwsgi', database_url, tmp_path,
                              extra_config=_profiler_section(redis)) as (
            port, _process):
        _seed(port)
        names = _asked(port, redis)
    assert names[0] == 'wsgi', names
    # The reader continues the trace: its question, catch-up and SQL.
    for name in ('state.reader', 'state.question', 'state.catch_up', 'db'):
        assert name in names, names


def test_kolla_s_sentinel_string_reaches_its_server(
        redis_sentinel, database_url, tmp_path):
    """kolla-ansible's valkey string (``redis://default:...@host:26379
    ?sentinel=kolla&...``): osprofiler's own redis driver takes it for a
    plain server's and keeps nothing; here the Sentinel names the server
    the trace is written to."""
    server_url, kolla_string = redis_sentinel
    with server.running(database_url, tmp_path,
                        extra_config=_profiler_section(kolla_string)) as port:
        _seed(port)
        names = _asked(port, server_url)
    assert names[0] == 'wsgi', names
    assert 'state.question' in names, names


def test_a_backend_out_of_reach_costs_a_traced_request_nothing(
        database_url, tmp_path):
    """The trace is lost (said once in a process's log), the answer is
    not."""
    nowhere = 'redis://127.0.0.1:%d' % server.free_port()
    with server.running(database_url, tmp_path, workers=1,
                        extra_config=_profiler_section(nowhere)) as port:
        _seed(port)
        headers, _trace_id = _signed()
        for _ in range(3):
            status, _, body = server.exchange(port, 'GET', QUERY,
                                              headers=headers)
            assert status == 200 and len(body['allocation_requests']) == 1
    assert (tmp_path / 'server.log').read_text().count(
        'A trace could not be sent') == 1


@pytest.mark.parametrize('text,expected', [
    ('redis://default:pw@10.0.0.1:26379?sentinel=kolla&sentinel_fallback='
     '10.0.0.2:26379&sentinel_fallback=[fd00::3]:26379&db=0'
     '&socket_timeout=60&retry_on_timeout=yes',
     ([('10.0.0.1', 26379), ('10.0.0.2', 26379), ('fd00::3', 26379)],
      'kolla', 'default', 'pw', 0)),
    ('redis://127.0.0.1:6379', None),
    ('redissentinel://127.0.0.1:26379', None),
    ('', None),
])
def test_the_sentinels_of_kolla_s_string(text, expected):
    from placement import tracing
    assert tracing._sentinels(text) == expected


class _OtlpReceiver:
    """An OTLP/HTTP receiver (``POST /v1/traces``, protobuf), as a
    collector would be: every span it was sent, as (trace id, name)."""

    def __init__(self):
        import http.server
        import threading
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        spans = self.spans = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(
                    int(self.headers['Content-Length'])))
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        spans.extend((span.trace_id.hex(), span.name)
                                     for span in scope.spans)
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.url = 'otlp://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_traces_reach_an_otlp_receiver(database_url, tmp_path, monkeypatch):
    """``connection_string = otlp://...`` ([profiler_otlp]): osprofiler's
    OTLP exporter sends the trace's spans, with their trace id, to the
    receiver (batched: every 0.2 s here)."""
    from osprofiler import _utils
    monkeypatch.setenv('OTEL_BSP_SCHEDULE_DELAY', '200')
    receiver = _OtlpReceiver()
    try:
        with server.running(
                database_url, tmp_path, workers=1,
                extra_config=_profiler_section(receiver.url)
                + '[profiler_otlp]\nservice_name_prefix = test\n') as port:
            _seed(port)
            headers, trace_id = _signed()
            assert server.exchange(port, 'GET', QUERY,
                                   headers=headers)[0] == 200
            wanted = '%032x' % _utils.uuid_to_int128(trace_id)
            deadline = time.monotonic() + 30
            while not any(name == 'state.question'
                          for found, name in receiver.spans
                          if found == wanted):
                assert time.monotonic() < deadline, receiver.spans
                time.sleep(0.1)
    finally:
        receiver.close()
    names = [name for found, name in receiver.spans if found == wanted]
    assert 'WSGI_GET_/allocation_candidates' in names, names
    assert 'state.catch_up' in names, names
