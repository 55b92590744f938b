"""A shelf's budget bounds the memory its kept answers take: what
``Shelf.cost`` counts for an answer is what keeping it costs, as
tracemalloc measures it (the answer, its key, its owners' entries),
within a margin, for the answers nova's steady traffic keeps."""

import datetime
import tracemalloc
import uuid

import pytest

from placement.handlers import allocation
from placement.state import kept_answers
from placement.state import listing
from placement.state import provider_allocations
from placement.state import provider_reads
from placement.storage import resource_providers

COUNT = 2000
NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)


def _uuid():
    return str(uuid.uuid4())


def _allocations(servers):
    shape = allocation._PROVIDER_BODIES[True]

    def kept(number):
        rows = [{'consumer_uuid': consumer, 'resource_class': name,
                 'used': used, 'consumer_generation': 1,
                 'created_at': NOW, 'updated_at': None}
                for consumer in [_uuid() for _ in range(servers)]
                for name, used in (('VCPU', 2), ('MEMORY_MB', 4096),
                                   ('DISK_GB', 40))]
        return ((_uuid(), shape), [(kept_answers.PROVIDER, number)],
                provider_allocations.shaped(shape, number, rows))
    return provider_allocations.SHELF, kept


def _read(answer_of):
    def kept(number):
        return ((provider_reads.usages_in_state, _uuid()),
                [(kept_answers.PROVIDER, number)], answer_of(number))
    return provider_reads.SHELF, kept


def _tree_listing(providers):
    shape = listing.Shape(root='/resource_providers/', suffixes=(
        ('inventories', '/inventories'), ('usages', '/usages'),
        ('aggregates', '/aggregates'), ('traits', '/traits'),
        ('allocations', '/allocations')), with_tree=True)

    def kept(number):
        body = ('{"uuid":"%s"}' % _uuid()) * (800 * providers // 44)
        filters = resource_providers.Filters(in_tree=_uuid())
        return ((listing._key(filters), shape),
                [(kept_answers.PROVIDER, number * 10 + each)
                 for each in range(providers)],
                ([b'{"resource_providers":[', body.encode(), b']}'], None))
    return listing.SHELF, kept


KEPT = {
    'allocations, none': _allocations(0),
    'allocations, 20 servers': _allocations(20),
    'usages': _read(lambda number: (number, {
        'VCPU': number, 'MEMORY_MB': number * 2, 'DISK_GB': number * 3})),
    'traits': _read(lambda number: (number, [
        'HW_CPU_X86_AVX2', 'COMPUTE_STATUS_%d' % number,
        'CUSTOM_RACK_%d' % number], None)),
    'aggregates': _read(lambda number: (number, [_uuid()])),
    'a tree of one': _tree_listing(1),
    'a tree of three': _tree_listing(3),
}


@pytest.mark.parametrize('kind', sorted(KEPT))
def test_what_an_answer_is_counted_is_what_keeping_it_costs(kind):
    shelf, kept = KEPT[kind]
    held = kept_answers.Held(kept_answers.Shelf(
        shelf.name, keep=COUNT, size=shelf.size, budget=None))
    keys_of = {}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(COUNT):
            key, owners, answer = kept(number)
            held.remember(key, tuple(owners), answer, keys_of)
            del key, owners, answer
        costs = (tracemalloc.get_traced_memory()[0] - before) / COUNT
    finally:
        tracemalloc.stop()
    counted = held.bytes / COUNT
    assert costs <= counted * 1.1, (costs, counted)
    assert counted <= costs * 1.6, (costs, counted)
