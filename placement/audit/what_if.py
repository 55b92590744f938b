"""What changed inventories would do, before they are sent.

The changes are given per provider, or for every provider of an
aggregate or with a trait; each class's fields are merged over its
current record (so one field can change alone), and a null removes the
class.  For every provider and class changed: capacity before and after,
usage, how far over capacity it is before and would be after, the
consumers holding the excess (largest first, then newest, as the audit
lists them), and whether upstream's API would refuse the change (a class
removed while allocated).  With a request, how many more copies of it
fit before and after, counted as ``GET /allocation_candidates/capacity``
counts them, on a copy of the candidate state carrying the new
inventories.  Nothing is written.
"""

import dataclasses

from placement import inventory_rules
from placement.audit import findings
from placement.candidates import capacity
from placement.state import snapshot
from placement.storage import audit as storage
from placement.state import questions

class Invalid(ValueError):
    """The changes name what does not exist, or make a record that
    cannot be stored; the message says which."""


@dataclasses.dataclass(frozen=True)
class Changes:
    """{key: {class name: {field: value} or None}} per provider uuid,
    aggregate uuid and trait name; applied in that order reversed, so a
    provider's own change wins over its aggregate's, which wins over its
    trait's."""
    inventories: dict = dataclasses.field(default_factory=dict)
    by_aggregate: dict = dataclasses.field(default_factory=dict)
    by_trait: dict = dataclasses.field(default_factory=dict)


@questions.question
def _from_state(state, changes, request):
    """(the rows of the answer, with the provider and class each is of;
    the copies of ``request`` that fit before and after, or None)."""
    records = _merged(state, changes)
    for (provider_id, name), record in records.items():
        if record is not None:
            problem = inventory_rules.problem(
                state.provider(provider_id).uuid, name, record)
            if problem:
                raise Invalid(problem)
    rows = _rows(state, records)
    copies = None
    if request is not None:
        after = state.with_inventories(_whole(state, records))
        copies = {'before': capacity.capacity(state, request)['total'],
                  'after': capacity.capacity(after, request)['total']}
    return rows, copies


def what_if(db, changes, request=None):
    """The answer's body (JSON-ready).

    A merged record that a PUT of it would have refused (at the latest
    microversion) is Invalid; ``request`` (a CandidateRequest) is counted
    in copies before and after.
    """
    rows, copies = snapshot.answer(db, _from_state, changes, request)
    over = [(row['_provider'], row['_class']) for row in rows
            if row['over_after']]
    held = db.read(storage.holdings, over) if over else {}
    for row in rows:
        holdings = held.get((row.pop('_provider'), row.pop('_class')), ())
        row['consumers'] = [holding.consumer for holding in holdings]
    body = {'providers': rows}
    if copies is not None:
        body['capacity'] = copies
    return body


def _targets(state, changes):
    """[(provider ids, {class name: change}, whether the providers were
    named one by one)], broadest first."""
    targets = []
    for name, classes in sorted(changes.by_trait.items()):
        trait = state.trait_id(name)
        if trait is None:
            raise Invalid('No such trait %s.' % name)
        targets.append((sorted(state.holding_trait(trait)), classes,
                        False))
    for aggregate, classes in sorted(changes.by_aggregate.items()):
        members = state.in_aggregate(aggregate)
        if not members:
            raise Invalid('No resource provider is a member of aggregate '
                          '%s.' % aggregate)
        targets.append((sorted(members), classes, False))
    for uuid, classes in sorted(changes.inventories.items()):
        provider = state.provider_by_uuid(uuid)
        if provider is None:
            raise Invalid('No resource provider with uuid %s found.' % uuid)
        targets.append(([provider.id], classes, True))
    return targets


def _merged(state, changes):
    """{(provider id, class name): the record after (None: removed)} of
    every provider and class the changes touch.

    A change named for one provider must make a whole record (a class it
    has not got needs ``total``); one for an aggregate's or a trait's
    providers changes only the providers that have the class, unless it
    gives ``total``."""
    merged = {}
    for provider_ids, classes, named in _targets(state, changes):
        for name, change in classes.items():
            class_id = state.class_id(name)
            if class_id is None:
                raise Invalid('No such resource class %s.' % name)
            for provider_id in provider_ids:
                key = (provider_id, name)
                current = merged.get(key, _record(
                    state.provider(provider_id), class_id))
                if change is None:
                    merged[key] = None
                elif current is None and 'total' not in change:
                    if named:
                        raise Invalid(
                            'Resource provider %s has no %s inventory: '
                            'give its total.' % (
                                state.provider(provider_id).uuid, name))
                else:
                    merged[key] = dict(current or inventory_rules.DEFAULTS,
                                       **change)
    return merged


def _record(provider, class_id):
    """The provider's record of the class as a PUT would send it, or
    None."""
    record = provider.inventory.get(class_id)
    if record is None:
        return None
    return dict(zip(inventory_rules.FIELDS, record.fields()))


def _values(record):
    """A record's fields (a dict), in ``inventory_rules.FIELDS`` order."""
    return tuple(record[field] for field in inventory_rules.FIELDS)


def _whole(state, records):
    """{provider id: {class id: fields}}: each changed provider's whole
    inventory after the changes."""
    whole = {}
    for (provider_id, name), record in records.items():
        inventory = whole.get(provider_id)
        if inventory is None:
            provider = state.provider(provider_id)
            inventory = whole[provider_id] = {
                class_id: held.fields()
                for class_id, held in provider.inventory.items()}
        if record is None:
            inventory.pop(state.class_id(name), None)
        else:
            inventory[state.class_id(name)] = _values(record)
    return whole


def _rows(state, records):
    rows = []
    for (provider_id, name), record in records.items():
        provider = state.provider(provider_id)
        class_id = state.class_id(name)
        current = provider.inventory.get(class_id)
        used = current.used if current is not None else 0
        before = current.capacity if current is not None else 0
        after = (inventory_rules.capacity_of(record)
                 if record is not None else 0)
        refused = None
        if record is None and used:
            refused = ('%s is allocated (%d used): a write removing it is '
                       'refused' % (name, used))
        rows.append({
            'resource_provider': findings.provider_named(provider),
            'resource_class': name,
            'capacity_before': before,
            'capacity_after': after,
            'used': used,
            'over_before': max(0, used - before),
            'over_after': max(0, used - after),
            'refused': refused,
            'reason': _reason(name, used, before, after, record),
            '_provider': provider_id,
            '_class': class_id,
        })
    rows.sort(key=lambda row: (-row['over_after'],
                               row['resource_provider']['uuid'],
                               row['resource_class']))
    return rows


def _reason(name, used, before, after, record):
    if record is None:
        return '%s removed: capacity %d -> 0, %d used' % (name, before, used)
    words = 'capacity %d -> %s = (%d - %d reserved) x %s, %d used' % (
        before, after, record['total'], record['reserved'],
        record['allocation_ratio'], used)
    if used > after:
        words += ': %d over' % (used - after)
    return words
