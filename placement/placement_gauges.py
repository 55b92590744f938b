"""openstack-exporter's placement gauges, from the service itself.

openstack-exporter's placement collector (kolla-ansible's
``enable_prometheus_openstack_exporter``) lists every provider and then
asks each for its inventories, usages and allocations: 1 + 3N requests
on every scrape, 30,001 at 10,000 compute nodes.  The in-memory state
holds all of it, so the service publishes the same gauges, with the
same names, labels and meaning, in one pass over the state per scrape:

- ``openstack_placement_resource_total{hostname, resourcetype}``: an
  inventory's total (``hostname`` is the provider's name);
- ``openstack_placement_resource_allocation_ratio``, ``_reserved``:
  the inventory's allocation ratio and reserved amount;
- ``openstack_placement_resource_generation``: the provider's
  generation;
- ``openstack_placement_resource_usage``: what is allocated of it;
- ``openstack_placement_resource_provider_allocations{hostname, uuid,
  resourcetype}`` (``[metrics] placement_allocation_gauges``): each
  consumer's allocation, ``uuid`` the consumer's, from SQL (the state
  keeps usage per provider, not per consumer);
- ``openstack_placement_up``: 1, or 0 when the state did not answer
  in time (the metrics process asks the host's state readers, with their
  deadline; that scrape then has no other of these gauges).

``[metrics] placement_gauges_per_provider = false`` keeps the series per
provider off (a few per class instead, without ``hostname``), for clouds
that do not want hundreds of thousands of series.
"""

import collections
import logging

import sqlalchemy as sa

from placement.state import questions
from placement.state import shared
from placement.state import snapshot
from placement.storage import tables as t

LOG = logging.getLogger(__name__)

_PREFIX = 'openstack_placement_'
# Per inventory: (name, help, the value's index in a row).
_INVENTORY_GAUGES = (
    ('resource_total', 'The inventory\'s total.', 2),
    ('resource_allocation_ratio', 'The inventory\'s allocation ratio.', 3),
    ('resource_reserved', 'The inventory\'s reserved amount.', 4),
    ('resource_generation', 'The resource provider\'s generation.', 5),
    ('resource_usage', 'What is allocated of the inventory.', 6),
)
_UP_HELP = 'Whether Placement answered for these gauges.'


@questions.question
def inventory_rows(state, per_provider):
    """[(provider name, class, total, allocation ratio, reserved,
    generation, used)] of every inventory; without ``per_provider``, one
    row per class, its name None, its sums (the ratio and generation
    left out: None)."""
    if per_provider:
        return [(provider.name, state.class_name(class_id), record.total,
                 record.allocation_ratio, record.reserved,
                 provider.generation, record.used)
                for provider in state.providers.values()
                for class_id, record in provider.inventory.items()]
    sums = collections.defaultdict(lambda: [0, 0, 0])
    counts = collections.Counter(id(provider.inventory)
                                 for provider in state.providers.values())
    seen = {}
    for provider in state.providers.values():
        seen.setdefault(id(provider.inventory), provider.inventory)
    for key, inventory in seen.items():
        for class_id, record in inventory.items():
            entry = sums[state.class_name(class_id)]
            entry[0] += record.total * counts[key]
            entry[1] += record.reserved * counts[key]
            entry[2] += record.used * counts[key]
    return [(None, name, total, None, reserved, None, used)
            for name, (total, reserved, used) in sorted(sums.items())]


def allocation_rows(conn):
    """[(provider name, consumer uuid, class, amount)] of every
    allocation."""
    return conn.execute(
        sa.select(t.RP.c.name, t.ALLOC.c.consumer_id, t.RC.c.name,
                  t.ALLOC.c.used)
        .select_from(t.ALLOC_WITH_PROVIDER_AND_CLASS)).all()


class Collector:
    """A prometheus-client collector of the gauges, worked out when
    scraped."""

    def __init__(self, db, per_provider=True, allocations=False):
        self.db = db
        self.per_provider = per_provider
        self.allocations = allocations

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        try:
            # Between forks: the placement-api parent asks its own state.
            with self.db.between_forks():
                rows = snapshot.answer(self.db, inventory_rows,
                                       self.per_provider)
                allocations = (self.db.read(allocation_rows)
                               if self.allocations else None)
        except shared.Unreachable as why:
            LOG.warning('openstack_placement gauges left out of this '
                        'scrape: %s', why)
            yield GaugeMetricFamily(_PREFIX + 'up', _UP_HELP, value=0)
            return
        yield from self._inventory_families(rows)
        if allocations is not None:
            family = GaugeMetricFamily(
                _PREFIX + 'resource_provider_allocations',
                'A consumer\'s allocation of a class on the provider.',
                labels=['hostname', 'uuid', 'resourcetype'])
            for hostname, consumer, resource_class, amount in allocations:
                family.add_metric([hostname or '', consumer, resource_class],
                                  amount)
            yield family
        yield GaugeMetricFamily(_PREFIX + 'up', _UP_HELP, value=1)

    def _inventory_families(self, rows):
        from prometheus_client.core import GaugeMetricFamily
        labels = (['hostname', 'resourcetype'] if self.per_provider
                  else ['resourcetype'])
        for name, help_text, index in _INVENTORY_GAUGES:
            family = GaugeMetricFamily(_PREFIX + name, help_text,
                                       labels=labels)
            for row in rows:
                if row[index] is not None:
                    family.add_metric(
                        [row[0] or '', row[1]] if self.per_provider
                        else [row[1]], row[index])
            yield family
