"""One provider's usages, traits and aggregates, from the in-memory state.

Every nova-compute asks for these of its own provider every few minutes,
all day: at 100,000 compute nodes they are most of a cloud's Placement
traffic.  The exact state the candidate search uses (``snapshot``,
refreshed from the change log before it is read) holds all of them, so
they are answered without a query of their own, as a fresh read of the
database would answer.

A uuid the state does not know is left to SQL (``from_state`` gives
None): the database then answers 404 in upstream's words, or finds the
provider the way its collation compares (case-insensitively on MySQL).
"""

from placement.candidates import snapshot


def from_state(db, uuid, read):
    """``read(state, provider)`` on the fresh state of ``db``, or None
    when the state has no provider ``uuid``."""
    with snapshot.of(db).fresh() as state:
        provider = state.provider_by_uuid(uuid)
        return None if provider is None else read(state, provider)


def usages(state, provider):
    """(generation, {class name: amount used}) for every class the
    provider has inventory of."""
    return provider.generation, {
        state.class_name(class_id): record.used
        for class_id, record in sorted(provider.inventory.items())}


def traits(state, provider):
    """(generation, trait names in id order, the newest trait's change
    time or None)."""
    ids = sorted(provider.traits)
    changed = [state.trait_changed_at(id_) for id_ in ids
               if state.trait_changed_at(id_) is not None]
    return (provider.generation, [state.trait_name(id_) for id_ in ids],
            max(changed) if changed else None)


def aggregates(state, provider):
    """(generation, aggregate uuids in id order)."""
    return provider.generation, sorted(provider.aggregates,
                                       key=state.aggregate_id)
