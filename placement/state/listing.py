"""Providers listed from the in-memory state.

``GET /resource_providers`` answers from the same exact state the
candidate search uses (refreshed from the change log before each
request), whatever it filters by but a name or a uuid: every
nova-compute asks for its own tree (``in_tree``) and for the providers
sharing with it (``member_of`` and ``required``) every few minutes, and
at 10,000 providers reading and shaping every row from the database cost
more than anything else in an unfiltered listing.  Entries are built per
request, not kept: at 100,000 providers a kept copy of each would cost a
worker more memory than the candidate state itself.  A name or uuid
filter, and any provider, trait, aggregate or class the state does not
know, are left to SQL: it finds names as the database's collation
compares them (case-insensitively on MySQL), and raises upstream's
errors in upstream's order.
"""

import functools
import typing

from placement import json_encoding
from placement.state import queries
from placement.state import questions


def answers_from_state(list_filters):
    """Whether the listing ``list_filters`` asks for may be answered
    here (``matching`` still leaves names it does not know to SQL)."""
    return not (list_filters.name or list_filters.uuid)


def matching(state, wanted):
    """The providers the listing ``wanted`` (resource_providers.Filters
    less name and uuid) asks for, in id order; None when SQL must answer.

    SQL answers whenever the request names a provider, trait, aggregate
    or resource class the state does not know: it then finds the name as
    the database's collation compares (case-insensitively on MySQL), or
    answers an empty list or upstream's error, in upstream's order.
    """
    if not _all_known(state, wanted):
        return None
    required = [{state.trait_id(name) for name in names}
                for names in wanted.required_traits]
    forbidden = {state.trait_id(name) for name in wanted.forbidden_traits}
    amounts = {state.class_id(name): amount
               for name, amount in wanted.resources.items()}
    providers = state.providers
    if wanted.in_tree is not None:
        ids = state.members(state.provider_by_uuid(wanted.in_tree).root)
    elif wanted.member_of:
        ids = sorted(queries.in_every(state, wanted.member_of))
    elif amounts:
        ids = sorted(queries.holding_every(state, amounts))
    else:
        ids = state.ordered()
    if not (required or forbidden or wanted.member_of
            or wanted.forbidden_aggregates or amounts):
        return [providers[id_] for id_ in ids]
    return [provider for provider in map(providers.__getitem__, ids)
            if queries.aggregates_pass(provider, wanted.member_of,
                                       wanted.forbidden_aggregates)
            and queries.traits_pass(provider, required, forbidden)
            and len(queries.with_room(provider, amounts)) == len(amounts)]


def _all_known(state, wanted):
    """Whether the state knows every provider, trait, aggregate and
    resource class ``wanted`` names (an aggregate without members it
    does not know)."""
    traits = {name for names in wanted.required_traits for name in names}
    aggregates = {uuid for uuids in wanted.member_of for uuid in uuids}
    return ((wanted.in_tree is None
             or state.provider_by_uuid(wanted.in_tree) is not None)
            and all(state.trait_id(name) is not None for name in
                    traits | set(wanted.forbidden_traits))
            and all(state.in_aggregate(uuid) for uuid in
                    aggregates | set(wanted.forbidden_aggregates))
            and all(state.class_id(name) is not None
                    for name in wanted.resources))


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


class Shape(typing.NamedTuple):
    """What a provider's body holds at a request's microversion and
    mount point, worked out once: a listing shapes every provider."""
    root: str
    suffixes: tuple
    with_tree: bool


def shaped(shape, provider):
    """``provider``'s body (its fields as a dict) in ``shape``."""
    href = shape.root + provider['uuid']
    links = [{'rel': 'self', 'href': href}]
    links.extend({'rel': relation, 'href': href + suffix}
                 for relation, suffix in shape.suffixes)
    body = {'uuid': provider['uuid'], 'name': provider['name'],
            'generation': provider['generation'], 'links': links}
    if shape.with_tree:
        body['parent_provider_uuid'] = provider['parent_provider_uuid']
        body['root_provider_uuid'] = provider['root_provider_uuid']
    return body


@questions.question
def listing_body(state, filters, shape):
    """(the listing's body as pieces of JSON, when the latest of its
    providers changed) from ``state``; (None, None) when the listing is
    left to SQL (``matching``)."""
    providers = matching(state, filters)
    if providers is None:
        return None, None
    changed = max((provider.changed_at for provider in providers
                   if provider.changed_at is not None), default=None)
    # Encoded a batch at a time: 100,000 providers' bodies are 74 MB of
    # JSON, and three times that as Python objects.
    body = [b'{"resource_providers":']
    body += json_encoding.json_array(map(
        functools.partial(shaped, shape), fields(state, providers)))
    body.append(b'}')
    return body, changed
