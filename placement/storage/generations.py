"""A provider's generation: the compare-and-swap every write to a
provider's inventories, traits, aggregates or allocations makes.

Each such write bumps the generation exactly when it is still the one
the writer based its change on, so that of two writers that read the
same generation one fails (ConcurrentUpdate, or a retry of the whole
transaction) instead of both succeeding.  The bump is built here once,
as one UPDATE; a write runs it alone (``bump``) or inside a statement
that does more at the same time (``bumping``: the inventories' read and
the traits' change on PostgreSQL, a round trip fewer each).  Either way
the write says so through ``recorded``, which puts the provider in the
change log with it, so that every process's state reads it again.
"""

import sqlalchemy as sa

from placement.storage import changes
from placement.storage import exceptions
from placement.storage import prepared
from placement.storage import tables
from placement.storage.tables import RP


def _update(provider):
    """The bump of the provider ``provider`` (a condition on
    resource_providers) from the generation ``:expected``, stamped
    ``:now``."""
    return (RP.update()
            .where(provider, RP.c.generation == sa.bindparam('expected'))
            .values(generation=RP.c.generation + 1,
                    updated_at=sa.bindparam(
                        'now', type_=RP.c.updated_at.type)))


def bumping(provider, name='bumped'):
    """The bump as a CTE ``name`` (with the provider's ``id`` and new
    ``generation``, no row when the generation was not ``:expected``)
    for a statement that does more; the writer then calls
    ``recorded``."""
    return _update(provider).returning(RP.c.id, RP.c.generation).cte(name)


# Every write to a provider runs it: built once, prepared.
_BY_ID = prepared.Statement(_update(RP.c.id == sa.bindparam('provider')))


def bump(conn, provider_id, expected):
    """Bump the generation iff it is still ``expected``, and record it.

    Returns the new generation; raises ConcurrentUpdate when another
    writer got there first (the caller's transaction then rolls back).
    """
    result = _BY_ID.execute(conn, {'provider': provider_id,
                                   'expected': expected,
                                   'now': tables.utcnow()})
    if result.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            'resource provider generation conflict')
    recorded(conn, provider_id)
    return expected + 1


def recorded(conn, provider_id):
    """The write on ``conn`` bumped the provider's generation: the
    change log names the provider with it."""
    changes.touch(conn, provider_id)
