"""A provider's allocations kept in memory, exact.

Every nova-compute asks for its provider's allocations every minute
(``GET /resource_providers/{uuid}/allocations``): the most frequent call
of a cloud at rest, and one whose answer changes only when a write
allocates from that provider, frees from it, or rewrites a consumer
holding there.  Each of those logs the provider (``changes.touch``: the
provider's generation moves with it); anything else's write to
allocations or consumers is logged as everything (migrations 0004 and
0008), and a class named anew drops every answer (``kept_answers``).

So each process keeps the answers it gave, in the shape its caller
makes of them (the JSON of one microversion's body: a few kilobytes
for a compute node's twenty servers), up to BUDGET bytes; a provider
beyond that is read from the database each time.
"""

from placement import json_encoding
from placement.state import kept_answers
from placement.storage import allocations

# Bytes of kept answers per process and database (``Shelf.cost``: the
# shape's bytes and what keeping it costs): a compute node of 20 servers
# about 2.9 KB, so 7,200 such nodes fit, or 38,000 nodes holding none.
# Every worker keeps its own, so this is paid once per worker.
BUDGET = 20 * 1024 * 1024


def _size(answer):
    return len(answer[0])


SHELF = kept_answers.Shelf('provider allocations', keep=200000, size=_size,
                           budget=BUDGET)


def answer(db, uuid, shape):
    """``shape(generation, allocations)`` of the provider ``uuid``'s
    allocations (``storage.allocations.for_provider``'s) as a fresh read
    would give them now: (bytes, anything else) that depends on nothing
    but its arguments.  NotFound as the storage raises it."""
    def fresh(conn):
        provider_id, generation, rows = allocations.for_provider(conn, uuid)
        return ([(kept_answers.PROVIDER, provider_id)],
                shaped(shape, generation, rows))
    return kept_answers.answer(db, SHELF, (uuid, shape),
                               lambda: db.read(fresh))


def shaped(shape, generation, rows):
    """``shape(generation, rows)`` as it is kept: its bytes in an object
    of their own size (``json_encoding.to_keep``)."""
    body, *rest = shape(generation, rows)
    return (json_encoding.to_keep(body), *rest)
