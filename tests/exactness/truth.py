"""What the database holds, read with plain SQL of the test's own (none of
the service's state code), and the answers that follow from it.

``read(engine)`` gives a ``Truth``: every provider with its place in a
tree, inventories, usage, traits and aggregates, and every consumer with
its allocations.  From it: the bodies of the provider reads, project
usages, the overview's totals and a ``candidates_reference.Deployment``
for the allocation-candidates reference.
"""

import collections
import dataclasses

import sqlalchemy as sa

from placement.storage import tables as t
from tests.functional import candidates_reference as ref


@dataclasses.dataclass
class Truth:
    providers: list     # dicts in id order: uuid, name, generation,
                        # parent_provider_uuid, root_provider_uuid
    inventories: dict   # uuid -> {class: record dict}
    used: collections.Counter   # (uuid, class) -> amount
    traits: dict        # uuid -> set of names
    aggregates: dict    # uuid -> set of uuids
    consumers: dict     # uuid -> {project, user, type, generation,
                        #          allocations: {rp uuid: {class: amount}}}
    trait_names: set
    class_names: set

    def provider(self, uuid):
        return next(p for p in self.providers if p['uuid'] == uuid)

    def uuids(self):
        return [p['uuid'] for p in self.providers]

    def subtree(self, uuid):
        """``uuid`` and every provider below it."""
        below = {uuid}
        grew = True
        while grew:
            more = {p['uuid'] for p in self.providers
                    if p['parent_provider_uuid'] in below} - below
            below |= more
            grew = bool(more)
        return below

    def children(self, uuid):
        return [p['uuid'] for p in self.providers
                if p['parent_provider_uuid'] == uuid]

    def generation(self, uuid):
        return self.provider(uuid)['generation']

    # -- answers ----------------------------------------------------------

    def usages(self, uuid):
        return {rc: self.used[uuid, rc]
                for rc in self.inventories.get(uuid, {})}

    def provider_allocations(self, uuid):
        return {consumer_uuid: {'resources': consumer['allocations'][uuid],
                                'consumer_generation': consumer['generation']}
                for consumer_uuid, consumer in self.consumers.items()
                if uuid in consumer['allocations']}

    def consumer_allocations(self, uuid):
        """The body of ``GET /allocations/{uuid}`` at 1.38 and after."""
        consumer = self.consumers.get(uuid)
        if consumer is None or not consumer['allocations']:
            return {'allocations': {}}
        return {'allocations': {
                    rp: {'resources': resources,
                         'generation': self.generation(rp)}
                    for rp, resources in consumer['allocations'].items()},
                'project_id': consumer['project'],
                'user_id': consumer['user'],
                'consumer_generation': consumer['generation'],
                'consumer_type': consumer['type'] or 'UNKNOWN'}

    def project_usages(self, project, user=None, consumer_type=None):
        sums = collections.Counter()
        for consumer in self.consumers.values():
            if consumer['project'] != project or (
                    user is not None and consumer['user'] != user) or (
                    consumer_type is not None
                    and consumer['type'] != consumer_type):
                continue
            for resources in consumer['allocations'].values():
                sums.update(resources)
        return dict(sums)

    def capacity(self, uuid, rc):
        record = self.inventories[uuid][rc]
        return int((record['total'] - record['reserved'])
                   * record['allocation_ratio'])

    def overview_totals(self):
        """What ``GET /overview`` must count: providers, trees, sharing
        providers, and per class the summed capacity and usage."""
        classes = {}
        for uuid, records in self.inventories.items():
            for rc in records:
                sums = classes.setdefault(rc, {'capacity': 0, 'used': 0,
                                               'providers': 0})
                sums['capacity'] += self.capacity(uuid, rc)
                sums['used'] += self.used[uuid, rc]
                sums['providers'] += 1
        return {
            'providers': len(self.providers),
            'trees': sum(1 for p in self.providers
                         if p['parent_provider_uuid'] is None),
            'sharing_providers': sum(
                1 for names in self.traits.values()
                if ref.SHARING_TRAIT in names),
            'resource_classes': classes,
        }

    def deployment(self):
        """The cloud as the candidates reference models it (parents
        before children)."""
        placed, ordered = set(), []
        waiting = list(self.providers)
        while waiting:
            for provider in list(waiting):
                parent = provider['parent_provider_uuid']
                if parent is None or parent in placed:
                    ordered.append(provider)
                    placed.add(provider['uuid'])
                    waiting.remove(provider)
        return ref.Deployment(
            [ref.Provider(
                p['name'], p['uuid'], p['parent_provider_uuid'],
                {rc: ref.Inventory(**record) for rc, record in
                 self.inventories.get(p['uuid'], {}).items()},
                frozenset(self.traits.get(p['uuid'], ())),
                frozenset(self.aggregates.get(p['uuid'], ())))
             for p in ordered],
            [consumer['allocations']
             for consumer in self.consumers.values()])


def read(engine):
    """The Truth of the database ``engine`` connects to, in one
    transaction."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(
            t.RP.c.id, t.RP.c.uuid, t.RP.c.name, t.RP.c.generation,
            t.RP.c.parent_provider_id, t.root_of(t.RP)).order_by(
                t.RP.c.id)).all()
        uuid_of = {row[0]: row[1] for row in rows}
        providers = [{'uuid': uuid, 'name': name, 'generation': generation,
                      'parent_provider_uuid': uuid_of.get(parent),
                      'root_provider_uuid': uuid_of[root]}
                     for _, uuid, name, generation, parent, root in rows]
        inventories = collections.defaultdict(dict)
        for row in conn.execute(sa.select(
                t.RP.c.uuid, t.RC.c.name, t.INV.c.total, t.INV.c.reserved,
                t.INV.c.min_unit, t.INV.c.max_unit, t.INV.c.step_size,
                t.INV.c.allocation_ratio).select_from(
                    t.INV_WITH_CLASS.join(
                        t.RP, t.RP.c.id == t.INV.c.resource_provider_id))):
            inventories[row[0]][row[1]] = {
                'total': row[2], 'reserved': row[3], 'min_unit': row[4],
                'max_unit': row[5], 'step_size': row[6],
                'allocation_ratio': row[7]}
        consumers = {}
        for uuid, project, user, kind, generation in conn.execute(
                sa.select(t.CONSUMER.c.uuid, t.PROJECT.c.external_id,
                          t.USER.c.external_id, t.CONSUMER_TYPE.c.name,
                          t.CONSUMER.c.generation).select_from(
                              t.with_consumer_names(t.CONSUMER))):
            consumers[uuid] = {'project': project, 'user': user,
                               'type': kind, 'generation': generation,
                               'allocations': {}}
        used = collections.Counter()
        for consumer, rp, rc, amount in conn.execute(sa.select(
                t.ALLOC.c.consumer_id, t.RP.c.uuid, t.RC.c.name,
                t.ALLOC.c.used).select_from(
                    t.ALLOC_WITH_PROVIDER_AND_CLASS)):
            used[rp, rc] += amount
            held = consumers[consumer]['allocations'].setdefault(rp, {})
            held[rc] = held.get(rc, 0) + amount
        traits = collections.defaultdict(set)
        for rp, name in conn.execute(sa.select(
                t.RP.c.uuid, t.TRAIT.c.name).select_from(t.RP_TRAIT.join(
                    t.RP, t.RP.c.id == t.RP_TRAIT.c.resource_provider_id)
                .join(t.TRAIT, t.TRAIT.c.id == t.RP_TRAIT.c.trait_id))):
            traits[rp].add(name)
        aggregates = collections.defaultdict(set)
        for rp, aggregate in conn.execute(sa.select(
                t.RP.c.uuid, t.AGG.c.uuid).select_from(
                    t.AGGREGATE_MEMBERSHIPS.join(
                        t.RP, t.RP.c.id == t.RP_AGG.c.resource_provider_id))):
            aggregates[rp].add(aggregate)
        trait_names = set(conn.execute(sa.select(t.TRAIT.c.name)).scalars())
        class_names = set(conn.execute(sa.select(t.RC.c.name)).scalars())
    return Truth(providers, dict(inventories), used, dict(traits),
                 dict(aggregates), consumers, trait_names, class_names)
