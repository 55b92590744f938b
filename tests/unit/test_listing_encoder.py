"""A listing's provider bodies written from a template
(``state.listing._Encoder``) are byte for byte what orjson makes of the
same body as a dict (``listing.shaped``), whatever the names, uuids and
mount point hold."""

import itertools
import random

import orjson
import pytest

from placement.state import listing

NAMES = ['cn1', 'compute-0001.example.org', 'with "quotes"', 'back\\slash',
         'tab\there', 'new\nline', 'ünïcødé ☃', '\x00\x1f', '', None,
         '%s %d %%', '{"json": [1]}', 'a' * 200]
UUIDS = ['0b3a51a1-52b4-4ef4-8e6d-1f0a0c9d2e77',
         'ABCDEF01-52B4-4EF4-8E6D-1F0A0C9D2E77', 'not"a\\uuid',
         'odd/uuid%s']
ROOTS = ['/resource_providers/', '/placement/resource_providers/',
         '/pl%ce"ment/resource_providers/', '/ü/resource_providers/']
SUFFIXES = [(), (('inventories', '/inventories'),
                 ('usages', '/usages')),
            tuple((relation, '/' + relation) for relation in (
                'inventories', 'usages', 'aggregates', 'traits',
                'allocations'))]


def _fields(rng):
    return (rng.choice(UUIDS), rng.choice(NAMES),
            rng.choice([0, 1, 7, 2 ** 40]), rng.choice(UUIDS + [None]),
            rng.choice(UUIDS))


@pytest.mark.parametrize('root,suffixes,with_tree', itertools.product(
    ROOTS, SUFFIXES, (False, True)))
def test_the_template_writes_what_orjson_writes(root, suffixes, with_tree):
    shape = listing.Shape(root=root, suffixes=suffixes, with_tree=with_tree)
    encoder = listing._Encoder(shape)
    rng = random.Random(root + str(len(suffixes)) + str(with_tree))
    for _ in range(300):
        fields = _fields(rng)
        as_dict = listing.shaped(shape, dict(zip(
            ('uuid', 'name', 'generation', 'parent_provider_uuid',
             'root_provider_uuid'), fields)))
        assert encoder(fields).encode() == orjson.dumps(as_dict), fields
