"""Providers listed from the in-memory state.

``GET /resource_providers`` with no filter, or with ``resources`` alone,
answers from the same exact state the candidate search uses (refreshed
from the change log before each request): at 10,000 providers reading
and shaping every row from the database cost more than anything else in
the request.  Entries are built per request, not kept: at 100,000
providers a kept copy of each would cost a worker more memory than the
candidate state itself.  Listings with
other filters (names, trees, traits, aggregates) stay in SQL: their
answers are small, and their errors depend on the order in which
upstream resolves names.
"""

from placement.candidates import filters


def answers_from_state(list_filters):
    """Whether the listing ``list_filters`` asks for is answered here."""
    return not (list_filters.name or list_filters.uuid
                or list_filters.in_tree or list_filters.member_of
                or list_filters.forbidden_aggregates
                or list_filters.required_traits
                or list_filters.forbidden_traits)


def matching(state, resources):
    """The providers with room for every {class name: amount} of
    ``resources`` (all when empty), in id order.  An unknown class
    raises filters.UnknownResourceClass, as the SQL listing does."""
    providers = state.providers
    if not resources:
        return [providers[id_] for id_ in state.ordered()]
    amounts = {class_id: resources[name] for name, class_id
               in filters.class_ids(state, list(resources)).items()}
    found = filters.holding_every(state, amounts)
    return [providers[id_] for id_ in sorted(found)
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
