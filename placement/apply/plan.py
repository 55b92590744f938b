"""From a provider file and what Placement holds now, what to change.

Each provider the file touches gets an ``Intent``: inventory fields to
set, traits and aggregates to add, and (with ``--prune``) what the file
owned at its last apply and no longer names, to remove. An intent is
applied to a provider's current state to give the state wanted, so after
a generation conflict the provider is read again and the same intent
applied to what another writer left, never overwriting it.

What the file owns is kept in a state file beside it (``--state``): the
inventories, traits and aggregates it added to each provider and the
providers it created. Without ``--prune`` nothing is ever removed.
"""

import concurrent.futures
import dataclasses

from placement.apply import document

# What Placement fills in for a field an inventory record leaves out.
_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'step_size': 1,
             'allocation_ratio': 1.0}
THREADS = 8


class Unresolvable(Exception):
    """The file names a provider it cannot find or create."""


@dataclasses.dataclass(eq=False)
class Intent:
    """What the file wants of one provider."""
    name: str
    uuid: str = None          # None until created
    parent: str = None        # parent uuid, or the Intent to create first
    parent_name: str = None
    create: bool = False
    created_by_file: bool = False
    released: bool = False    # no longer in the file: owns nothing after
    records: dict = dataclasses.field(default_factory=dict)
    ratios: dict = dataclasses.field(default_factory=dict)
    traits: set = dataclasses.field(default_factory=set)
    aggregates: set = dataclasses.field(default_factory=set)
    drop_classes: set = dataclasses.field(default_factory=set)
    drop_traits: set = dataclasses.field(default_factory=set)
    drop_aggregates: set = dataclasses.field(default_factory=set)
    # Without --prune, what the file owned before stays its own.
    kept: dict = dataclasses.field(default_factory=dict)

    def owned(self):
        """What this apply makes the file own on the provider."""
        return {'name': self.name, 'created': self.created_by_file,
                'inventories': sorted(set(self.records) | set(
                    self.kept.get('inventories', ()))),
                'traits': sorted(self.traits | set(
                    self.kept.get('traits', ()))),
                'aggregates': sorted(self.aggregates | set(
                    self.kept.get('aggregates', ())))}

    def wanted(self, current):
        """(inventories, traits, aggregates) wanted, given ``current``
        (the same triple as Placement reports it now)."""
        inventories, traits, aggregates = current
        wanted = {rc: record for rc, record in comparable(inventories).items()
                  if rc not in self.drop_classes}
        for rc, fields in self.records.items():
            record = wanted.setdefault(rc, dict(_DEFAULTS))
            record.update(fields)
            record.setdefault('max_unit', record['total'])
        for rc, ratio in self.ratios.items():
            if rc in wanted:
                wanted[rc]['allocation_ratio'] = ratio
        return (wanted,
                (set(traits) - self.drop_traits) | self.traits,
                (set(aggregates) - self.drop_aggregates) | self.aggregates)


@dataclasses.dataclass
class Change:
    """One provider's difference between now and what is wanted."""
    intent: Intent
    current: tuple            # (inventories, traits, aggregates)
    generation: int = None

    def wanted(self):
        return self.intent.wanted(self.current)

    def empty(self):
        if self.intent.create:
            return False
        inventories, traits, aggregates = self.current
        return (comparable(inventories), set(traits),
                set(aggregates)) == self.wanted()


def comparable(inventories):
    """Inventory records as Placement reports them, less the generation
    some answers carry in each: the form writes are compared in."""
    return {rc: {field: value for field, value in record.items()
                 if field != 'resource_provider_generation'}
            for rc, record in inventories.items()}


@dataclasses.dataclass
class Plan:
    changes: list             # Change, parents before children
    deletions: list           # (uuid, name), children before parents
    state: dict               # what the file owns once applied

    def empty(self):
        return not self.deletions and all(c.empty() for c in self.changes)


class _Resolver:
    """Finds the providers a file names among those that exist."""

    def __init__(self, providers, compute_node):
        self.by_uuid = {p['uuid']: p for p in providers}
        self.by_name = {p['name']: p for p in providers}
        self.compute_node = compute_node
        self.intents = {}     # uuid or name -> Intent of this file

    def existing(self, ref):
        uuid = ref.get('uuid')
        if uuid == document.COMPUTE_NODE:
            found = self.by_name.get(self.compute_node)
            if self.compute_node is None or found is None:
                raise Unresolvable(
                    '$COMPUTE_NODE needs --compute-node naming an existing '
                    'provider')
            return found
        if uuid:
            return self.by_uuid.get(_canonical(uuid))
        return self.by_name.get(ref['name'])

    def parent_of(self, ref):
        found = self.existing(ref)
        if found is not None:
            return found['uuid']
        key = ref.get('uuid') and _canonical(ref['uuid']) or ref.get('name')
        if key not in self.intents:
            raise Unresolvable('parent %s is neither an existing provider nor '
                               'one earlier in the file' % key)
        return self.intents[key]


def _canonical(uuid):
    uuid = uuid.replace('-', '').lower()
    return '-'.join((uuid[:8], uuid[8:12], uuid[12:16], uuid[16:20],
                     uuid[20:]))


def _intent_for(entry, resolver, previous):
    ident = entry['identification']
    found = resolver.existing(ident)
    if found is None:
        if 'name' not in ident:
            raise Unresolvable('provider %s does not exist, and a new one '
                               'needs a name' % ident['uuid'])
        intent = Intent(name=ident['name'], create=True, created_by_file=True,
                        uuid=ident.get('uuid') and _canonical(ident['uuid']))
        if entry.get('parent'):
            intent.parent = resolver.parent_of(entry['parent'])
            intent.parent_name = (
                intent.parent.name if isinstance(intent.parent, Intent)
                else resolver.by_uuid[intent.parent]['name'])
    else:
        intent = Intent(name=found['name'], uuid=found['uuid'],
                        created_by_file=previous.get(found['uuid'], {}).get(
                            'created', False))
        if entry.get('parent'):
            parent = resolver.parent_of(entry['parent'])
            if parent != found.get('parent_provider_uuid'):
                raise Unresolvable('provider %s exists with another parent'
                                   % found['name'])
    for item in (entry.get('inventories') or {}).get('additional') or []:
        intent.records.update(item)
    intent.traits |= set((entry.get('traits') or {}).get('additional') or [])
    intent.aggregates |= {_canonical(a) for a in (
        entry.get('aggregates') or {}).get('additional') or []}
    for key in (intent.uuid, ident.get('name')):
        if key:
            resolver.intents[key] = intent
    return intent


def _selected(client, match, ordered, intents):
    """The intents of every provider ``match`` picks: those that match
    now, and those the file makes match."""
    if 'aggregate' in match:
        found = client.providers(member_of=match['aggregate'])
        named = [i for i in ordered
                 if _canonical(match['aggregate']) in i.aggregates]
    else:
        found = client.providers(required=match['trait'])
        named = [i for i in ordered if match['trait'] in i.traits]
    selected = {id(intent): intent for intent in named}
    for provider in found:
        intent = intents.get(provider['uuid'])
        if intent is None:
            intent = intents[provider['uuid']] = Intent(
                name=provider['name'], uuid=provider['uuid'])
        selected[id(intent)] = intent
    return selected.values()


def _merge_selectors(data, client, ordered, intents):
    """Selector traits and ratios onto the intents of every match."""
    for selector in data.get('selectors') or []:
        for intent in _selected(client, selector['match'], ordered, intents):
            intent.traits |= set((selector.get('traits') or {}).get(
                'additional') or [])
            intent.ratios.update(selector.get('allocation_ratios') or {})


def _apply_previous(intents, previous, prune, resolver):
    """With ``prune``: drop what the file owned and no longer names,
    including everything it owned on a provider it no longer names (a
    provider it created is deleted instead, see ``_orphans``)."""
    if not prune:
        return []
    released = []
    for uuid, owned in previous.items():
        intent = intents.get(uuid)
        if intent is None:
            if owned.get('created') or uuid not in resolver.by_uuid:
                continue
            intent = intents[uuid] = Intent(
                name=resolver.by_uuid[uuid]['name'], uuid=uuid, released=True)
            released.append(intent)
        intent.drop_classes = set(owned.get('inventories', ())) - set(
            intent.records)
        intent.drop_traits = set(owned.get('traits', ())) - intent.traits
        intent.drop_aggregates = set(owned.get('aggregates', ())) - (
            intent.aggregates)
    return released


def _orphans(previous, intents, resolver, prune):
    """Providers the file created and no longer names, children first."""
    if not prune:
        return []
    gone = [uuid for uuid, owned in previous.items()
            if owned.get('created') and uuid in resolver.by_uuid
            and (uuid not in intents or intents[uuid].released)]

    def depth(uuid):
        count, parent = 0, resolver.by_uuid[uuid].get('parent_provider_uuid')
        while parent in resolver.by_uuid:
            count += 1
            parent = resolver.by_uuid[parent].get('parent_provider_uuid')
        return count
    return [(uuid, resolver.by_uuid[uuid]['name'])
            for uuid in sorted(gone, key=depth, reverse=True)]


def read_current(client, intents):
    """{uuid: (generation, (inventories, traits, aggregates))} of the
    providers that exist, read in parallel."""
    uuids = [i.uuid for i in intents if i.uuid and not i.create]

    def read(uuid):
        generation, inventories, traits, aggregates = client.provider(uuid)
        return uuid, (generation, (inventories, traits, aggregates))
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        return dict(pool.map(read, uuids))


def make(data, client, previous=None, prune=False, compute_node=None):
    """The Plan for ``data`` (a loaded document) against Placement now.

    ``previous`` is the state recorded by the last apply.
    """
    previous = previous or {}
    resolver = _Resolver(client.providers(), compute_node)
    ordered = [_intent_for(entry, resolver, previous)
               for entry in data.get('providers') or []]
    intents = {intent.uuid: intent for intent in ordered if intent.uuid}
    _merge_selectors(data, client, ordered, intents)
    listed = {id(intent) for intent in ordered}
    ordered += [intent for intent in intents.values()
                if id(intent) not in listed]
    ordered += _apply_previous(intents, previous, prune, resolver)
    if not prune:
        for intent in ordered:
            intent.kept = previous.get(intent.uuid, {})
    current = read_current(client, ordered)
    changes = []
    for intent in ordered:
        generation, state = current.get(intent.uuid, (None, ({}, [], [])))
        for rc, fields in intent.records.items():
            if 'total' not in fields and rc not in state[0]:
                raise Unresolvable('provider %s has no %s inventory yet: '
                                   'a new one needs a total'
                                   % (intent.name, rc))
        changes.append(Change(intent, state, generation))
    state = {uuid: owned for uuid, owned in previous.items()
             if not prune and uuid not in intents}
    return Plan(changes, _orphans(previous, intents, resolver, prune),
                state)
