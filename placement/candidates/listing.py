"""Providers listed from the in-memory state.

``GET /resource_providers`` with no filter, with ``in_tree`` (every
nova-compute asks for its own tree every few minutes) or with
``resources``, alone or together, answers from the same exact state the
candidate search uses (refreshed from the change log before each
request): at 10,000 providers reading and shaping every row from the
database cost more than anything else in the request.  Entries are built
per request, not kept: at 100,000 providers a kept copy of each would
cost a worker more memory than the candidate state itself.  Listings
with other filters (names, uuids, traits, aggregates) stay in SQL: their
errors depend on the order in which upstream resolves names.  So does an
``in_tree`` the state does not know: SQL finds it as the database's
collation compares (case-insensitively on MySQL), or answers nothing.
"""

from placement.candidates import filters


def answers_from_state(list_filters):
    """Whether the listing ``list_filters`` asks for may be answered
    here (``matching`` still leaves an unknown ``in_tree`` to SQL)."""
    return not (list_filters.name or list_filters.uuid
                or list_filters.member_of
                or list_filters.forbidden_aggregates
                or list_filters.required_traits
                or list_filters.forbidden_traits)


def matching(state, resources, in_tree=None):
    """The providers with room for every {class name: amount} of
    ``resources`` (all when empty), in the tree of the provider
    ``in_tree`` if given, in id order; None when the state has no
    provider ``in_tree``.  An unknown class raises
    filters.UnknownResourceClass, as the SQL listing does."""
    providers = state.providers
    if in_tree is not None:
        member = state.by_uuid.get(in_tree)
        if member is None:
            return None
        candidates = state.members(providers[member].root)
    else:
        candidates = state.ordered()
    if not resources:
        return [providers[id_] for id_ in candidates]
    amounts = {class_id: resources[name] for name, class_id
               in filters.class_ids(state, list(resources)).items()}
    found = filters.holding_every(state, amounts)
    ids = (sorted(found) if in_tree is None
           else [id_ for id_ in candidates if id_ in found])
    return [providers[id_] for id_ in ids
            if len(filters.with_room(providers[id_], amounts))
            == len(amounts)]


def fields(state, providers):
    """Each provider's fields as a listing shows them, as dicts, one at
    a time (a caller encodes them as they come)."""
    everyone = state.providers
    return ({'uuid': provider.uuid, 'name': provider.name,
             'generation': provider.generation,
             'parent_provider_uuid': (everyone[provider.parent].uuid
                                      if provider.parent is not None
                                      else None),
             'root_provider_uuid': everyone[provider.root].uuid}
            for provider in providers)


def newest_change(providers, when_empty):
    """The latest change among ``providers``: the listing's
    Last-Modified."""
    stamps = [provider.changed_at for provider in providers
              if provider.changed_at is not None]
    return max(stamps) if stamps else when_empty
