"""A consumer's allocations kept in memory, exact.

Nova's conductor and API ask for an instance's allocations
(``GET /allocations/{consumer}``) as often as each compute node asks for
its own: in a cloud at rest, a quarter of every request.  The answer
moves only with a write that allocates, frees or rewrites that
consumer, and each such write logs every provider the consumer held on
before it and holds on after (``storage.allocations``: the generation,
project, user and type of a consumer move only with such a write); the
providers' own generations, shown in the answer, move only with a write
that logs them.  So an answer is owned by the providers it names, and is
kept (``kept_answers``) until one of them moves.

A consumer that holds nothing names no provider: a write that gives it
allocations would log only the providers it gains, which no answer
owns.  Its answer is read each time and never kept.
"""

from placement.state import kept_answers
from placement.storage import allocations

SHELF = kept_answers.Shelf('consumer allocations')


def answer(db, uuid, shape):
    """``shape(consumer, allocations)`` of the consumer ``uuid``
    (``storage.allocations.for_consumer``'s) as a fresh read would give
    it now; ``shape`` a module-level function, so that every process
    names it alike."""
    def fresh(conn):
        consumer, rows = allocations.for_consumer(conn, uuid)
        owners = sorted({(kept_answers.PROVIDER, row['resource_provider_id'])
                         for row in rows}) or None
        return owners, shape(consumer, rows)
    return kept_answers.answer(db, SHELF, (uuid, shape),
                               lambda: db.read(fresh))
