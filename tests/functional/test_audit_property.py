"""GET /audit against a brute-force scan of the tables, and POST
/audit/what_if against really making the change, on random deployments.

Deployments are the candidates property test's (trees, sharing pools,
aggregates, inventories with odd units and ratios), built through the
API; then consumers claim across trees as evacuations and migrations
leave them, some inventories are lowered under their usage or given
units nothing fits, and allocations are aged in the database.  The
reference reads the tables with plain SQL and works each finding out on
its own, with none of the service's code.
"""

import collections
import datetime
import os

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from tests.functional import test_candidates_property as prop
from tests.functional.candidates_reference import SHARING_TRAIT

api = prop.api
PROJECTS = ['8e2f6c1a-4b7d-4e0a-9c3b-5d6f7a8b9c01',
            '1f3e5d7c-9b2a-4c6e-8d0f-2a4b6c8d0e12']
USER = '66cb2f29-c86d-47c3-8af5-69ae7b778c70'
AGES = [0, 3600, 90000, 200000]
EXAMPLES = int(os.environ.get('AUDIT_EXAMPLES', 25))


def _uuid(name):
    return prop._uuid(name)


# -- the deployment's troubles ------------------------------------------------

@st.composite
def troubles(draw, dep, first=0):
    """(claims, tweaks, ages): consumers holding on 1-3 providers of any
    trees (numbered from ``first``), inventory fields changed after the
    claims, consumers aged."""
    slots = [(p.uuid, rc) for p in dep.providers
             for rc in sorted(p.inventories)]
    claims = []
    if slots:
        for number in range(first, first + draw(st.integers(0, 6))):
            held = draw(st.lists(st.sampled_from(slots), min_size=1,
                                 max_size=3, unique=True))
            claims.append((
                _uuid('audit-consumer-%d' % number),
                draw(st.sampled_from(['INSTANCE', 'MIGRATION'])),
                draw(st.sampled_from(PROJECTS)),
                {slot: draw(st.integers(1, 3)) for slot in held}))
    tweaks = []
    if slots:
        for slot in draw(st.lists(st.sampled_from(slots), max_size=3,
                                  unique=True)):
            tweaks.append((slot, draw(st.sampled_from([
                {'allocation_ratio': 0.5}, {'reserved': 'total-1'},
                {'total': 1}, {'min_unit': 3, 'max_unit': 2},
                {'step_size': 5, 'max_unit': 4},
                {'min_unit': 9, 'max_unit': 9},
                {'reserved': 'total'}]))))
    ages = {consumer: draw(st.sampled_from(AGES))
            for consumer, _, _, _ in claims}
    return claims, tweaks, ages


def make_troubles(client, foreign, claims, tweaks, ages):
    for consumer, consumer_type, project, held in claims:
        by_provider = collections.defaultdict(dict)
        for (uuid, rc), amount in held.items():
            by_provider[uuid][rc] = amount
        # Refused (no room, units) is fine: that consumer is not made.
        client.put('/allocations/' + consumer, json={
            'allocations': {uuid: {'resources': resources}
                            for uuid, resources in by_provider.items()},
            'consumer_generation': None, 'consumer_type': consumer_type,
            'project_id': project, 'user_id': USER}, status='*')
    for (uuid, rc), fields in tweaks:
        url = '/resource_providers/%s/inventories/%s' % (uuid, rc)
        record = client.get(url).json
        for name, value in fields.items():
            if value == 'total':
                value = record['total']
            elif value == 'total-1':
                value = record['total'] - 1
            record[name] = value
        client.put(url, json=record, status='*')
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with foreign.begin() as conn:
        for consumer, age in ages.items():
            if age:
                conn.execute(sa.text(
                    'UPDATE allocations SET created_at = :when, '
                    'updated_at = NULL WHERE consumer_id = :consumer'),
                    {'when': now - datetime.timedelta(seconds=age),
                     'consumer': consumer})


# -- the reference ----------------------------------------------------------

def _rows(conn, sql):
    """The rows of ``sql``, timestamps as datetimes (SQLite's plain SQL
    gives their text)."""
    return [tuple(_moment(value) if name.endswith('_at') else value
                  for name, value in row._mapping.items())
            for row in conn.execute(sa.text(sql))]


def _moment(value):
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def tables(foreign):
    with foreign.connect() as conn:
        return {
            'providers': _rows(conn, 'SELECT id, uuid, name, '
                               'root_provider_id, created_at, updated_at '
                               'FROM resource_providers'),
            'inventories': _rows(conn, 'SELECT i.resource_provider_id, '
                                 'c.name, i.total, i.reserved, i.min_unit, '
                                 'i.max_unit, i.step_size, '
                                 'i.allocation_ratio FROM inventories i '
                                 'JOIN resource_classes c ON '
                                 'c.id = i.resource_class_id'),
            'allocations': _rows(conn, 'SELECT a.consumer_id, '
                                 'a.resource_provider_id, c.name, a.used, '
                                 'a.created_at, a.updated_at FROM '
                                 'allocations a JOIN resource_classes c ON '
                                 'c.id = a.resource_class_id'),
            'sharing': {row[0] for row in _rows(
                conn, "SELECT t.resource_provider_id FROM "
                "resource_provider_traits t JOIN traits n ON "
                "n.id = t.trait_id WHERE n.name = '%s'" % SHARING_TRAIT)},
            'aggregates': _rows(conn, 'SELECT m.resource_provider_id, '
                                'a.uuid FROM resource_provider_aggregates m '
                                'JOIN placement_aggregates a ON '
                                'a.id = m.aggregate_id'),
            'consumers': {row[0]: row[1:] for row in _rows(
                conn, 'SELECT c.uuid, t.name, p.external_id AS project, '
                'u.external_id AS user_external '
                'FROM consumers c JOIN projects p ON p.id = c.project_id '
                'JOIN users u ON u.id = c.user_id LEFT JOIN consumer_types '
                't ON t.id = c.consumer_type_id')},
        }


def _stamp(moment):
    return moment.timestamp() if moment else 0


def expected_audit(t, query, now):
    """The audit's answer to ``query`` (a dict), worked out from ``t``."""
    providers = {row[0]: row for row in t['providers']}
    aggregates = collections.defaultdict(set)
    for provider, aggregate in t['aggregates']:
        aggregates[provider].add(aggregate)
    root = {id_: row[3] for id_, row in providers.items()}
    scope = set(providers)
    if query.get('in_tree'):
        wanted = [id_ for id_, row in providers.items()
                  if row[1] == query['in_tree']]
        scope = {id_ for id_ in providers
                 if wanted and root[id_] == root[wanted[0]]}
    if query.get('member_of'):
        scope = {id_ for id_ in scope
                 if query['member_of'] in aggregates[id_]}
    project = query.get('project_id')
    consumers = t['consumers']
    held = collections.defaultdict(int)      # (consumer, rp, rc) -> used
    written = {}
    for consumer, rp, rc, used, created, updated in t['allocations']:
        held[consumer, rp, rc] += used
        moment = updated or created
        for key in ((consumer, rp, rc), consumer):
            written[key] = max(written.get(key, moment), moment)
    body = {}
    # Over capacity.
    over = []
    for rp, rc, total, reserved, min_unit, max_unit, step, ratio in t[
            'inventories']:
        capacity = int((total - reserved) * ratio)
        holders = sorted(
            [(c, used) for (c, p, r), used in held.items()
             if (p, r) == (rp, rc)],
            key=lambda h: (-h[1], -_stamp(written[h[0], rp, rc]), h[0]))
        used = sum(amount for _, amount in holders)
        if used <= capacity or rp not in scope:
            continue
        if project:
            holders = [h for h in holders if consumers[h[0]][1] == project]
            if not holders:
                continue
        row = providers[rp]
        over.append(((-(used - capacity), -_stamp(row[5] or row[4]),
                      row[1], rc),
                     (row[1], rc, capacity, used, used - capacity,
                      [h[0] for h in holders])))
    body['over_capacity'] = [item for _, item in sorted(over)]
    # Split consumers.
    shared_roots = {}
    for s in t['sharing']:
        shared_roots[s] = {root[m] for m in providers
                           if aggregates[m] & aggregates[s]} - {root[s]}
    split = []
    by_consumer = collections.defaultdict(set)
    for consumer, rp, rc in held:
        by_consumer[consumer].add(rp)
    for consumer, rps in by_consumer.items():
        trees = collections.defaultdict(set)
        for rp in rps:
            trees[root[rp]].add(rp)
        unexplained = [
            r for r, members in trees.items()
            if not all(m in t['sharing']
                       and shared_roots[m] & (set(trees) - {r})
                       for m in members)]
        if len(unexplained) < 2 or not rps & scope:
            continue
        if project and consumers[consumer][1] != project:
            continue
        resources = {}
        for (c, rp, rc), used in held.items():
            if c == consumer:
                resources.setdefault(providers[root[rp]][1], {}).setdefault(
                    providers[rp][1], {})[rc] = used
        split.append(((-_stamp(written[consumer]), consumer), (
            consumer, *consumers[consumer],
            sorted(resources), [{'root': r, 'resources': resources[r]}
                                for r in sorted(resources)])))
    body['split_consumers'] = [item for _, item in sorted(split)]
    # Stale migrations.
    cutoff = now - datetime.timedelta(seconds=query.get('stale_after',
                                                        86400))
    stale = []
    for consumer, rps in by_consumer.items():
        record = consumers.get(consumer)
        if (record and record[0] == 'MIGRATION'
                and written[consumer] < cutoff and rps & scope
                and (not project or record[1] == project)):
            stale.append(((written[consumer], consumer), (
                consumer, sorted(providers[rp][1] for rp in rps))))
    body['stale_migrations'] = [item for _, item in sorted(stale)]
    # Unusable inventory.
    unusable = []
    for rp, rc, total, reserved, min_unit, max_unit, step, ratio in t[
            'inventories']:
        capacity = int((total - reserved) * ratio)
        limit = max_unit if reserved == total else min(max_unit, capacity)
        fits = any(amount % step == 0
                   for amount in range(min_unit, min(limit, 200) + 1))
        if not fits and rp in scope and not project:
            unusable.append((providers[rp][1], rc))
    body['unusable_inventory'] = sorted(unusable)
    kinds = query.get('kind', ','.join(body)).split(',')
    body = {kind: body[kind] for kind in body if kind in kinds}
    counts = {kind: len(found) for kind, found in body.items()}
    if query.get('limit'):
        body = {kind: found[:query['limit']] for kind, found in body.items()}
    return body, counts


def actual_audit(answer):
    """The answer, in the reference's terms."""
    body = {}
    for kind, found in answer.items():
        if kind == 'over_capacity':
            body[kind] = [(f['resource_provider']['uuid'],
                           f['resource_class'], f['capacity'], f['used'],
                           f['over'], f['consumers']) for f in found]
        elif kind == 'split_consumers':
            body[kind] = [(f['consumer'], f['consumer_type'],
                           f['project_id'], f['user_id'], f['roots'],
                           f['trees']) for f in found]
        elif kind == 'stale_migrations':
            body[kind] = [(f['consumer'], f['resource_providers'])
                          for f in found]
        elif kind == 'unusable_inventory':
            body[kind] = [(f['resource_provider']['uuid'],
                           f['resource_class']) for f in found]
    return body, answer['counts']


def _differences(dep, trouble, query, actual, expected):
    lines = [repr(dep), repr(trouble), 'GET /audit?%s' % query]
    for kind in sorted(set(actual[0]) | set(expected[0])):
        if actual[0].get(kind) != expected[0].get(kind):
            lines += ['%s:' % kind, '  expected %r' % (expected[0].get(kind),),
                      '  got      %r' % (actual[0].get(kind),)]
    if actual[1] != expected[1]:
        lines.append('counts: expected %r, got %r' % (expected[1],
                                                      actual[1]))
    return dep.with_names('\n'.join(lines))


@st.composite
def queries(draw, dep):
    query = {}
    if prop._sometimes(draw, 3):
        query['kind'] = ','.join(draw(st.lists(st.sampled_from([
            'over_capacity', 'split_consumers', 'stale_migrations',
            'unusable_inventory']), min_size=1, max_size=2, unique=True)))
    if prop._sometimes(draw, 3):
        query['stale_after'] = draw(st.sampled_from([7200, 86400, 150000]))
    if prop._sometimes(draw, 4):
        query['in_tree'] = draw(st.sampled_from(
            [p.uuid for p in dep.providers]))
    if prop._sometimes(draw, 4):
        query['member_of'] = draw(st.sampled_from(sorted(prop.AGGS.values())))
    if prop._sometimes(draw, 4):
        query['project_id'] = draw(st.sampled_from(PROJECTS))
    if prop._sometimes(draw, 4):
        query['limit'] = draw(st.integers(1, 2))
    return query


@st.composite
def later_writes(draw, dep, trouble):
    """What happens between two audits of one process: (consumers
    deleted, sharing traits or aggregates changed, more troubles, whether
    anything else writes allocations by hand)."""
    made = [consumer for consumer, _, _, _ in trouble[0]]
    deleted = draw(st.lists(st.sampled_from(made), unique=True)) if (
        made) else []
    regrouped = draw(st.lists(st.sampled_from(dep.providers), max_size=2,
                              unique_by=lambda p: p.uuid))
    regroupings = [(p.uuid, draw(st.frozensets(st.sampled_from(
        sorted(prop.AGGS.values())), max_size=2)), draw(st.booleans()))
        for p in regrouped]
    return (deleted, regroupings, draw(troubles(dep, first=10)),
            draw(st.booleans()))


def make_later_writes(client, foreign, deleted, regroupings, trouble,
                      by_hand):
    for consumer in deleted:
        client.delete('/allocations/' + consumer, status='*')
    for uuid, aggregates, sharing in regroupings:
        base = '/resource_providers/' + uuid
        traits = set(client.get(base + '/traits').json['traits'])
        traits = (traits | {SHARING_TRAIT}) if sharing else (
            traits - {SHARING_TRAIT})
        generation = client.get(base).json['generation']
        generation = client.put(base + '/traits', json={
            'resource_provider_generation': generation,
            'traits': sorted(traits)}).json['resource_provider_generation']
        client.put(base + '/aggregates', json={
            'resource_provider_generation': generation,
            'aggregates': sorted(aggregates)})
    make_troubles(client, foreign, *trouble)
    if by_hand:
        # A consumer's allocations moved to another provider by SQL.
        with foreign.begin() as conn:
            conn.execute(sa.text(
                'UPDATE allocations SET resource_provider_id = '
                '(SELECT MAX(id) FROM resource_providers) WHERE consumer_id '
                '= (SELECT MIN(consumer_id) FROM allocations)'))


@st.composite
def audit_scenarios(draw):
    dep = draw(prop.deployments())
    trouble = draw(troubles(dep))
    return (dep, trouble, draw(st.lists(queries(dep), min_size=1,
                                        max_size=3)),
            draw(later_writes(dep, trouble)))


@prop.on_random_deployments(EXAMPLES)
@hypothesis.given(scenario=audit_scenarios())
def test_audit_matches_a_scan_of_the_tables(api, foreign, scenario):
    """Twice in one process, with writes between (ours and by hand), so
    that the second audit reads what it kept in memory since the first."""
    dep, trouble, queries_, later = scenario
    prop.built(api, (dep, []))
    make_troubles(api, foreign, *trouble)
    check_audits(api, foreign, dep, trouble, queries_)
    make_later_writes(api, foreign, *later)
    check_audits(api, foreign, dep, (trouble, later), queries_)


def check_audits(api, foreign, dep, trouble, queries_):
    t = tables(foreign)
    for query in queries_:
        now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        answer = api.get('/audit?' + '&'.join(
            '%s=%s' % item for item in query.items())).json
        expected = expected_audit(t, query, now)
        actual = actual_audit(answer)
        if actual != expected:
            pytest.fail(_differences(dep, trouble, query, actual, expected),
                        pytrace=False)
        for kind, found in answer.items():
            if kind != 'counts':
                assert all(f['reason'] for f in found)
                if found:
                    hypothesis.event('found: %s' % kind)


# -- what-if against the change made ------------------------------------------

@st.composite
def changes(draw, dep):
    """{provider uuid: {class: change}} for one or two providers."""
    chosen = draw(st.lists(st.sampled_from(dep.providers), min_size=1,
                           max_size=2, unique_by=lambda p: p.uuid))
    result = {}
    for provider in chosen:
        classes = sorted(provider.inventories) or ['VCPU']
        result[provider.uuid] = {rc: draw(st.sampled_from([
            {'allocation_ratio': 0.5}, {'allocation_ratio': 3.0},
            {'reserved': 1}, {'reserved': 4}, {'total': 2},
            {'total': 6, 'reserved': 2}, None]))
            for rc in draw(st.lists(st.sampled_from(classes), min_size=1,
                                    max_size=2, unique=True))}
    return result


@st.composite
def what_if_scenarios(draw):
    dep = draw(prop.deployments())
    classes = sorted({rc for p in dep.providers for rc in p.inventories})
    resources = ','.join('%s:%d' % (rc, draw(st.integers(1, 2)))
                         for rc in draw(st.lists(st.sampled_from(
                             classes or ['VCPU']), min_size=1, max_size=2,
                             unique=True)))
    return dep, draw(troubles(dep)), draw(changes(dep)), resources


def _capacity(record):
    return int((record['total'] - record['reserved'])
               * record['allocation_ratio'])


def _put_inventories(api, uuid, records):
    """The status of a PUT of the provider's whole inventory."""
    generation = api.get('/resource_providers/' + uuid).json['generation']
    return api.put('/resource_providers/%s/inventories' % uuid,
                   json={'resource_provider_generation': generation,
                         'inventories': records}, status='*').status_int


def _merged_inventories(api, uuid, classes):
    """The whole inventory a PUT would send after ``classes`` changes,
    or None when a change cannot make a record."""
    current = api.get('/resource_providers/%s/inventories'
                      % uuid).json['inventories']
    records = {rc: dict(record) for rc, record in current.items()}
    for rc, change in classes.items():
        if change is None:
            records.pop(rc, None)
        elif rc in records:
            records[rc].update(change)
        elif 'total' in change:
            records[rc] = dict(change)
        else:
            return None
    return records


@prop.on_random_deployments(EXAMPLES)
@hypothesis.given(scenario=what_if_scenarios())
def test_what_if_is_what_the_change_does(api, foreign, scenario):
    dep, trouble, change, resources = scenario
    prop.built(api, (dep, []))
    make_troubles(api, foreign, *trouble)
    resp = api.post('/audit/what_if', json={
        'inventories': change, 'resources': resources}, status='*')
    merged = {uuid: _merged_inventories(api, uuid, classes)
              for uuid, classes in change.items()}
    if resp.status_int == 400:
        # Then a PUT of the change is refused too (or cannot be made).
        refused = False
        for uuid, records in merged.items():
            if records is None:
                refused = True
                continue
            refused = refused or _put_inventories(api, uuid, records) == 400
        assert refused, (resp.json, change)
        hypothesis.event('what-if: 400')
        return
    answer = resp.json
    before = api.get('/allocation_candidates/capacity?resources='
                     + resources).json['total']
    assert answer['capacity']['before'] == before
    refused = {(row['resource_provider']['uuid'], row['resource_class'])
               for row in answer['providers'] if row['refused']}
    for uuid, records in merged.items():
        status = _put_inventories(api, uuid, records)
        said_refused = any(key[0] == uuid for key in refused)
        assert (status == 409) == said_refused, (status, answer, change)
    if refused:
        hypothesis.event('what-if: refused')
        return      # not all of the change could be made
    if any(row['over_after'] for row in answer['providers']):
        hypothesis.event('what-if: over capacity after')
    if answer['capacity']['before'] != answer['capacity']['after']:
        hypothesis.event('what-if: capacity changes')
    assert api.get('/allocation_candidates/capacity?resources='
                   + resources).json['total'] == answer['capacity']['after']
    over = {(f['resource_provider']['uuid'], f['resource_class']):
            f['consumers']
            for f in api.get('/audit?kind=over_capacity').json[
                'over_capacity']}
    for row in answer['providers']:
        uuid, rc = row['resource_provider']['uuid'], row['resource_class']
        inventory = api.get('/resource_providers/%s/inventories'
                            % uuid).json['inventories']
        usages = api.get('/resource_providers/%s/usages'
                         % uuid).json['usages']
        assert row['capacity_after'] == (
            _capacity(inventory[rc]) if rc in inventory else 0)
        assert row['used'] == usages.get(rc, 0)
        assert row['over_after'] == max(0, row['used']
                                        - row['capacity_after'])
        assert row['consumers'] == over.get((uuid, rc), []), (row, over)
