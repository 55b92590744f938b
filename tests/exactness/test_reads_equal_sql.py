"""Every read served from memory equals what SQL says, after any history.

A random sequence of writes goes through the API of a live server
(``live``: placement-api, kolla-ansible's uwsgi with its state keeper
and readers, uwsgi loading the application before it forks), with its
workers killed and replaced, the whole server restarted and (under
kolla's uwsgi) its state keeper or a reader killed in between.  After
each write every read the service answers from memory is asked of the
live server and compared with:

- the same request answered by this service in this process with a
  state read whole from the database at that moment (status and body,
  exactly): what a history of catch-ups, forks and restarts built must
  equal what a fresh read gives;
- what the database says, read with the test's own SQL (``truth``): the
  listing against the storage's SQL listing, each provider's usages,
  traits, aggregates and allocations, project usages and the overview's totals
  against the tables, and the allocation candidates against the
  brute-force reference;
- and a write that failed must have left the database as it was.

The seed is printed and named in every failure; to replay one::

    PLACEMENT_EXACTNESS_SEED=<seed> python -m pytest -s \\
        'tests/exactness/test_reads_equal_sql.py::...[<kind>-<backend>]'

``PLACEMENT_EXACTNESS_STEPS`` sets the number of writes (default 40).
"""

import contextlib
import os
import random
import threading
import time

import pytest
import sqlalchemy as sa
import webtest

from placement import app as placement_app
from placement.storage import engine
from placement.storage import resource_providers as rp_storage
from placement.storage import exceptions as storage_exc
from tests.exactness import history
from tests.exactness import live as live_module
from tests.exactness import reads
from tests.exactness import truth as truth_module
from tests.functional import candidates_reference as ref

STEPS = int(os.environ.get('PLACEMENT_EXACTNESS_STEPS', 40))
HEADERS = {'X-Auth-Token': 'admin', 'Accept': 'application/json'}
# How often a step also goes through a fault, besides the one of each
# kind every history has.
FAULT_CHANCE = 0.04


class Reference:
    """This service in this process, its state read whole now."""

    def __init__(self, conf):
        self.db = engine.Database.from_conf(conf)
        self.app = webtest.TestApp(placement_app.build_app(
            conf, self.db, prepare=False))

    def call(self, path, version='1.39'):
        response = self.app.get(path, headers=dict(
            HEADERS, **{'OpenStack-API-Version': 'placement ' + version}),
            expect_errors=True)
        return response.status_int, (response.json if response.body
                                     else None)


class Step:
    """What one step found wrong, and what to say about it."""

    def __init__(self, header):
        self.header = header
        self.problems = []

    def expect(self, what, got, wanted):
        if got != wanted:
            self.problems.append('%s:\n  live:     %r\n  expected: %r'
                                 % (what, got, wanted))

    def check(self):
        if self.problems:
            pytest.fail('%s\n%s' % (self.header, '\n'.join(self.problems)),
                        pytrace=False)


def _seed():
    chosen = os.environ.get('PLACEMENT_EXACTNESS_SEED')
    return int(chosen) if chosen else random.SystemRandom().getrandbits(32)


def _faults(rng, server):
    """{step: fault}: each fault the server can go through once, at
    some step of the history's middle."""
    events = list(server.events())
    steps = rng.sample(range(STEPS // 5, STEPS - 1), len(events))
    return dict(zip(steps, events))


@pytest.mark.backends('sqlite', 'postgresql')
@pytest.mark.parametrize('kind', live_module.KINDS)
def test_every_read_from_memory_equals_sql(kind, backend, database_url,
                                           conf, tmp_path):
    seed = _seed()
    print('exactness seed %d (%s, %s): replay with '
          'PLACEMENT_EXACTNESS_SEED=%d' % (seed, kind, backend, seed))
    rng = random.Random(seed)
    conf.set_override('connection', database_url,
                      group='placement_database')
    # Plain SQLAlchemy, not the service's engine: its writes are SQL run
    # by hand, which the service must see through its triggers.
    sql = sa.create_engine(database_url)
    server = live_module.Live(kind, database_url, tmp_path / 'server')
    server.directory.mkdir()
    writer = history.Writer(rng)
    faults = _faults(rng, server)
    story = []
    with contextlib.closing(_Stopping(server)):
        server.start()
        for write in writer.setup():
            assert server.call(write.method, write.path)[0] in (201, 204)
        truth = truth_module.read(sql)
        for number in range(STEPS):
            fault = faults.get(number) or (
                rng.choice(server.events())
                if rng.random() < FAULT_CHANCE else None)
            if fault:
                began = time.monotonic()
                server.undergo(fault)
                story.append('  -- %s (%.1f s)' % (
                    fault, time.monotonic() - began))
            write = writer.next_write(truth)
            status = _send(server, sql, write)
            if fault:
                _first_reads_at_once(server)
            story.append('  %d. %s: %s' % (number, write, status))
            before, truth = truth, truth_module.read(sql)
            step = Step('seed %d (%s, %s), step %d of:\n%s' % (
                seed, kind, backend, number, '\n'.join(story)))
            if status >= 400:
                step.expect('the database after a failed write', truth,
                            before)
            _compare(step, rng, server, Reference(conf), truth, writer)
            step.check()
    sql.dispose()


class _Stopping:
    def __init__(self, server):
        self.server = server

    def close(self):
        self.server.stop()


def _first_reads_at_once(server, clients=8):
    """Reads from several clients at the same moment, the first a new
    worker serves after a write: its threads then meet the state it
    inherited, and catch it up, at once (two of them once each took it
    for their own: issue 49)."""
    barrier = threading.Barrier(clients)

    def read():
        barrier.wait()
        server.call('GET', '/resource_providers')

    threads = [threading.Thread(target=read) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _send(server, sql, write):
    """The write's status (200 for SQL run directly)."""
    if write.sql is not None:
        with sql.begin() as conn:
            conn.execute(write.sql)
        return 200
    status, body = server.call(write.method, write.path, write.body,
                               headers=write.headers)
    assert status < 500, (write, status, body)
    return status


def _compare(step, rng, server, reference, truth, writer):
    try:
        _listings(step, rng, server, reference, truth, writer)
        _provider_reads(step, rng, server, reference, truth)
        _consumer_reads(step, rng, server, reference, truth)
        _project_usages(step, server, reference, truth, writer)
        _overview(step, rng, server, reference, truth)
        _candidates(step, rng, server, reference, truth, writer)
        for path in reads.candidate_extras(rng):
            _same(step, server, reference, path)
    finally:
        reference.db.dispose()


def _same(step, server, reference, path, version='1.39'):
    """The live answer to ``path``, checked against the reference's."""
    answer = server.call('GET', path, version=version)
    step.expect('GET %s (%s)' % (path, version), _without_request_ids(
        answer), _without_request_ids(reference.call(path, version)))
    return answer


def _without_request_ids(answer):
    """(status, body) with an error's request id left out: each answer
    has its own."""
    status, body = answer
    if isinstance(body, dict) and 'errors' in body:
        body = dict(body, errors=[
            {key: value for key, value in error.items()
             if key != 'request_id'} for error in body['errors']])
    return status, body


def _listings(step, rng, server, reference, truth, writer):
    for listing in reads.listings(rng, truth, writer):
        status, body = _same(step, server, reference, listing.path)
        try:
            rows = reference.db.read(rp_storage.list_providers,
                                     listing.filters())
        except storage_exc.NotFound:
            step.expect('status of GET %s' % listing.path, status, 400)
            continue
        if status != 200:
            step.expect('status of GET %s' % listing.path, status, 200)
            continue
        fields = ('uuid', 'name', 'generation', 'parent_provider_uuid',
                  'root_provider_uuid')
        step.expect('GET %s against SQL' % listing.path,
                    [tuple(p[f] for f in fields)
                     for p in body['resource_providers']],
                    [tuple(row[f] for f in fields) for row in rows])
        if not listing.query:
            step.expect('GET /resource_providers against the tables',
                        [p['uuid'] for p in body['resource_providers']],
                        truth.uuids())


def _provider_reads(step, rng, server, reference, truth):
    for uuid, path in reads.provider_paths(rng, truth):
        _status, body = _same(step, server, reference, path)
        what = path.rsplit('/', 1)[1]
        wanted = {'usages': truth.usages,
                  'traits': lambda uuid: sorted(truth.traits.get(uuid, ())),
                  'aggregates': lambda uuid: sorted(
                      truth.aggregates.get(uuid, ())),
                  'allocations': truth.provider_allocations}[what](uuid)
        got = body[what]
        step.expect('GET %s against the tables' % path,
                    (body['resource_provider_generation'],
                     sorted(got) if isinstance(got, list) else got),
                    (truth.generation(uuid), wanted))


def _consumer_reads(step, rng, server, reference, truth):
    for uuid, path in reads.consumer_paths(rng, truth):
        _same(step, server, reference, path, '1.12')
        _status, body = _same(step, server, reference, path)
        step.expect('GET %s against the tables' % path, body,
                    truth.consumer_allocations(uuid))


def _project_usages(step, server, reference, truth, writer):
    for project, user, kind, path in reads.project_queries(writer):
        _same(step, server, reference, path)
        if kind is None:
            _status, body = _same(step, server, reference, path, '1.37')
            step.expect('GET %s (1.37) against the tables' % path,
                        body['usages'], truth.project_usages(project, user))


def _overview(step, rng, server, reference, truth):
    for path in reads.overview_paths(rng, truth):
        _same(step, server, reference, path)
    _status, body = server.call('GET', '/overview')
    totals = truth.overview_totals()
    step.expect('GET /overview against the tables', {
        'providers': body['providers'], 'trees': body['trees'],
        'sharing_providers': body['sharing_providers'],
        'resource_classes': {
            rc: {key: sums[key] for key in ('capacity', 'used', 'providers')}
            for rc, sums in body['resource_classes'].items()}}, totals)


def _candidates(step, rng, server, reference, truth, writer):
    deployment = truth.deployment()
    for request in reads.candidate_requests(rng, truth, writer):
        path = '/allocation_candidates?' + request.query()
        status, body = _same(step, server, reference, path)
        if not reads.names_known(request, truth):
            # A 400, or as upstream, an empty answer when a group before
            # the one naming it finds nothing: as the reference says.
            continue
        if status != 200:
            step.expect('status of GET %s' % path, status, 200)
            continue
        problem = ref.mismatch(deployment, request, body)
        if problem:
            step.problems.append('GET %s against the reference:\n%s'
                                 % (path, problem))
