"""The candidate-relevant state of the database, held in memory, exact.

Every allocation-candidates request used to read thousands of inventory,
usage and trait rows to answer; most of them had not changed since the
previous request.  Each process now keeps them in memory: providers with
their place in a tree, inventories, usage, traits and aggregates, and the
names of resource classes and traits.

Exact, not eventually consistent: before each search the process reads
where the change log stands (``storage.changes``, one statement over its
few stamp rows).  Equal to where the state is, nothing has changed
anywhere, in any process on any host.  Otherwise it reloads the providers
the log names since then (or everything, when it is too far behind or a
write did not say what it changed) and then answers.  Writes made by
anything else are logged too, as everything (migration 0004), and stamp
rows of another epoch mean another database: both are read whole.  A
write committed before the request read the log is always seen, as a
fresh read of the database would see it.

The state is shared by the threads of a process; ``Snapshot.fresh``
holds its lock for the refresh and the search that follows, so no search
sees a half-applied refresh.
"""

import collections
import contextlib
import logging
import threading
import weakref

import os_traits
import sqlalchemy as sa

from placement import version
from placement.storage import api_processes
from placement.storage import changes
from placement.storage import inventories as inventory_storage
from placement.storage import per_process
from placement.storage import providers_core
from placement.storage import tables
from placement.storage.tables import (
    AGG, AGGREGATE_MEMBERSHIPS, ALLOC, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT)


LOG = logging.getLogger(__name__)

# A refresh naming more providers than this reloads everything instead:
# one pass over each table beats thousands of id lists.
_PARTIAL_LIMIT = 5000
# Providers read again (at least this many, and a tenth of them all)
# after which Snapshot.after_large_read is called.
_LARGE_READ = 1000


class Inventory:
    """One inventory record and what is allocated against it.

    Never changed once made (a provider whose inventory or usage changes
    is read again), so providers with the same record and usage share
    one object: most compute nodes of a cloud are alike, and at 100,000
    providers a record each was a third of the state's memory."""
    __slots__ = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                 'ratio', 'used', 'capacity', 'free', '__weakref__')

    def __init__(self, total, reserved, min_unit, max_unit, step_size,
                 ratio, used):
        # The record's fields in ``inventories.FIELDS`` order, as read.
        self.total = total
        self.reserved = reserved
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        self.ratio = ratio
        self.capacity = int((total - reserved) * ratio)
        self.used = used
        self.free = self.capacity - used


class _Inventories(dict):
    """A provider's {class id: Inventory}, never changed once made: the
    providers with the same records share one (at 100,000 alike compute
    nodes, a dict each was 21 MB).  Weakly referable, so that the state
    forgets one no provider has any more."""
    __slots__ = ('__weakref__',)


_NO_INVENTORY = _Inventories()
_NOBODY = frozenset()


class Provider:
    """A provider as the candidate search (and a listing) sees it."""
    __slots__ = ('id', 'uuid', 'parent', 'root', 'name', 'generation',
                 'changed_at', 'inventory', 'traits', 'aggregates',
                 'summaries')

    def __init__(self, id_, uuid, parent, root, name=None, generation=None,
                 changed_at=None):
        self.id = id_
        self.uuid = uuid
        self.parent = parent
        self.root = root
        self.name = name
        self.generation = generation
        self.changed_at = changed_at    # updated_at, else created_at
        self.inventory = _NO_INVENTORY  # class id -> Inventory
        self.traits = frozenset()   # trait ids
        self.aggregates = frozenset()   # aggregate uuids
        self.summaries = None       # shape -> summary, built when asked


class State:
    """Every provider, indexed the ways the search looks them up.

    Read, outside this module, through the lookups below, and through
    two collections a walk over many providers takes once: ``providers``
    ({id: Provider}) and ``sharing`` (the ids of the sharing providers).
    Nothing outside changes them."""

    # Summaries kept on providers at most (about 1 KB each: at 100,000
    # providers an unbounded answer would otherwise keep 120 MB in every
    # worker that gave it).
    SUMMARIES_KEPT = 20000

    def __init__(self):
        self._empty()

    def _empty(self):
        """Know nothing: what a state is made with, and what reading it
        whole starts from."""
        self.position = None    # changes.Position the state is as of
        self.providers = {}                      # id -> Provider
        self.by_uuid = {}                        # uuid -> id
        # Root id -> the tree's ids, ascending: a tuple, not a set (most
        # trees of a cloud are a compute node alone, and 100,000 sets of
        # one took 25 MB); changed through _tree while providers are read.
        self.trees = {}
        self._trees_read = {}   # root id -> ids, while providers are read
        self.aggregate_members = collections.defaultdict(set)  # uuid -> ids
        # Who has inventory of a class, who holds a trait: a request
        # group starts from these instead of every provider.
        self.class_members = collections.defaultdict(set)  # class -> ids
        self.trait_members = collections.defaultdict(set)  # trait -> ids
        self._summaries_kept = 0    # in all providers' ``summaries``
        # Sharing provider id -> (roots it shares with, as a frozenset and
        # sorted), kept until aggregates, trees or sharing change.
        self._shared_roots = {}
        # Equal values the providers share instead of a copy each.
        self._records = weakref.WeakValueDictionary()   # Inventory
        self._inventories = weakref.WeakValueDictionary()  # _Inventories
        self._sets = {}     # trait id and aggregate uuid sets, uuids
        self.sharing = set()
        self.class_ids = {}
        self.class_names = {}
        self.trait_ids = {}
        self.trait_names = {}
        self.trait_changed = {}     # trait id -> updated_at, else created_at
        # Aggregate uuid -> its id: a provider's aggregates are listed in
        # id order, as SQL lists them.
        self.aggregate_ids = {}
        self._sharing_trait = None
        self._ordered = None
        self._roots = None

    # -- lookups --------------------------------------------------------

    def provider(self, provider_id):
        """The Provider of ``provider_id``, which the state holds."""
        return self.providers[provider_id]

    def provider_by_uuid(self, uuid):
        """The Provider ``uuid``, or None when the state has none."""
        provider_id = self.by_uuid.get(uuid)
        return None if provider_id is None else self.providers[provider_id]

    def class_id(self, name):
        """The id of the resource class ``name``, or None."""
        return self.class_ids.get(name)

    def class_name(self, class_id):
        return self.class_names[class_id]

    def trait_id(self, name):
        """The id of the trait ``name``, or None."""
        return self.trait_ids.get(name)

    def trait_name(self, trait_id):
        return self.trait_names[trait_id]

    def trait_changed_at(self, trait_id):
        """When the trait was last changed (else created), or None."""
        return self.trait_changed.get(trait_id)

    def aggregate_id(self, uuid):
        """The internal id of a known aggregate: the order SQL lists a
        provider's aggregates in."""
        return self.aggregate_ids[uuid]

    def holding_class(self, class_id):
        """The ids of the providers with inventory of the class (not to
        be changed)."""
        return self.class_members.get(class_id, _NOBODY)

    def holding_trait(self, trait_id):
        """The ids of the providers with the trait (not to be
        changed)."""
        return self.trait_members.get(trait_id, _NOBODY)

    def in_aggregate(self, uuid):
        """The ids of the providers in the aggregate (not to be
        changed); empty for one the state does not know."""
        return self.aggregate_members.get(uuid, _NOBODY)

    def ordered(self):
        """Every provider id, ascending."""
        if self._ordered is None:
            self._ordered = sorted(self.providers)
        return self._ordered

    def roots(self):
        """Every root id, ascending."""
        if self._roots is None:
            self._roots = sorted(self.trees)
        return self._roots

    def shared_roots(self, provider):
        """The roots of the other trees the sharing ``provider`` shares
        with: (frozenset, sorted tuple).  Worked out once, not per
        request: a storage pool can serve every compute node."""
        found = self._shared_roots.get(provider.id)
        if found is None:
            providers = self.providers
            roots = set()
            for aggregate in provider.aggregates:
                for member in self.aggregate_members[aggregate]:
                    roots.add(providers[member].root)
            roots.discard(provider.root)
            found = self._shared_roots[provider.id] = (
                frozenset(roots), tuple(sorted(roots)))
        return found

    def members(self, root):
        """The ids of the tree rooted at ``root``, ascending."""
        return self.trees.get(root, ())

    # -- provider summaries (see candidates.summaries) ------------------

    @staticmethod
    def kept_summary(provider, shape):
        """The summary of ``shape`` kept on ``provider``, or None."""
        kept = provider.summaries
        return None if kept is None else kept.get(shape)

    def keep_summary(self, provider, shape, summary):
        """Keep ``summary`` on ``provider`` until the provider is read
        again, while fewer than SUMMARIES_KEPT are kept in all."""
        if self._summaries_kept >= self.SUMMARIES_KEPT:
            return
        if provider.summaries is None:
            provider.summaries = {}
        provider.summaries[shape] = summary
        self._summaries_kept += 1

    def _drop_summaries(self):
        for provider in self.providers.values():
            provider.summaries = None
        self._summaries_kept = 0

    # -- changes --------------------------------------------------------

    def _forget(self, provider_id):
        provider = self.providers.pop(provider_id, None)
        if provider is None:
            return
        self._summaries_kept -= len(provider.summaries or ())
        del self.by_uuid[provider.uuid]
        self._tree(provider.root).discard(provider_id)
        _unindex(self.aggregate_members, provider.aggregates, provider_id)
        _unindex(self.class_members, provider.inventory, provider_id)
        _unindex(self.trait_members, provider.traits, provider_id)
        self.sharing.discard(provider_id)

    def _add(self, provider, tree=True):
        """Index ``provider``; in its tree too unless ``tree`` is false
        (a whole read makes every tree at the end: ``_trees_whole``)."""
        self.providers[provider.id] = provider
        self.by_uuid[provider.uuid] = provider.id
        if tree:
            self._tree(provider.root).add(provider.id)
        for aggregate in provider.aggregates:
            self.aggregate_members[aggregate].add(provider.id)
        for class_id in provider.inventory:
            self.class_members[class_id].add(provider.id)
        for trait_id in provider.traits:
            self.trait_members[trait_id].add(provider.id)
        if self._sharing_trait in provider.traits:
            self.sharing.add(provider.id)

    def _tree(self, root):
        """The members of the tree of ``root`` as a set to change while
        providers are read; ``_trees_settled`` puts them back."""
        members = self._trees_read.get(root)
        if members is None:
            members = self._trees_read[root] = set(self.trees.get(root, ()))
        return members

    def _trees_whole(self, providers):
        """Every tree, from ``providers`` ({id: Provider}, all of them)."""
        members = collections.defaultdict(list)
        for id_, provider in providers.items():
            members[provider.root].append(id_)
        self.trees = {root: tuple(sorted(ids))
                      for root, ids in members.items()}

    def _trees_settled(self):
        for root, members in self._trees_read.items():
            if members:
                self.trees[root] = tuple(sorted(members))
            else:
                self.trees.pop(root, None)
        self._trees_read = {}

    def _load_names(self, conn):
        rows = conn.execute(sa.select(RC.c.id, RC.c.name)).all()
        self.class_names = dict(rows)
        self.class_ids = {name: id_ for id_, name in rows}
        rows = conn.execute(sa.select(
            TRAIT.c.id, TRAIT.c.name, TRAIT.c.created_at,
            TRAIT.c.updated_at)).all()
        self.trait_names = {id_: name for id_, name, _, _ in rows}
        self.trait_ids = {name: id_ for id_, name, _, _ in rows}
        self.trait_changed = {id_: updated or created
                              for id_, _, created, updated in rows}
        self._sharing_trait = self.trait_ids.get(
            os_traits.MISC_SHARES_VIA_AGGREGATE)
        self.sharing = {provider.id for provider in self.providers.values()
                        if self._sharing_trait in provider.traits}
        self._drop_summaries()     # they show class and trait names
        self._shared_roots = {}

    def _load_providers(self, conn, ids=None):
        """Read the providers ``ids`` (None: all) and put them in place
        of what was known of them."""
        def only(column):
            return () if ids is None else (providers_core.ids_in(
                conn, column, ids),)

        if ids is None:
            self._empty()
            self._load_names(conn)
        else:
            before = self._placement(ids)
            for provider_id in ids:
                self._forget(provider_id)
        found = {}
        for (id_, uuid, parent, root, name, generation, created,
             updated) in conn.execute(
                sa.select(RP.c.id, RP.c.uuid, RP.c.parent_provider_id,
                          tables.root_of(RP), RP.c.name,
                          RP.c.generation, RP.c.created_at,
                          RP.c.updated_at)
                .where(*only(RP.c.id))):
            found[id_] = Provider(id_, uuid, parent, root, name, generation,
                                  updated or created)
        # Lists while reading, not sets or dicts: at 100,000 providers a
        # set or dict each, alive at once, made a starting worker's peak.
        inventories = collections.defaultdict(list)
        used = {}
        for provider_id, class_id, amount in conn.execute(
                sa.select(ALLOC.c.resource_provider_id,
                          ALLOC.c.resource_class_id,
                          sa.func.sum(ALLOC.c.used))
                .where(*only(ALLOC.c.resource_provider_id))
                .group_by(ALLOC.c.resource_provider_id,
                          ALLOC.c.resource_class_id)):
            used[provider_id, class_id] = int(amount or 0)
        for (provider_id, class_id, *record) in conn.execute(
                sa.select(INV.c.resource_provider_id,
                          INV.c.resource_class_id,
                          *inventory_storage.FIELD_COLUMNS)
                .where(*only(INV.c.resource_provider_id))):
            if provider_id in found:
                inventories[provider_id].append((class_id, self._record(
                    *record, used.get((provider_id, class_id), 0))))
        traits = collections.defaultdict(list)
        for provider_id, trait_id in conn.execute(
                sa.select(RP_TRAIT.c.resource_provider_id,
                          RP_TRAIT.c.trait_id)
                .where(*only(RP_TRAIT.c.resource_provider_id))):
            traits[provider_id].append(trait_id)
        aggregates = collections.defaultdict(list)
        aggregate_ids = self.aggregate_ids
        for provider_id, aggregate, aggregate_id in conn.execute(
                sa.select(RP_AGG.c.resource_provider_id, AGG.c.uuid,
                          AGG.c.id)
                .select_from(AGGREGATE_MEMBERSHIPS)
                .where(*only(RP_AGG.c.resource_provider_id))):
            aggregates[provider_id].append(self._shared(aggregate))
            aggregate_ids[aggregate] = aggregate_id
        for provider_id, provider in found.items():
            provider.inventory = self._shared_inventory(
                inventories.pop(provider_id, ()))
            provider.traits = self._shared(
                frozenset(traits.pop(provider_id, ())))
            provider.aggregates = self._shared(
                frozenset(aggregates.pop(provider_id, ())))
            self._add(provider, tree=ids is not None)
        if ids is None:
            self._trees_whole(found)
        else:
            self._trees_settled()
        if ids is None or before != self._placement(ids):
            # Providers came or went, moved between trees or aggregates,
            # or started or stopped sharing.
            self._ordered = self._roots = None
            self._shared_roots = {}

    def _record(self, *values):
        """The Inventory of ``values``, shared with every provider that
        has the same."""
        record = self._records.get(values)
        if record is None:
            record = self._records[values] = Inventory(*values)
        return record

    def _shared_inventory(self, records):
        """The _Inventories of ``records`` ((class id, Inventory) pairs),
        shared with every provider that has the same."""
        if not records:
            return _NO_INVENTORY
        key = tuple(sorted(records))
        shared = self._inventories.get(key)
        if shared is None:
            shared = self._inventories[key] = _Inventories(key)
        return shared

    def _shared(self, value):
        """``value`` (a set or a uuid), or the equal one already kept."""
        return self._sets.setdefault(value, value)

    def _placement(self, ids):
        """{id: (root, aggregates, sharing)} for the providers of ``ids``
        known: what the sorted ids and the shared roots depend on."""
        providers, sharing = self.providers, self.sharing
        return {id_: (providers[id_].root, providers[id_].aggregates,
                      id_ in sharing)
                for id_ in ids if id_ in providers}

    def with_inventories(self, inventories):
        """A copy of the state as it would be were the providers of
        ``inventories`` ({provider id: {class id: (total, reserved,
        min_unit, max_unit, step_size, allocation_ratio)}}, each a whole
        inventory) to have those, usage unchanged: what the audit's
        what-if searches.  The copy shares everything else with this
        state, so it is read under this state's lock and then dropped;
        it is never refreshed."""
        copy = object.__new__(State)
        copy.__dict__.update(self.__dict__)
        copy.providers = dict(self.providers)
        copy.class_members = collections.defaultdict(
            set, self.class_members)
        copy._summaries_kept = self.SUMMARIES_KEPT  # keep none on copies
        for provider_id, records in inventories.items():
            current = self.providers[provider_id]
            provider = Provider(current.id, current.uuid, current.parent,
                                current.root, current.name,
                                current.generation, current.changed_at)
            provider.traits = current.traits
            provider.aggregates = current.aggregates
            provider.inventory = _Inventories(sorted(
                (class_id, Inventory(*fields, _used(current, class_id)))
                for class_id, fields in records.items()))
            for class_id in set(current.inventory) ^ set(records):
                members = set(copy.class_members.get(class_id, ()))
                members.symmetric_difference_update((provider_id,))
                copy.class_members[class_id] = members
            copy.providers[provider_id] = provider
        return copy

    def is_at(self, summary):
        """Whether the state is as of ``summary`` (``Position.summary``)."""
        return (self.position is not None
                and self.position.summary() == summary)

    def refresh(self, conn):
        """Bring the state up to the database's latest committed change;
        (whether that meant reading it whole, how many providers it
        read)."""
        current = changes.current(conn)
        if self.is_at(current.summary()):
            return False, 0
        # None when new, too far behind, or on another database.
        changed = changes.changed_between(conn, self.position, current)
        if changed is not None:
            changed = changes.split(changed)[0]     # projects: not here
        whole = (changed is None or changes.EVERYTHING in changed
                 or len(changed) > _PARTIAL_LIMIT)
        if whole:
            self._load_providers(conn)
        else:
            if changes.NAMES in changed:
                self._load_names(conn)
            changed.discard(changes.NAMES)
            if changed:
                self._load_providers(conn, changed)
        self.position = current
        return whole, len(self.providers) if whole else len(changed)


def _used(provider, class_id):
    record = provider.inventory.get(class_id)
    return record.used if record is not None else 0


def _unindex(index, keys, provider_id):
    for key in keys:
        members = index[key]
        members.discard(provider_id)
        if not members:
            del index[key]


class Snapshot:
    """One process's state of one database."""

    def __init__(self, db):
        # Weakly: the registry below is keyed weakly by ``db``, and a
        # strong reference from its value would keep both alive for ever
        # (a test suite making a database per test would never free one).
        self._db = weakref.ref(db)
        self.state = State()
        self.lock = threading.Lock()
        # Called (with no arguments) after the state was read whole, or
        # after many providers were read again since the last call: what
        # was read is long-lived (placement-api freezes it).
        self.after_large_read = None
        self._read_since = 0
        self._registration = api_processes.Registration(version.release())

    @contextlib.contextmanager
    def fresh(self):
        """The state as of now, for the length of the ``with`` block."""
        self._registration.report(self._db())
        with self.lock:
            try:
                whole, read = self._refresh(self._db())
            except BaseException:
                # A refresh cut short may have left it half applied.
                self.state = State()
                raise
            self._read_since += read
            if self.after_large_read is not None and (
                    whole or self._read_since >= max(
                        _LARGE_READ, len(self.state.providers) // 10)):
                self._read_since = 0
                self.after_large_read()
            yield self.state

    def _refresh(self, db):
        """(whole, read) as ``State.refresh`` says; the common case,
        nothing changed, costs one statement outside any transaction."""
        summary = changes.summary_outside_transaction(db)
        if summary is not None and self.state.is_at(summary):
            return False, 0
        return db.read(self.state.refresh)

    def warm(self):
        """Read the state now (a worker starting), so that no request
        waits for it; a failure leaves that to the first request."""
        try:
            with self.fresh():
                pass
        except Exception as error:  # noqa: BLE001 - only a head start
            LOG.warning('Allocation-candidate state not read at start: %s',
                        error)


_snapshots = per_process.PerDatabase(Snapshot)


def of(db):
    """The process's Snapshot of the database ``db`` serves (a forked
    worker's own: see ``per_process``)."""
    return _snapshots.of(db)
