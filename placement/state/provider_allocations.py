"""A provider's allocations kept in memory, exact.

Every nova-compute asks for its provider's allocations every minute
(``GET /resource_providers/{uuid}/allocations``): the most frequent call
of a cloud at rest, and one whose answer changes only when a write
allocates from that provider, frees from it, or rewrites a consumer
holding there.  Each of those logs the provider (``changes.touch``: the
provider's generation moves with it); anything else's write to
allocations or consumers is logged as everything (migrations 0004 and
0008), and a class named anew drops every answer (``kept_answers``).

So the answers given are kept (``kept_answers``), in the shape the
caller makes of them (the JSON of one microversion's body: a few
kilobytes for a compute node's twenty servers); a provider whose answer
the host's store has no room for is read from the database each time.
"""

from placement.state import kept_answers
from placement.storage import allocations


def _size(answer):
    return len(answer[0])


SHELF = kept_answers.Shelf('provider allocations', size=_size)


def answer(db, uuid, shape):
    """``shape(generation, allocations)`` of the provider ``uuid``'s
    allocations (``storage.allocations.for_provider``'s) as a fresh read
    would give them now: (bytes, anything else) that depends on nothing
    but its arguments; ``shape`` a module-level function, so that every
    process names it alike.  NotFound as the storage raises it."""
    def fresh(conn):
        provider_id, generation, rows = allocations.for_provider(conn, uuid)
        return ([(kept_answers.PROVIDER, provider_id)],
                shape(generation, rows))
    return kept_answers.answer(db, SHELF, (uuid, shape),
                               lambda: db.read(fresh))
