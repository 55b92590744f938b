"""One provider's usages, traits and aggregates: from the in-memory state,
else from SQL, in one shape either way.

Every nova-compute asks for these of its own provider every few minutes,
all day: at 100,000 compute nodes they are most of a cloud's Placement
traffic.  The exact state the candidate search uses (``snapshot``,
refreshed from the change log before it is read) holds all of them, so
they are answered without a query of their own, as a fresh read of the
database would answer.

A uuid the state does not know is left to SQL: the database then raises
NotFound in upstream's words, or finds the provider the way its
collation compares (case-insensitively on MySQL).  Each read below is
the pair, state then SQL, written once for every handler.

What the state answered is kept (``kept_answers``) until the change log
names a write to that provider: where the workers of a host share state
readers, a provider asked about again costs no round trip to a reader,
and anywhere no question of the state.
"""

from placement.state import kept_answers
from placement.state import questions
from placement.state import shared
from placement.state import snapshot
from placement.storage import aggregates as aggregate_storage
from placement.storage import providers_core
from placement.storage import traits as trait_storage
from placement.storage import usages as usage_storage


SHELF = kept_answers.Shelf('provider reads')


def _answered(db, uuid, question, from_sql):
    """``question(state, uuid)``'s answer from the fresh state of ``db``,
    or ``from_sql(conn, uuid)`` when the state has no provider ``uuid``
    or no state reader took the question in time."""
    def fresh():
        try:
            known, found = snapshot.answer(db, question, uuid,
                                           own_state=False)
        except shared.Unreachable:
            known = False
        if not known:
            return None, db.read(from_sql, uuid)
        provider_id, answer = found
        return [(kept_answers.PROVIDER, provider_id)], answer
    return kept_answers.answer(db, SHELF, (question, uuid), fresh)


def _known(from_state):
    """A question of the state from ``from_state(state, provider)``:
    (True, (the provider's id, its answer)), or (False, None) when the
    state has no provider of the uuid asked about."""
    def question(state, uuid):
        provider = state.provider_by_uuid(uuid)
        if provider is None:
            return False, None
        return True, (provider.id, from_state(state, provider))
    question.__name__ = question.__qualname__ = from_state.__name__
    question.__doc__ = from_state.__doc__
    return questions.question(question)


def usages(db, uuid):
    """(generation, {class name: amount used}) for every class the
    provider ``uuid`` has inventory of."""
    return _answered(db, uuid, usages_in_state, _usages_in_sql)


@_known
def usages_in_state(state, provider):
    return provider.generation, {
        state.class_name(class_id): record.used
        for class_id, record in sorted(provider.inventory.items())}


def _usages_in_sql(conn, uuid):
    provider = providers_core.get_by_uuid(conn, uuid)
    return provider['generation'], usage_storage.for_provider(
        conn, provider['id'])


def traits(db, uuid):
    """(generation, trait names in id order, the newest trait's change
    time or None) of the provider ``uuid``."""
    return _answered(db, uuid, traits_in_state, _traits_in_sql)


@_known
def traits_in_state(state, provider):
    ids = sorted(provider.traits)
    changed = [state.trait_changed_at(id_) for id_ in ids
               if state.trait_changed_at(id_) is not None]
    return (provider.generation, [state.trait_name(id_) for id_ in ids],
            max(changed) if changed else None)


def _traits_in_sql(conn, uuid):
    provider, traits = trait_storage.provider_traits(conn, uuid)
    changed = [trait['updated_at'] or trait['created_at']
               for trait in traits]
    changed = [stamp for stamp in changed if stamp is not None]
    return (provider['generation'], [trait['name'] for trait in traits],
            max(changed) if changed else None)


def aggregates(db, uuid):
    """(generation, aggregate uuids in id order) of the provider
    ``uuid``."""
    return _answered(db, uuid, aggregates_in_state, _aggregates_in_sql)


@_known
def aggregates_in_state(state, provider):
    return provider.generation, sorted(provider.aggregates,
                                       key=state.aggregate_id)


def _aggregates_in_sql(conn, uuid):
    provider, aggregate_uuids = aggregate_storage.get_provider_aggregates(
        conn, uuid)
    return provider['generation'], aggregate_uuids
