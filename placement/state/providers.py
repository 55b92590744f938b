"""The in-memory state's providers, and the lookups everything reads
them by.

A ``State`` holds every provider with its place in a tree, inventories
and what is allocated of them, traits and aggregates, and the names of
resource classes and traits, indexed the ways the search, the listings,
the audit and the overview look them up.  It is read from the database
whole, or a few providers again (``read``: the rows come from
``storage.state_rows``), and changed by nothing else: ``snapshot``
decides what to read, from the change log, under its lock.

Equal values are kept once: providers with the same inventory record
and usage share one ``Inventory``, the same records one mapping, the
same traits or aggregates one frozenset.  Most compute nodes of a cloud
are alike, and at 100,000 providers a copy each was most of the memory.
"""

import bisect
import collections
import copy as copy_module
import sys
import weakref

import os_traits

from placement import inventory_rules
from placement.storage import state_rows


class Inventory:
    """One inventory record and what is allocated against it.

    Never changed once made (a provider whose inventory or usage changes
    is read again), so providers with the same record and usage share
    one object: most compute nodes of a cloud are alike, and at 100,000
    providers a record each was a third of the state's memory."""
    __slots__ = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio', 'used', 'capacity', 'free',
                 '__weakref__')

    def __init__(self, total, reserved, min_unit, max_unit, step_size,
                 allocation_ratio, used):
        # The record's fields in ``inventory_rules.FIELDS`` order.
        self.total = total
        self.reserved = reserved
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        self.allocation_ratio = allocation_ratio
        self.capacity = inventory_rules.capacity(total, reserved,
                                                 allocation_ratio)
        self.used = used
        self.free = self.capacity - used

    def fields(self):
        """The record's fields, in ``inventory_rules.FIELDS`` order."""
        return (self.total, self.reserved, self.min_unit, self.max_unit,
                self.step_size, self.allocation_ratio)


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
    Nothing outside changes them; ``position`` is where the change log
    stood when the state was read (``snapshot`` keeps it)."""

    # Summaries kept on providers at most (about 1 KB each: at 100,000
    # providers an unbounded answer would otherwise keep 120 MB in every
    # worker that gave it).
    SUMMARIES_KEPT = 20000
    # Providers come or go in a catch-up, at most, for which the sorted
    # ids and roots are changed in place rather than sorted again (each
    # change moves the tail of a list; sorting again takes a reference
    # to every id, and so copies each page of them into a forked
    # worker: see work_out_lookups).
    IN_PLACE_CHANGES = 256

    def __init__(self):
        self._empty()

    def _empty(self):
        """Know nothing: what a state is made with, and what reading it
        whole starts from."""
        self.position = None    # changes.Position the state is as of
        self.providers = {}                      # id -> Provider
        self._by_uuid = {}                        # uuid -> id
        # Root id -> the tree's ids, ascending: a tuple, not a set (most
        # trees of a cloud are a compute node alone, and 100,000 sets of
        # one took 25 MB); changed through _tree while providers are read.
        self._trees = {}
        self._trees_read = {}   # root id -> ids, while providers are read
        self._aggregate_members = collections.defaultdict(set)  # uuid -> ids
        # Who has inventory of a class, who holds a trait: a request
        # group starts from these instead of every provider.
        self._class_members = collections.defaultdict(set)  # class -> ids
        self._trait_members = collections.defaultdict(set)  # trait -> ids
        self._summaries_kept = 0    # in all providers' ``summaries``
        self._summarized = set()    # ids of the providers keeping some
        # Sharing provider id -> (roots it shares with, as a frozenset and
        # sorted), kept until aggregates, trees or sharing change.
        self._shared_roots = {}
        # Equal values the providers share instead of a copy each.
        self._records = weakref.WeakValueDictionary()   # Inventory
        self._inventories = weakref.WeakValueDictionary()  # _Inventories
        # Trait id and aggregate uuid sets, by their sorted members (a key
        # apart from the set, so that it goes when no provider has it).
        self._sets = weakref.WeakValueDictionary()
        self.sharing = set()
        self._class_ids = {}
        self._class_names = {}
        self._trait_ids = {}
        self._trait_names = {}
        self._trait_changed = {}     # trait id -> updated_at, else created_at
        # Aggregate uuid -> its id: a provider's aggregates are listed in
        # id order, as SQL lists them.
        self._aggregate_ids = {}
        self._sharing_trait = None
        self._ordered = None
        self._roots = None

    # -- lookups --------------------------------------------------------

    def provider(self, provider_id):
        """The Provider of ``provider_id``, which the state holds."""
        return self.providers[provider_id]

    def provider_by_uuid(self, uuid):
        """The Provider ``uuid``, or None when the state has none."""
        provider_id = self._by_uuid.get(uuid)
        return None if provider_id is None else self.providers[provider_id]

    def class_id(self, name):
        """The id of the resource class ``name``, or None."""
        return self._class_ids.get(name)

    def class_name(self, class_id):
        return self._class_names[class_id]

    def trait_id(self, name):
        """The id of the trait ``name``, or None."""
        return self._trait_ids.get(name)

    def trait_name(self, trait_id):
        return self._trait_names[trait_id]

    def trait_changed_at(self, trait_id):
        """When the trait was last changed (else created), or None."""
        return self._trait_changed.get(trait_id)

    def aggregate_id(self, uuid):
        """The internal id of a known aggregate: the order SQL lists a
        provider's aggregates in."""
        return self._aggregate_ids[uuid]

    def holding_class(self, class_id):
        """The ids of the providers with inventory of the class (not to
        be changed)."""
        return self._class_members.get(class_id, _NOBODY)

    def holding_trait(self, trait_id):
        """The ids of the providers with the trait (not to be
        changed)."""
        return self._trait_members.get(trait_id, _NOBODY)

    def in_aggregate(self, uuid):
        """The ids of the providers in the aggregate (not to be
        changed); empty for one the state does not know."""
        return self._aggregate_members.get(uuid, _NOBODY)

    def ordered(self):
        """Every provider id, ascending."""
        if self._ordered is None:
            self._ordered = sorted(self.providers)
        return self._ordered

    def roots(self):
        """Every root id, ascending."""
        if self._roots is None:
            self._roots = sorted(self._trees)
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
                for member in self._aggregate_members[aggregate]:
                    roots.add(providers[member].root)
            roots.discard(provider.root)
            found = self._shared_roots[provider.id] = (
                frozenset(roots), tuple(sorted(roots)))
        return found

    def work_out_lookups(self):
        """Work out now what the lookups above otherwise work out at
        their first use after a change: the ordered ids and roots, and
        every sharing provider's roots.  A process about to fork its
        workers calls it, so that they share the result instead of each
        making its own; a sharing provider's roots alone walk every
        provider of its aggregates, which copied every provider's page
        into each worker at its first request (18 of a worker's 44 MB of
        copied pages at 100,000 compute nodes, with the ids) and cost
        that request 24 ms."""
        self.ordered()
        self.roots()
        providers = self.providers
        for provider_id in self.sharing:
            self.shared_roots(providers[provider_id])

    def members(self, root):
        """The ids of the tree rooted at ``root``, ascending."""
        return self._trees.get(root, ())

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
            self._summarized.add(provider.id)
        provider.summaries[shape] = summary
        self._summaries_kept += 1

    def _drop_summaries(self):
        """Drop every kept summary, writing to the providers that keep
        some only (a write to every provider would copy each page of
        them into a forked worker)."""
        providers = self.providers
        for provider_id in self._summarized:
            providers[provider_id].summaries = None
        self._summarized = set()
        self._summaries_kept = 0

    # -- changes --------------------------------------------------------

    def _forget(self, provider_id):
        provider = self.providers.pop(provider_id, None)
        if provider is None:
            return
        self._summaries_kept -= len(provider.summaries or ())
        self._summarized.discard(provider_id)
        del self._by_uuid[provider.uuid]
        self._tree(provider.root).discard(provider_id)
        for emptied in _unindex(self._aggregate_members, provider.aggregates,
                                provider_id):
            del self._aggregate_ids[emptied]    # an aggregate nobody is in
        _unindex(self._class_members, provider.inventory, provider_id)
        _unindex(self._trait_members, provider.traits, provider_id)
        self.sharing.discard(provider_id)

    def _add(self, provider, tree=True):
        """Index ``provider``; in its tree too unless ``tree`` is false
        (a whole read makes every tree at the end: ``_trees_whole``)."""
        self.providers[provider.id] = provider
        self._by_uuid[provider.uuid] = provider.id
        if tree:
            self._tree(provider.root).add(provider.id)
        for aggregate in provider.aggregates:
            self._aggregate_members[aggregate].add(provider.id)
        for class_id in provider.inventory:
            self._class_members[class_id].add(provider.id)
        for trait_id in provider.traits:
            self._trait_members[trait_id].add(provider.id)
        if self._sharing_trait in provider.traits:
            self.sharing.add(provider.id)

    def _tree(self, root):
        """The members of the tree of ``root`` as a set to change while
        providers are read; ``_trees_settled`` puts them back."""
        members = self._trees_read.get(root)
        if members is None:
            members = self._trees_read[root] = set(self._trees.get(root, ()))
        return members

    def _trees_whole(self, providers):
        """Every tree, from ``providers`` ({id: Provider}, all of them)."""
        members = collections.defaultdict(list)
        for id_, provider in providers.items():
            members[provider.root].append(id_)
        self._trees = {root: tuple(sorted(ids))
                      for root, ids in members.items()}

    def _trees_settled(self):
        """Put back the trees changed while providers were read; (the
        roots that came, those that went)."""
        came, went = [], []
        for root, members in self._trees_read.items():
            if members:
                if root not in self._trees:
                    came.append(root)
                self._trees[root] = tuple(sorted(members))
            elif self._trees.pop(root, None) is not None:
                went.append(root)
        self._trees_read = {}
        return came, went

    def _load_names(self, conn):
        rows = state_rows.classes(conn)
        self._class_names = dict(rows)
        self._class_ids = {name: id_ for id_, name in rows}
        rows = state_rows.traits(conn)
        self._trait_names = {id_: name for id_, name, _, _ in rows}
        self._trait_ids = {name: id_ for id_, name, _, _ in rows}
        self._trait_changed = {id_: updated or created
                               for id_, _, created, updated in rows}
        self._sharing_trait = self._trait_ids.get(
            os_traits.MISC_SHARES_VIA_AGGREGATE)
        # From the trait's holders, not by looking at every provider
        # (which would copy each page of them into a forked worker).
        self.sharing = set(self._trait_members.get(self._sharing_trait,
                                                   ()))
        self._drop_summaries()     # they show class and trait names
        # The sharing providers' roots stand: a provider starts or stops
        # sharing only by its traits, and its read then forgets them
        # (_forget_shared_roots).

    def read(self, conn, ids=None, names=False):
        """Read from ``conn`` the providers ``ids`` again (None: read
        everything, names included), and with ``names`` the resource
        class and trait names, in place of what was known of them."""
        if ids is None:
            self._empty()
            names = True
        if names:
            self._load_names(conn)
        if ids is None or ids:
            self._load_providers(conn, ids)

    def _load_providers(self, conn, ids=None):
        """Read the providers ``ids`` (None: all) and put them in place
        of what was known of them."""
        if ids is not None:
            before = self._placement(ids)
            for provider_id in ids:
                self._forget(provider_id)
        found = {}
        for (id_, uuid, parent, root, name, generation, created,
             updated) in state_rows.providers(conn, ids):
            found[id_] = Provider(id_, uuid, parent, root, name, generation,
                                  updated or created)
        # Lists while reading, not sets or dicts: at 100,000 providers a
        # set or dict each, alive at once, made a starting worker's peak.
        inventories = collections.defaultdict(list)
        used = {}
        for provider_id, class_id, amount in state_rows.usage(conn, ids):
            used[provider_id, class_id] = int(amount or 0)
        for (provider_id, class_id, *record) in state_rows.inventories(
                conn, ids):
            if provider_id in found:
                inventories[provider_id].append((class_id, self._record(
                    *record, used.get((provider_id, class_id), 0))))
        traits = collections.defaultdict(list)
        for provider_id, trait_id in state_rows.provider_traits(conn, ids):
            traits[provider_id].append(trait_id)
        aggregates = collections.defaultdict(list)
        aggregate_ids = self._aggregate_ids
        for provider_id, aggregate, aggregate_id in state_rows.memberships(
                conn, ids):
            aggregates[provider_id].append(sys.intern(aggregate))
            aggregate_ids[aggregate] = aggregate_id
        for provider_id, provider in found.items():
            provider.inventory = self._shared_inventory(
                inventories.pop(provider_id, ()))
            provider.traits = self._shared(traits.pop(provider_id, ()))
            provider.aggregates = self._shared(
                aggregates.pop(provider_id, ()))
            self._add(provider, tree=ids is not None)
        if ids is None:
            self._trees_whole(found)
            return
        roots_came, roots_went = self._trees_settled()
        after = self._placement(ids)
        if before != after:
            # Providers came or went, moved between trees or aggregates,
            # or started or stopped sharing.
            self._ordered = _changed_in_place(
                self._ordered, before.keys() - after.keys(),
                after.keys() - before.keys(), self.IN_PLACE_CHANGES)
            self._roots = _changed_in_place(
                self._roots, roots_went, roots_came, self.IN_PLACE_CHANGES)
            self._forget_shared_roots(before, after)

    def _forget_shared_roots(self, before, after):
        """Forget the roots worked out for the sharing providers that
        changed, or whose aggregates a changed provider was or is in
        (``before`` and ``after``: ``_placement``); the others' still
        hold, and working them out again would walk every provider of
        their aggregates."""
        changed = {id_ for id_ in before.keys() | after.keys()
                   if before.get(id_) != after.get(id_)}
        aggregates = set()
        for id_ in changed:
            for placement in (before.get(id_), after.get(id_)):
                if placement is not None:
                    aggregates |= placement[1]
        providers = self.providers
        for sharing_id in list(self._shared_roots):
            if sharing_id in changed or not aggregates.isdisjoint(
                    providers[sharing_id].aggregates):
                del self._shared_roots[sharing_id]

    def _record(self, *values):
        """The Inventory of ``values``, shared with every provider that
        has the same."""
        return _kept(self._records, values, lambda key: Inventory(*key))

    def _shared_inventory(self, records):
        """The _Inventories of ``records`` ((class id, Inventory) pairs),
        shared with every provider that has the same."""
        if not records:
            return _NO_INVENTORY
        return _kept(self._inventories, tuple(sorted(records)),
                     _Inventories)

    def _shared(self, members):
        """The frozenset of ``members`` (trait ids or aggregate uuids),
        the equal one already kept if any: most providers have one of a
        few sets."""
        return _kept(self._sets, tuple(sorted(members)), frozenset)

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
        # Every field shared (the copy is read, never refreshed), but for
        # the two the changed inventories change: replaced, not altered.
        copy = copy_module.copy(self)
        copy.providers = dict(self.providers)
        copy._class_members = collections.defaultdict(
            set, self._class_members)
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
                members = set(copy._class_members.get(class_id, ()))
                members.symmetric_difference_update((provider_id,))
                copy._class_members[class_id] = members
            copy.providers[provider_id] = provider
        return copy


def _kept(table, key, make):
    """``table``'s value (kept weakly) for ``key``, else ``make(key)``
    kept there: equal values shared while anything holds one."""
    found = table.get(key)
    if found is None:
        found = table[key] = make(key)
    return found


def _used(provider, class_id):
    record = provider.inventory.get(class_id)
    return record.used if record is not None else 0


def _unindex(index, keys, provider_id):
    """Take ``provider_id`` out of ``index``'s entries of ``keys``; the
    keys left with no member, which go."""
    emptied = []
    for key in keys:
        members = index[key]
        members.discard(provider_id)
        if not members:
            del index[key]
            emptied.append(key)
    return emptied


def _changed_in_place(ordered, gone, came, most):
    """The sorted list ``ordered`` without the ids ``gone`` and with
    those that ``came``, changed in place; None (sorted again at its
    next use) when it is None or more than ``most`` changed."""
    if ordered is None or len(gone) + len(came) > most:
        return None
    for id_ in gone:
        del ordered[bisect.bisect_left(ordered, id_)]
    for id_ in came:
        bisect.insort(ordered, id_)
    return ordered
