"""Where a candidates request spends its time, in one process, no HTTP.

    .venv/bin/python benchmarks/profile_candidates.py [--flat N]
        [--nested N] [--repeat R] [--profile QUERY] [--sort cumtime]

Loads the candidates benchmark's flat and nested deployments (the same
providers, traits, aggregates and allocations, ``benchmarks/
candidates.py``) through the WSGI application into a SQLite file, then
times each of its queries through the whole application (falcon,
policy, the search, the JSON encoding), R times: the median wall time
and the least (steadier on a busy machine).  ``--profile`` names a
query (e.g. ``'flat simple'``) to run under cProfile and print the
functions that cost most.  Not a comparison with upstream: that is
``candidates.py``; this is the profile to read before changing the
search.
"""

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import tempfile
import time

import sqlalchemy as sa
import webtest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import candidates  # noqa: E402

from placement import app as placement_app  # noqa: E402
from placement import conf as placement_conf  # noqa: E402
from placement.storage import engine  # noqa: E402
from placement.storage import migration  # noqa: E402
from placement.storage import standard_sync  # noqa: E402
from placement.storage import tables as storage_tables  # noqa: E402

HEADERS = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
           'OpenStack-API-Version': 'placement ' + candidates.MICROVERSION}


def prepared(url):
    """(conf, Database) on ``url``, migrated, standard names synced."""
    conf = placement_conf.new_config()
    conf([], project='placement', default_config_files=[])
    conf.set_override('connection', url, group='placement_database')
    db = engine.Database.from_conf(conf)
    migration.upgrade(db.engine)
    db.write(standard_sync.sync_all)
    return conf, db


def build(directory):
    os.mkdir(directory)
    conf, db = prepared(
        'sqlite:///%s' % os.path.join(directory, 'placement.sqlite'))
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf.set_override('state_path', directory)
    application = webtest.TestApp(
        placement_app.build_app(conf, db, prepare=False))
    application.app.db = db
    return application


def call(app, method, path, body=None, status=None):
    if body is None:
        return app.request(path, method=method, headers=HEADERS,
                           status=status)
    return getattr(app, method.lower() + '_json')(
        path, body, headers=HEADERS, status=status)


def load(app, trees, allocations):
    for trait in candidates.CUSTOM_TRAITS:
        call(app, 'PUT', '/traits/' + trait)
    for tree in trees:
        for rp in tree:
            body = {'name': rp['name'], 'uuid': rp['uuid']}
            if rp['parent']:
                body['parent_provider_uuid'] = rp['parent']
            base = '/resource_providers/%s' % rp['uuid']
            generation = call(app, 'POST', '/resource_providers',
                              body).json['generation']
            if rp['inventories']:
                generation = call(app, 'PUT', base + '/inventories', {
                    'resource_provider_generation': generation,
                    'inventories': rp['inventories']}
                ).json['resource_provider_generation']
            if rp['traits']:
                generation = call(app, 'PUT', base + '/traits', {
                    'resource_provider_generation': generation,
                    'traits': rp['traits']}
                ).json['resource_provider_generation']
            if rp['aggregates']:
                call(app, 'PUT', base + '/aggregates', {
                    'resource_provider_generation': generation,
                    'aggregates': rp['aggregates']})
    for n in range(0, len(allocations), candidates.ALLOCATION_BATCH):
        call(app, 'POST', '/allocations',
             dict(allocations[n:n + candidates.ALLOCATION_BATCH]),
             status=204)


def bulk_load(app, trees, allocations):
    """The same rows ``load`` writes, inserted with SQL in a few
    statements: 100,000 providers through the API take twenty minutes,
    and the read path does not care how they came.  Not for measuring
    writes."""
    bulk_insert(app.app.db, trees, allocations)


def bulk_insert(db, trees, allocations):
    """``bulk_load`` into the Database ``db``."""
    tables = storage_tables

    def write(conn):
        classes = dict(conn.execute(sa.select(
            tables.resource_classes.c.name,
            tables.resource_classes.c.id)).all())
        traits = dict(conn.execute(sa.select(
            tables.traits.c.name, tables.traits.c.id)).all())
        for name in candidates.CUSTOM_TRAITS:
            if name not in traits:
                traits[name] = conn.execute(tables.traits.insert().values(
                    name=name)).inserted_primary_key[0]
        ids, aggregates = {}, {}
        rows, inventories, trait_rows, aggregate_rows = [], [], [], []
        start = (conn.scalar(sa.select(sa.func.max(
            tables.resource_providers.c.id))) or 0) + 1
        for tree in trees:
            for rp in tree:
                ids[rp['uuid']] = start + len(ids)
        for tree in trees:
            root = ids[tree[0]['uuid']]
            for rp in tree:
                id_ = ids[rp['uuid']]
                rows.append({'id': id_, 'uuid': rp['uuid'],
                             'name': rp['name'], 'generation': 1,
                             'root_provider_id': root,
                             'parent_provider_id': ids.get(rp['parent'])})
                for name, record in rp['inventories'].items():
                    inventories.append(dict(record, resource_provider_id=id_,
                                            resource_class_id=classes[name]))
                trait_rows += [{'resource_provider_id': id_,
                                'trait_id': traits[name]}
                               for name in rp['traits']]
                for uuid in rp['aggregates']:
                    if uuid not in aggregates:
                        aggregates[uuid] = conn.execute(
                            tables.placement_aggregates.insert().values(
                                uuid=uuid)).inserted_primary_key[0]
                    aggregate_rows.append({'resource_provider_id': id_,
                                           'aggregate_id': aggregates[uuid]})
        used = [{'resource_provider_id': ids[rp], 'consumer_id': consumer,
                 'resource_class_id': classes[name], 'used': amount}
                for consumer, body in allocations
                for rp, given in body['allocations'].items()
                for name, amount in given['resources'].items()]
        for table, batch in ((tables.resource_providers, rows),
                             (tables.inventories, inventories),
                             (tables.resource_provider_traits, trait_rows),
                             (tables.resource_provider_aggregates,
                              aggregate_rows),
                             (tables.allocations, used)):
            for n in range(0, len(batch), 5000):
                conn.execute(table.insert(), batch[n:n + 5000])
        if conn.dialect.name == 'postgresql':
            # The providers' ids were given: the sequence the next one
            # takes its id from starts after them.
            conn.exec_driver_sql(
                "SELECT setval(pg_get_serial_sequence('resource_providers',"
                " 'id'), (SELECT MAX(id) FROM resource_providers))")

    db.write(write)


def resident_mb():
    with open('/proc/self/statm') as handle:
        return int(handle.read().split()[1]) * os.sysconf(
            'SC_PAGE_SIZE') / 2 ** 20


def timed(app, query, repeat):
    path = query.path
    answer = call(app, 'GET', path)
    count = len(answer.json.get('allocation_requests',
                                answer.json.get('resource_providers')))
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call(app, 'GET', path)
        times.append((time.perf_counter() - started) * 1000)
    return (count, statistics.median(times), min(times), len(answer.body))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--flat', type=int, default=1000)
    parser.add_argument('--nested', type=int, default=250)
    parser.add_argument('--repeat', type=int, default=30)
    parser.add_argument('--profile', help="a query to profile, e.g. "
                        "'nested same_subtree'")
    parser.add_argument('--sort', default='tottime')
    parser.add_argument('--bulk', action='store_true',
                        help='insert the rows with SQL instead of the API '
                        '(fast; for reads only)')
    parser.add_argument('--memory', action='store_true',
                        help='print the resident memory after each query')
    parser.add_argument('--freeze', action='store_true',
                        help='freeze what is loaded out of the cyclic '
                        'collector, as placement-api workers do')
    parser.add_argument('--callers', help='also print who calls the '
                        'functions matching this')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        apps = {'flat': build(os.path.join(directory, 'flat')),
                'nested': build(os.path.join(directory, 'nested'))}
        loader = bulk_load if args.bulk else load
        loader(apps['flat'], candidates.Flat.sharing_providers()
             + candidates.Flat.trees(0, args.flat),
             candidates.Flat.allocations(0, args.flat))
        loader(apps['nested'], candidates.Nested.trees(0, args.nested),
             candidates.Nested.allocations(0, args.nested))
        print('loaded in %.1fs' % (time.perf_counter() - started))
        for app in apps.values():
            call(app, 'GET', '/allocation_candidates?resources=VCPU:1')
        if args.freeze:
            gc.collect()
            gc.freeze()
        print('resident after reading the state: %.0f MB' % resident_mb())
        queries = ([('flat', q) for q in candidates.flat_queries(args.flat)]
                   + [('nested', q)
                      for q in candidates.nested_queries(args.nested)])
        for scenario, query in queries:
            app = apps[scenario]
            label = '%s %s' % (scenario, query.label)
            count, median, least, size = timed(app, query, args.repeat)
            print('%-36s %6d answers %8d bytes  %7.2f ms (min %.2f ms)'
                  % (label, count, size, median, least))
            if args.memory:
                print('    resident: %.0f MB' % resident_mb())
            if label == args.profile:
                profiler = cProfile.Profile()
                profiler.enable()
                timed(app, query, args.repeat)
                profiler.disable()
                stats = pstats.Stats(profiler).sort_stats(args.sort)
                stats.print_stats(30)
                if args.callers:
                    stats.print_callers(args.callers)


if __name__ == '__main__':
    main()
