"""Random writes through the API, each chosen from what the database holds
now (a ``truth.Truth``): providers made, moved between trees, renamed and
deleted; inventories, traits and aggregates set; allocations made,
swapped and removed; a reshape; classes and traits named and dropped;
and writes made behind the service's back, in SQL.

Many are meant to fail now and then (a stale generation, a tree made
into a loop, an inventory still in use, an allocation past capacity):
a failed write must change nothing.  ``Writer.next_write`` draws one
and returns a ``Write``; the caller sends it.
"""

import dataclasses
import uuid as uuidlib

import sqlalchemy as sa

from placement.storage import tables as t

CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_GPU')
TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'HW_CPU_X86_AVX2',
          'MISC_SHARES_VIA_AGGREGATE')
CONSUMER_TYPES = ('INSTANCE', 'MIGRATION')
MOST_PROVIDERS = 14
MOST_CONSUMERS = 8


@dataclasses.dataclass
class Write:
    """One write: sent through the API (``method``, ``path``, ``body``)
    or, with ``sql``, run on the database directly."""
    what: str
    method: str = None
    path: str = None
    body: dict = None
    sql: object = None
    headers: dict = None

    def __str__(self):
        return self.what


class Writer:
    """Draws writes with ``rng``; the names it uses (aggregates,
    projects, users, consumers) are drawn once from it too, so a seed
    replays the same history."""

    def __init__(self, rng):
        self.rng = rng
        self.aggregates = [self.uuid() for _ in range(3)]
        self.projects = [self.uuid() for _ in range(2)]
        self.users = [self.uuid() for _ in range(2)]
        self.consumers = [self.uuid() for _ in range(MOST_CONSUMERS)]
        self._named = 0

    def uuid(self):
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def setup(self):
        """The writes every history starts with: its custom class and
        traits."""
        return [Write('class CUSTOM_GPU', 'PUT',
                      '/resource_classes/CUSTOM_GPU')] + [
            Write('trait ' + name, 'PUT', '/traits/' + name)
            for name in TRAITS if name.startswith('CUSTOM_')]

    def next_write(self, truth):
        kinds = [(self._create_provider, 4 if len(truth.providers)
                  < MOST_PROVIDERS else 0)]
        if truth.providers:
            kinds += [(self._reparent, 1), (self._rename, 0.5),
                      (self._delete_provider, 0.8),
                      (self._put_inventories, 3), (self._put_inventory, 1),
                      (self._delete_inventories, 0.4),
                      (self._put_traits, 1.5), (self._put_aggregates, 1.5),
                      (self._allocate, 4), (self._post_allocations, 1),
                      (self._delete_allocations, 1), (self._reshape, 0.7),
                      (self._foreign_write, 0.6), (self._names, 0.4)]
        makers, weights = zip(*kinds)
        return self.rng.choices(makers, weights)[0](truth)

    # -- providers --------------------------------------------------------

    def _create_provider(self, truth):
        self._named += 1
        body = {'name': 'rp-%d' % self._named, 'uuid': self.uuid()}
        if truth.providers and self.rng.random() < 0.5:
            body['parent_provider_uuid'] = self._any(truth)
        return Write('create %s under %s' % (
            body['name'], body.get('parent_provider_uuid')), 'POST',
            '/resource_providers', body)

    def _reparent(self, truth):
        """A move to another tree, to be a root, or (refused) under its
        own subtree."""
        uuid = self._any(truth)
        target = self.rng.choice([None] + truth.uuids())
        provider = truth.provider(uuid)
        return Write('move %s under %s' % (uuid, target), 'PUT',
                     '/resource_providers/' + uuid,
                     {'name': provider['name'],
                      'parent_provider_uuid': target})

    def _rename(self, truth):
        uuid = self._any(truth)
        self._named += 1
        # Now and then the name of another provider: refused.
        name = (self.rng.choice(truth.providers)['name']
                if self.rng.random() < 0.2 else 'renamed-%d' % self._named)
        return Write('rename %s %s' % (uuid, name), 'PUT',
                     '/resource_providers/' + uuid,
                     {'name': name, 'parent_provider_uuid':
                      truth.provider(uuid)['parent_provider_uuid']})

    def _delete_provider(self, truth):
        uuid = self._any(truth)
        return Write('delete ' + uuid, 'DELETE', '/resource_providers/' + uuid)

    # -- inventories, traits, aggregates ----------------------------------

    def _record(self):
        rng = self.rng
        total = rng.choice((1, 2, 4, 8, 16, 64, 1024))
        record = {'total': total,
                  'reserved': rng.choice((0, 0, 0, 1, total)),
                  'min_unit': rng.choice((1, 1, 1, 2)),
                  'max_unit': rng.choice((total, total, max(1, total // 2))),
                  'step_size': rng.choice((1, 1, 1, 2)),
                  'allocation_ratio': rng.choice((1.0, 1.0, 1.5, 16.0, 0.5))}
        if record['min_unit'] > record['max_unit']:
            record['min_unit'] = 1
        return record

    def _put_inventories(self, truth):
        uuid = self._any(truth)
        chosen = self.rng.sample(CLASSES, self.rng.randint(0, 3))
        return Write('inventories of %s: %s' % (uuid, chosen), 'PUT',
                     '/resource_providers/%s/inventories' % uuid,
                     {'resource_provider_generation': self._generation(
                         truth, uuid),
                      'inventories': {rc: self._record() for rc in chosen}})

    def _put_inventory(self, truth):
        uuid = self._any(truth)
        rc = self.rng.choice(CLASSES)
        body = dict(self._record(), resource_provider_generation=(
            self._generation(truth, uuid)))
        return Write('inventory %s of %s' % (rc, uuid), 'PUT',
                     '/resource_providers/%s/inventories/%s' % (uuid, rc),
                     body)

    def _delete_inventories(self, truth):
        uuid = self._any(truth)
        return Write('no inventory on ' + uuid, 'DELETE',
                     '/resource_providers/%s/inventories' % uuid)

    def _put_traits(self, truth):
        uuid = self._any(truth)
        names = sorted(self.rng.sample(TRAITS, self.rng.randint(0, 3)))
        return Write('traits of %s: %s' % (uuid, names), 'PUT',
                     '/resource_providers/%s/traits' % uuid,
                     {'traits': names, 'resource_provider_generation':
                      self._generation(truth, uuid)})

    def _put_aggregates(self, truth):
        uuid = self._any(truth)
        chosen = self.rng.sample(self.aggregates, self.rng.randint(0, 2))
        return Write('aggregates of %s: %s' % (uuid, chosen), 'PUT',
                     '/resource_providers/%s/aggregates' % uuid,
                     {'aggregates': chosen, 'resource_provider_generation':
                      self._generation(truth, uuid)})

    # -- allocations ------------------------------------------------------

    def _allocations(self, truth):
        """{provider: {'resources': ...}} over one or two providers with
        inventory; amounts that mostly fit."""
        holders = [uuid for uuid in truth.uuids()
                   if truth.inventories.get(uuid)]
        if not holders:
            return {}
        allocations = {}
        for uuid in self.rng.sample(holders,
                                    min(len(holders), self.rng.randint(1, 2))):
            classes = sorted(truth.inventories[uuid])
            chosen = self.rng.sample(classes,
                                     self.rng.randint(1, len(classes)))
            allocations[uuid] = {'resources': {
                rc: self.rng.choice((1, 1, 2, 4, 8)) for rc in chosen}}
        return allocations

    def _consumer_body(self, truth, consumer, allocations):
        held = truth.consumers.get(consumer)
        return {'allocations': allocations,
                'project_id': held['project'] if held else self.rng.choice(
                    self.projects),
                'user_id': held['user'] if held else self.rng.choice(
                    self.users),
                'consumer_generation': held['generation'] if held else None,
                'consumer_type': self.rng.choice(CONSUMER_TYPES)}

    def _allocate(self, truth):
        consumer = self.rng.choice(self.consumers)
        allocations = self._allocations(truth)
        return Write('allocate %s: %s' % (consumer, allocations), 'PUT',
                     '/allocations/' + consumer,
                     self._consumer_body(truth, consumer, allocations))

    def _post_allocations(self, truth):
        """Two consumers at once: one moved (a migration's swap), one
        perhaps emptied."""
        first, second = self.rng.sample(self.consumers, 2)
        body = {first: self._consumer_body(truth, first,
                                           self._allocations(truth)),
                second: self._consumer_body(
                    truth, second, self._allocations(truth)
                    if self.rng.random() < 0.6 else {})}
        return Write('allocate %s and %s' % (first, second), 'POST',
                     '/allocations', body)

    def _delete_allocations(self, truth):
        consumer = self.rng.choice(self.consumers)
        return Write('free ' + consumer, 'DELETE', '/allocations/' + consumer)

    def _reshape(self, truth):
        """A provider's inventory of one class moved to a child of it,
        with every allocation of it (a compute node's VCPU moving to its
        NUMA cell, as nova's reshaper does)."""
        moves = [(uuid, child, rc) for uuid in truth.uuids()
                 for child in truth.children(uuid)
                 for rc in truth.inventories.get(uuid, {})
                 if rc not in truth.inventories.get(child, {})]
        if not moves:
            return self._put_inventories(truth)
        source, target, rc = self.rng.choice(moves)
        inventories = {
            source: {'resource_provider_generation': truth.generation(
                source), 'inventories': {
                    name: record for name, record in
                    truth.inventories[source].items() if name != rc}},
            target: {'resource_provider_generation': truth.generation(
                target), 'inventories': dict(
                    truth.inventories.get(target, {}),
                    **{rc: truth.inventories[source][rc]})}}
        allocations = {}
        for consumer, held in truth.consumers.items():
            if rc not in held['allocations'].get(source, {}):
                continue
            moved = {uuid: dict(resources)
                     for uuid, resources in held['allocations'].items()}
            amount = moved[source].pop(rc)
            if not moved[source]:
                del moved[source]
            moved.setdefault(target, {})[rc] = (
                moved.get(target, {}).get(rc, 0) + amount)
            allocations[consumer] = {
                'allocations': {uuid: {'resources': resources}
                                for uuid, resources in moved.items()},
                'project_id': held['project'], 'user_id': held['user'],
                'consumer_generation': held['generation'],
                'consumer_type': held['type'] or 'INSTANCE'}
        # The reshaper is the service's (nova-compute's) to call.
        return Write('reshape %s of %s to %s' % (rc, source, target),
                     'POST', '/reshaper',
                     {'inventories': inventories, 'allocations': allocations},
                     headers={'X-Roles': 'admin,service'})

    # -- names, and writes behind the service's back ----------------------

    def _names(self, truth):
        """A custom trait or class named, or one nobody uses dropped (or
        one in use: refused)."""
        kind, names = self.rng.choice((
            ('traits', ['CUSTOM_EXTRA_T', 'CUSTOM_A']),
            ('resource_classes', ['CUSTOM_EXTRA_C', 'CUSTOM_GPU'])))
        name = self.rng.choice(names)
        method = self.rng.choice(('PUT', 'DELETE'))
        return Write('%s %s %s' % (method, kind, name), method,
                     '/%s/%s' % (kind, name))

    def _foreign_write(self, truth):
        """SQL run by hand, as an operator might: an inventory's total
        changed, or a trait taken off a provider."""
        uuid = self._any(truth)
        provider = sa.select(t.RP.c.id).where(t.RP.c.uuid == uuid)
        if truth.inventories.get(uuid) and self.rng.random() < 0.6:
            total = self.rng.choice((1, 3, 32))
            statement = t.INV.update().where(
                t.INV.c.resource_provider_id == provider.scalar_subquery()
            ).values(total=total, max_unit=total, min_unit=1, step_size=1,
                     reserved=0)
            return Write('SQL: every total of %s to %d' % (uuid, total),
                         sql=statement)
        statement = t.RP_TRAIT.delete().where(
            t.RP_TRAIT.c.resource_provider_id == provider.scalar_subquery())
        return Write('SQL: no traits on ' + uuid, sql=statement)

    # -- helpers ----------------------------------------------------------

    def _any(self, truth):
        return self.rng.choice(truth.uuids())

    def _generation(self, truth, uuid):
        """The provider's generation, and now and then a stale one."""
        generation = truth.generation(uuid)
        return generation - 1 if (generation and self.rng.random() < 0.08) \
            else generation
