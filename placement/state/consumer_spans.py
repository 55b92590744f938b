"""The consumers that hold in two or more provider trees, kept in
memory, exact.

The audit's split consumers are among them.  Finding them means grouping
every allocation by consumer: about a second of the database's time at
1,000,000 allocations, too slow to pay on every audit.  So each process
keeps them per database, read whole on its first audit, then kept exact
by the change log (``catch_up``), as the candidate state is: every write
that changes a provider's allocations, traits (sharing) or place in a
tree logs that provider, and the consumers holding on a logged provider
(now, or when last read) are read again; when the log cannot say, or
names too many providers, all are read again.

Most such consumers hold in one tree of their own and on one sharing
provider elsewhere (a server and its disk on a pool).  They are kept by
that pair (root, sharing provider): whether the pool shares with the
root is asked once per pair, not once per consumer.  The others are kept
with where they hold, to be looked at one by one.
"""

import collections
import threading

from placement.state import catch_up
from placement.state import per_process
from placement.storage import audit as storage


class Spans(collections.namedtuple('Spans', 'pairs others')):
    """``pairs``: {(root id, sharing provider id): consumer uuids} of the
    consumers holding in the one tree and on the one sharing provider;
    ``others``: {consumer uuid: [storage.Placement]} of the rest."""


def _pair(placements):
    """(root, sharing provider) when ``placements`` (of a consumer in two
    or more trees) are in one tree of their own and on one sharing
    provider, else None: ``storage.pair_of`` on their extremes."""
    own = [p.root for p in placements if not p.sharing]
    pools = [p.provider for p in placements if p.sharing]
    return storage.pair_of(min(own, default=None), max(own, default=None),
                           min(pools, default=None),
                           max(pools, default=None))


class _Kept:
    """One process's spanning consumers of one database.

    A consumer kept by its pair holds on the pair's sharing provider, so
    any write to its allocations logs that provider; one whose providers
    moved to another tree is found holding on them.  So the consumers to
    read again after changes to some providers are those holding on them
    now, those of the pairs naming one of them (or its root), and the
    others that held on one when kept.
    """

    def __init__(self, _db):
        self._lock = threading.Lock()
        self._position = None
        self._pairs = collections.defaultdict(set)  # (root, sharing): ...
        self._pair_of = {}      # consumer: its (root, sharing provider)
        self._others = {}       # consumer: [storage.Placement]

    def spans(self, db):
        """The Spans as of now (copies: the caller may take its time)."""
        with self._lock:    # one refresh at a time: audits are rare
            db.read(self._refresh)
            return Spans({pair: frozenset(consumers)
                          for pair, consumers in self._pairs.items()},
                         dict(self._others))

    def _refresh(self, conn):
        changed, position = catch_up.since(conn, self._position)
        if changed.too_many():
            self._read_whole(conn)
        elif changed.providers:
            self._read_again(conn, changed.providers)
        self._position = position

    def _read_whole(self, conn):
        for kept in (self._pairs, self._pair_of, self._others):
            kept.clear()
        pairs, others = storage.spanning(conn)
        for consumer, pair in pairs.items():
            self._pair_of[consumer] = pair
            self._pairs[pair].add(consumer)
        self._keep(storage.placements(conn, others))

    def _read_again(self, conn, providers):
        """Read again the consumers that held or hold on ``providers``."""
        consumers = storage.consumers_on(conn, providers)
        roots = storage.roots_of(conn, providers)
        for pair, held in self._pairs.items():
            if pair[0] in roots or pair[1] in providers:
                consumers.update(held)
        consumers.update(
            consumer for consumer, placements in self._others.items()
            if any(p.provider in providers for p in placements))
        for consumer in consumers:
            self._forget(consumer)
        self._keep(storage.placements(conn, consumers))

    def _keep(self, placements_by_consumer):
        for consumer, placements in placements_by_consumer.items():
            if len({p.root for p in placements}) < 2:
                continue
            pair = _pair(placements)
            if pair is None:
                self._others[consumer] = placements
            else:
                self._pair_of[consumer] = pair
                self._pairs[pair].add(consumer)

    def _forget(self, consumer):
        self._others.pop(consumer, None)
        pair = self._pair_of.pop(consumer, None)
        if pair is not None:
            consumers = self._pairs[pair]
            consumers.discard(consumer)
            if not consumers:
                del self._pairs[pair]


_kept = per_process.PerDatabase(_Kept)


def of(db):
    """The Spans of ``db`` as of now."""
    return _kept.of(db).spans(db)
