"""The placement_audit gauges: the audit's counts by kind, served by a
live placement-api, counted when scraped at most once per [metrics]
audit_interval."""

import uuid as uuidlib

from placement import audit_metrics
from placement.audit import findings

from tests import scraped
from tests.functional.server import request
from tests.functional.server import running
from tests.functional.test_audit import change_inventory
from tests.functional.test_audit import claim
from tests.functional.test_allocation_candidates import World
from tests.functional.test_capacity_metrics import _wait_for
from tests.functional.test_metrics import metrics_port  # noqa: F401

CONFIG = '''[metrics]
enabled = True
bind = 127.0.0.1:%d
audit_interval = 1
'''


def _provider(port, name, record):
    status, body = request(port, 'POST', '/resource_providers',
                           {'name': name})
    assert status == 200, body
    status, answer = request(
        port, 'PUT', '/resource_providers/%s/inventories' % body['uuid'],
        {'resource_provider_generation': 0, 'inventories': {'VCPU': record}})
    assert status == 200, answer
    return body['uuid']


def test_counts_by_kind_follow_the_findings(database_url, tmp_path,
                                            metrics_port):  # noqa: F811
    with running(database_url, tmp_path,
                 extra_config=CONFIG % metrics_port) as port:
        text = _wait_for(metrics_port, 'placement_audit_findings', 0,
                         kind='unusable_inventory')
        assert scraped.sample(text, 'placement_audit_findings',
                              kind='over_capacity') == 0
        _provider(port, 'odd1', {'total': 8, 'min_unit': 4, 'max_unit': 2})
        _provider(port, 'odd2', {'total': 8, 'step_size': 16})
        cn = _provider(port, 'cn', {'total': 8})
        status, body = request(port, 'PUT', '/allocations/' + str(
            uuidlib.uuid4()), {
            'allocations': {cn: {'resources': {'VCPU': 6}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        assert status == 204, body
        request(port, 'PUT', '/resource_providers/%s/inventories/VCPU' % cn,
                {'resource_provider_generation': 2, 'total': 4})
        text = _wait_for(metrics_port, 'placement_audit_findings', 2,
                         kind='unusable_inventory')
        text = _wait_for(metrics_port, 'placement_audit_findings', 1,
                         kind='over_capacity')
        for kind in ('split_consumers', 'stale_migrations'):
            assert scraped.sample(text, 'placement_audit_findings',
                                  kind=kind) == 0
        assert scraped.sample(text,
                              'placement_audit_refreshed_timestamp_seconds')


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_counted_at_most_once_per_interval(client, db):
    world = World(client)
    world.add('cn', VCPU=8)
    claim(world, {'a': {'cn': {'VCPU': 6}}})
    clock = _Clock()
    collector = audit_metrics.Collector(db, 60, clock=clock)
    assert collector.counts()[1] == {kind: 0 for kind in findings.KINDS}
    change_inventory(world, 'cn', 'VCPU', total=4)
    clock.now = 59.9
    assert collector.counts()[1]['over_capacity'] == 0     # not yet again
    clock.now = 60.0
    assert collector.counts()[1]['over_capacity'] == 1
