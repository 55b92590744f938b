"""The audit's four kinds of finding, each stating in numbers how it was
derived.

- ``over_capacity``: a provider's class whose usage exceeds
  ``(total - reserved) x allocation_ratio``, with the consumers holding
  it, largest first, then newest.  Placement refuses a claim that would
  do this, so it follows only from inventory lowered under usage.
- ``split_consumers``: a consumer holding in two or more trees that no
  sharing relation explains: an evacuation or a failed migration left it
  on the source and the destination.  A tree is explained when each
  provider the consumer holds on there is a sharing provider that shares
  with another of its trees (``State.shared_roots``, the relation the
  candidate search uses); two or more unexplained trees make a split.
- ``stale_migrations``: a consumer of type MIGRATION whose allocations
  were last written longer ago than ``stale_after`` seconds.
- ``unusable_inventory``: an inventory no amount can be allocated from:
  ``min_unit`` above ``max_unit``, no multiple of ``step_size`` between
  them, or a capacity below the smallest amount allowed.  All of it
  reserved (``reserved`` equal to ``total``) is not one: ironic marks a
  node in maintenance that way.

Inventories and usage are read from the candidate state in memory,
exact as of the request; only what the allocation rows alone know is
read from the database (``storage.audit``), narrowly for what the
findings name; the consumers spanning trees are kept in memory
(``state.consumer_spans``), exact by the change log.
"""

import dataclasses
import datetime

from placement.state import snapshot
from placement.storage import audit as storage
from placement.state import consumer_spans
from placement.storage import tables
from placement.state import questions

KINDS = ('over_capacity', 'split_consumers', 'stale_migrations',
         'unusable_inventory')
STALE_AFTER = 86400


@dataclasses.dataclass(frozen=True)
class Scope:
    """What the caller asks for: the kinds, and the filters.

    ``member_of`` is a list of aggregate uuid sets (a provider must be in
    one of each) and ``forbidden_aggregates`` a set (in none of them), as
    ``GET /resource_providers`` reads them.  A finding about consumers is
    in scope when one of the providers it names is, and (with
    ``project_id``) when its consumers are that project's; inventory
    findings name no consumer, so ``project_id`` leaves none of them.
    ``limit`` caps each kind's list; ``counts`` still counts them all.
    """
    kinds: tuple = KINDS
    stale_after: int = STALE_AFTER
    in_tree: str = None
    member_of: tuple = ()
    forbidden_aggregates: frozenset = frozenset()
    project_id: str = None
    limit: int = None

    def filters_providers(self):
        return bool(self.in_tree or self.member_of
                    or self.forbidden_aggregates)


def audit(db, scope, now=None):
    """The findings of ``scope`` as a JSON-ready body: a list per kind
    asked for, and ``counts`` of each before ``limit``."""
    now = now or tables.utcnow()
    wanted = set(scope.kinds)
    # What only the allocation rows know is read first, outside the
    # state's lock: the candidate searches of this process wait on it.
    spans = None
    if 'split_consumers' in wanted:
        spans = consumer_spans.of(db)
    if 'stale_migrations' in wanted:
        cutoff = now - datetime.timedelta(seconds=scope.stale_after)
        written = db.read(storage.migrations_written_before, cutoff)
        stale = db.read(storage.allocations_of, written) if written else {}
    in_scope, over, unusable, split = snapshot.answer(
        db, _from_state, scope, spans)
    body = {}
    if 'over_capacity' in wanted:
        body['over_capacity'] = _with_holders(db, over, scope)
    if 'split_consumers' in wanted:
        held = db.read(storage.allocations_of, split) if split else {}
        body['split_consumers'] = _split_consumers(db, held, in_scope, scope)
    if 'stale_migrations' in wanted:
        body['stale_migrations'] = _stale_migrations(
            db, stale, written, in_scope, scope, now)
    if 'unusable_inventory' in wanted:
        body['unusable_inventory'] = list(unusable)
    body['counts'] = {kind: len(body[kind]) for kind in KINDS
                      if kind in body}
    if scope.limit is not None:
        for kind in body['counts']:
            del body[kind][scope.limit:]
    return body


# -- scope ------------------------------------------------------------------

@questions.question
def _from_state(state, scope, spans):
    """(the providers in scope, the over-capacity findings, the unusable
    inventories, the split consumers of ``spans``), those ``scope``
    does not ask for empty."""
    wanted = set(scope.kinds)
    over = unusable = split = ()
    in_scope = _providers_in_scope(state, scope)
    if 'over_capacity' in wanted:
        over = _over_capacity(state, in_scope)
    if 'unusable_inventory' in wanted and not scope.project_id:
        unusable = _unusable(state, in_scope)
    if spans is not None:
        split = set(_split(state, spans))
    return in_scope, over, unusable, split


def _providers_in_scope(state, scope):
    """The ids of the providers the filters leave, or None (all)."""
    if not scope.filters_providers():
        return None
    ids = set(state.providers)
    if scope.in_tree:
        provider = state.provider_by_uuid(scope.in_tree)
        ids = (set(state.members(provider.root)) if provider is not None
               else set())
    for any_of in scope.member_of:
        members = set()
        for aggregate in any_of:
            members |= state.in_aggregate(aggregate)
        ids &= members
    for aggregate in scope.forbidden_aggregates:
        ids -= state.in_aggregate(aggregate)
    return ids


def _in_scope(in_scope, provider_ids):
    return in_scope is None or not in_scope.isdisjoint(provider_ids)


# -- inventory findings -------------------------------------------------------

def _records(state, in_scope, test):
    """(provider, class id, class name, Inventory, what ``test`` said) of
    every inventory in scope that ``test(Inventory)`` finds something
    about.  Providers alike share their records (``state.providers``), so each
    shared set of records is tested once: at 100,000 providers that is a
    few hundred tests, not 300,000."""
    providers = state.providers
    tested = {}     # id of a provider's records: [(class id, record, said)]
    for provider_id in (providers if in_scope is None else in_scope):
        provider = providers[provider_id]
        inventory = provider.inventory
        found = tested.get(id(inventory))
        if found is None:
            found = tested[id(inventory)] = [
                (class_id, record, said)
                for class_id, record in inventory.items()
                for said in (test(record),) if said]
        for class_id, record, said in found:
            yield provider, class_id, state.class_name(class_id), record, said


def _capacity_words(record):
    return '%d = (%d - %d reserved) x %s' % (
        record.capacity, record.total, record.reserved,
        record.allocation_ratio)


def _is_over(record):
    return record.used > record.capacity


def _over_capacity(state, in_scope):
    """[(provider id, class id, finding without its consumers)] of the
    inventories whose usage exceeds their capacity, largest excess
    first, then the provider whose records changed last."""
    found = []
    for provider, class_id, name, record, _ in _records(
            state, in_scope, _is_over):
        found.append((provider.id, class_id, provider.changed_at, {
            'resource_provider': provider_named(provider),
            'resource_class': name,
            'capacity': record.capacity,
            'used': record.used,
            'over': record.used - record.capacity,
            'reason': 'used %d > capacity %s' % (
                record.used, _capacity_words(record)),
        }))
    found.sort(key=lambda item: (
        -item[3]['over'], -_seconds(item[2]),
        item[3]['resource_provider']['uuid'], item[3]['resource_class']))
    return [(provider_id, class_id, finding)
            for provider_id, class_id, _, finding in found]


def _with_holders(db, over, scope):
    """The over-capacity findings with the consumers holding each excess
    (and, with ``project_id``, only those of that project's consumers)."""
    if not over:
        return []
    held = db.read(storage.holdings,
                   [(provider, class_id) for provider, class_id, _ in over])
    project_of = {}
    if scope.project_id:
        project_of = _consumer_records(db, {
            holding.consumer for holdings in held.values()
            for holding in holdings})
    findings = []
    for provider, class_id, finding in over:
        holdings = held.get((provider, class_id), [])
        if scope.project_id:
            holdings = [holding for holding in holdings if _project(
                project_of, holding.consumer) == scope.project_id]
            if not holdings:
                continue
        finding['consumers'] = [holding.consumer for holding in holdings]
        finding['used_by_consumer'] = {holding.consumer: holding.used
                                       for holding in holdings}
        findings.append(finding)
    return findings


def unusable_reason(record):
    """Why no amount can ever be allocated from ``record`` (an Inventory
    or anything with its fields), or None."""
    if record.min_unit > record.max_unit:
        return 'min_unit %d > max_unit %d' % (record.min_unit,
                                              record.max_unit)
    step = record.step_size
    smallest = -(-record.min_unit // step) * step
    if smallest > record.max_unit:
        return ('no multiple of step_size %d lies from min_unit %d to '
                'max_unit %d' % (step, record.min_unit, record.max_unit))
    if record.reserved != record.total and smallest > record.capacity:
        return ('capacity %s < %d, the smallest amount allowed (min_unit '
                '%d, step_size %d)' % (_capacity_words(record), smallest,
                                       record.min_unit, step))
    return None


def _unusable(state, in_scope):
    found = []
    for provider, _, name, _, reason in _records(state, in_scope,
                                                 unusable_reason):
        found.append({'resource_provider': provider_named(provider),
                      'resource_class': name, 'reason': reason})
    found.sort(key=lambda item: (item['resource_provider']['uuid'],
                                 item['resource_class']))
    return found


# -- consumer findings ------------------------------------------------------

def _split(state, spans):
    """The consumers of ``spans`` (``consumer_spans.Spans``) that no
    sharing relation explains."""
    for (root, sharing), consumers in spans.pairs.items():
        if not _shares_with_any(state, sharing, (root,)):
            yield from consumers
    for consumer, placements in spans.others.items():
        if len(_unexplained_trees(state, placements)) > 1:
            yield consumer


def _unexplained_trees(state, placements):
    """The roots of the trees in ``placements`` ([storage.Placement]) that
    no sharing relation explains."""
    trees = {}
    for placement in placements:
        trees.setdefault(placement.root, set()).add(placement.provider)
    unexplained = []
    for root, providers in trees.items():
        others = trees.keys() - {root}
        if not all(_shares_with_any(state, provider, others)
                   for provider in providers):
            unexplained.append(root)
    return unexplained


def _shares_with_any(state, provider_id, roots):
    """Whether ``provider_id`` is a sharing provider that shares with one
    of the trees of ``roots`` (ids)."""
    provider = state.providers.get(provider_id)
    return (provider is not None and provider_id in state.sharing
            and not state.shared_roots(provider)[0].isdisjoint(roots))


def _consumer_records(db, uuids):
    return db.read(storage.consumers, uuids) if uuids else {}


def _project(records, uuid):
    record = records.get(uuid)
    return record.project_id if record is not None else None


def _trees(held):
    """[{root, resources}] of ``held``, by root uuid."""
    trees = {}
    for item in held:
        tree = trees.setdefault(item.root_uuid, {
            'root': item.root_uuid, 'resources': {}})
        amounts = tree['resources'].setdefault(item.provider_uuid, {})
        amounts[item.resource_class] = (
            amounts.get(item.resource_class, 0) + item.used)
    return [trees[root] for root in sorted(trees)]


def _described(uuid, record):
    return {'consumer': uuid,
            'consumer_type': record.consumer_type if record else None,
            'project_id': record.project_id if record else None,
            'user_id': record.user_id if record else None}


def _consumer_findings(db, held_by, in_scope, scope):
    """[(uuid, held, consumer record)] of ``held_by`` in scope."""
    records = _consumer_records(db, set(held_by))
    for uuid in held_by:
        held = held_by[uuid]
        if not _in_scope(in_scope, {item.provider for item in held}):
            continue
        if scope.project_id and _project(records, uuid) != scope.project_id:
            continue
        yield uuid, held, records.get(uuid)


def _split_consumers(db, held_by, in_scope, scope):
    """The split consumers' findings: ``held_by`` is {consumer uuid:
    [storage.Held]} of those found split."""
    findings = []
    for uuid, held, record in _consumer_findings(db, held_by, in_scope,
                                                 scope):
        finding = _described(uuid, record)
        trees = _trees(held)
        finding['roots'] = [tree['root'] for tree in trees]
        finding['trees'] = trees
        finding['reason'] = (
            'holds in %d trees, and no sharing provider among them shares '
            'with another of its trees: %s' % (len(trees), '; '.join(
                '%s: %s' % (tree['root'], _amounts(tree['resources']))
                for tree in trees)))
        newest = max((item.written for item in held if item.written),
                     default=None)
        findings.append((-_seconds(newest), uuid, finding))
    return [finding for _, _, finding in sorted(findings)]


def _amounts(resources):
    return ', '.join('%s %s' % (
        rc, amount) for provider in sorted(resources)
        for rc, amount in sorted(resources[provider].items()))


def _stale_migrations(db, stale, written, in_scope, scope, now):
    """The findings of ``stale`` ({uuid: [Held]}), last written when
    ``written`` ({uuid: time}, as the migrations were chosen) says."""
    findings = []
    for uuid, held, record in _consumer_findings(db, stale, in_scope, scope):
        age = int((now - written[uuid]).total_seconds())
        written_at = written[uuid].isoformat() + 'Z'
        finding = _described(uuid, record)
        finding.update({
            'age_seconds': age,
            'written_at': written_at,
            'resource_providers': sorted({item.provider_uuid
                                          for item in held}),
            'reason': 'allocations last written %s, %d s ago > stale_after '
                      '%d' % (written_at, age, scope.stale_after),
        })
        findings.append((written[uuid], uuid, finding))     # oldest first
    return [finding for _, _, finding in sorted(findings)]


# -- shared -----------------------------------------------------------------

def provider_named(provider):
    """A provider as the answers name it."""
    return {'uuid': provider.uuid, 'name': provider.name}


def _seconds(moment):
    return moment.timestamp() if moment is not None else 0
