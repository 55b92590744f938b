"""openstack-exporter's placement gauges, published by placement-api
itself: the names, labels and values the exporter's placement collector
gives (from 1 + 3N API requests), checked against what the API says;
per class only with ``placement_gauges_per_provider = false``; each
consumer's allocations with ``placement_allocation_gauges``."""

import collections

from tests import scraped
from tests.functional.server import request
from tests.functional.server import running
from tests.functional.test_metrics import metrics_port  # noqa: F401

CONFIG = '''[metrics]
enabled = True
bind = 127.0.0.1:%d
'''
PREFIX = 'openstack_placement_'


def _seed(port):
    """Three providers (one without inventory) and two consumers: the
    exporter's view of them, as it builds it from the API:
    {(hostname, class): {gauge: value}} and {(hostname, consumer, class):
    amount}."""
    uuids = {}
    for name, inventories in (
            ('cn1', {'VCPU': {'total': 16, 'reserved': 2,
                              'allocation_ratio': 4.0},
                     'MEMORY_MB': {'total': 8192, 'reserved': 512}}),
            ('cn2', {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}}),
            ('empty', None)):
        status, body = request(port, 'POST', '/resource_providers',
                               {'name': name})
        assert status == 200, body
        uuids[name] = body['uuid']
        if inventories:
            status, body = request(
                port, 'PUT', '/resource_providers/%s/inventories'
                % uuids[name], {'resource_provider_generation': 0,
                                'inventories': inventories})
            assert status == 200, body
    for consumer, allocations in (
            ('%032x' % 1, {'cn1': {'VCPU': 4, 'MEMORY_MB': 1024},
                           'cn2': {'DISK_GB': 10}}),
            ('%032x' % 2, {'cn1': {'VCPU': 1}})):
        status, body = request(
            port, 'PUT', '/allocations/' + consumer,
            {'allocations': {uuids[name]: {'resources': resources}
                             for name, resources in allocations.items()},
             'project_id': 'p', 'user_id': 'u',
             'consumer_generation': None}, version='1.28')
        assert status == 204, body
    return _as_the_exporter_sees(port)


def _as_the_exporter_sees(port):
    status, body = request(port, 'GET', '/resource_providers')
    inventories, allocations = {}, {}
    for provider in body['resource_providers']:
        base = '/resource_providers/%s/' % provider['uuid']
        name = provider['name']
        _status, inventory = request(port, 'GET', base + 'inventories')
        _status, usages = request(port, 'GET', base + 'usages')
        _status, held = request(port, 'GET', base + 'allocations')
        for resource_class, record in inventory['inventories'].items():
            inventories[name, resource_class] = {
                'resource_total': record['total'],
                'resource_allocation_ratio': record['allocation_ratio'],
                'resource_reserved': record['reserved'],
                'resource_generation':
                    inventory['resource_provider_generation'],
                'resource_usage': usages['usages'][resource_class]}
        for consumer, allocation in held['allocations'].items():
            for resource_class, amount in allocation['resources'].items():
                allocations[name, consumer, resource_class] = amount
    return inventories, allocations


def test_per_provider_as_the_exporter_publishes_them(
        database_url, tmp_path, metrics_port):  # noqa: F811
    with running(database_url, tmp_path,
                 extra_config=CONFIG % metrics_port) as port:
        inventories, _allocations = _seed(port)
        text = scraped.scrape(metrics_port)
    for gauge in ('resource_total', 'resource_allocation_ratio',
                  'resource_reserved', 'resource_generation',
                  'resource_usage'):
        published = {(labels['hostname'], labels['resourcetype']): value
                     for labels, value in _labelled(text, PREFIX + gauge)}
        assert published == {key: values[gauge]
                             for key, values in inventories.items()}, gauge
    assert scraped.sample(text, PREFIX + 'up') == 1
    # Off by default: a series per consumer and class.
    assert not scraped.series(text, PREFIX + 'resource_provider_allocations')


def test_per_class_and_each_consumer_s_allocations(
        database_url, tmp_path, metrics_port):  # noqa: F811
    config = CONFIG % metrics_port + (
        'placement_gauges_per_provider = false\n'
        'placement_allocation_gauges = true\n')
    with running(database_url, tmp_path, extra_config=config) as port:
        inventories, allocations = _seed(port)
        text = scraped.scrape(metrics_port)
    sums = collections.defaultdict(collections.Counter)
    for (_name, resource_class), values in inventories.items():
        for gauge in ('resource_total', 'resource_reserved',
                      'resource_usage'):
            sums[gauge][resource_class] += values[gauge]
    for gauge, by_class in sums.items():
        published = {labels['resourcetype']: value
                     for labels, value in _labelled(text, PREFIX + gauge)}
        assert published == dict(by_class), gauge
    # Neither sums nor has a meaning per class.
    for gauge in ('resource_allocation_ratio', 'resource_generation'):
        assert not scraped.series(text, PREFIX + gauge)
    published = {
        (labels['hostname'], labels['uuid'], labels['resourcetype']): value
        for labels, value in _labelled(
            text, PREFIX + 'resource_provider_allocations')}
    assert published == allocations


def test_off(database_url, tmp_path, metrics_port):  # noqa: F811
    config = CONFIG % metrics_port + 'placement_gauges = false\n'
    with running(database_url, tmp_path, extra_config=config) as port:
        _seed(port)
        text = scraped.scrape(metrics_port)
    assert PREFIX not in text
    assert scraped.series(text, 'placement_http_requests_total')


def _labelled(text, name):
    return [(dict(labels), value)
            for labels, value in scraped.series(text, name).items()]
