"""One provider's whole tree, from the candidate state, and who holds
there, from the allocations.

The tree is listed depth first from its root, children in name order,
each provider with its inventory (record, capacity and usage), traits
and aggregates.  The sharing providers the tree reaches are those with
``MISC_SHARES_VIA_AGGREGATE`` in an aggregate of one of its providers
(the relation the candidate search uses), each with the aggregates it is
reached through.  The consumers holding on the tree's providers come
from the allocation rows (``storage.audit``: holdings and consumer
records), largest holding first, at most ``consumer_limit`` of them.
"""

import collections

from placement.overview import pages
from placement.state import questions
from placement.storage import audit as storage


def provider_ids(state, uuid):
    """The ids of the tree of provider ``uuid``, or None when the state
    has no such provider."""
    provider = state.provider_by_uuid(uuid)
    return None if provider is None else state.members(provider.root)


def _depth_first(state, ids):
    providers = state.providers
    children = collections.defaultdict(list)
    root = None
    for provider_id in ids:
        provider = providers[provider_id]
        if provider.parent is None or provider.parent not in ids:
            root = provider
        else:
            children[provider.parent].append(provider)
    ordered = []
    stack = [(root, 0)]
    while stack:
        provider, depth = stack.pop()
        ordered.append((provider, depth))
        stack.extend((child, depth + 1) for child in sorted(
            children[provider.id], key=pages._key, reverse=True))
    return ordered


def _details(state, provider):
    described = pages.described(state, provider)
    described['traits'] = sorted(state.trait_name(trait_id)
                                 for trait_id in provider.traits)
    described['aggregates'] = sorted(provider.aggregates)
    return described


Names = collections.namedtuple('Names', 'providers classes')


def tree(state, uuid):
    """(the tree part of ``GET /overview/providers/{uuid}``, JSON-ready;
    the (provider id, class id) pairs consumers may hold on; ``Names``
    of the providers' uuids and the classes' names by id, to read the
    allocations by once the state is let go)."""
    ids = frozenset(provider_ids(state, uuid))
    listed = []
    pairs = []
    for provider, depth in _depth_first(state, ids):
        described = _details(state, provider)
        described['depth'] = depth
        if provider.id in state.sharing:
            described['shares_with_trees'] = len(
                state.shared_roots(provider)[0])
        listed.append(described)
        pairs.extend((provider.id, class_id)
                     for class_id in provider.inventory)
    reached = collections.defaultdict(set)
    for provider_id in ids:
        for aggregate in state.provider(provider_id).aggregates:
            for member in state.in_aggregate(aggregate):
                if member in state.sharing and member not in ids:
                    reached[member].add(aggregate)
    sharing = []
    for member in sorted(reached, key=lambda m: pages._key(
            state.provider(m))):
        described = _details(state, state.provider(member))
        described['via_aggregates'] = sorted(reached[member])
        sharing.append(described)
    body = {'provider': uuid,
            'root_provider_uuid': listed[0]['uuid'],
            'providers': listed,
            'sharing_providers': sharing}
    names = Names({provider_id: state.provider(provider_id).uuid
                   for provider_id in ids},
                  {class_id: state.class_name(class_id)
                   for _, class_id in pairs})
    return body, pairs, names


def consumers(db, pairs, names, limit):
    """(consumers holding on ``pairs``, largest holding first, at most
    ``limit``; how many there are)."""
    if not pairs:
        return [], 0
    held = db.read(storage.holdings, pairs)
    amounts = collections.defaultdict(
        lambda: collections.defaultdict(dict))
    totals = collections.Counter()
    for (provider_id, class_id), holdings in held.items():
        for holding in holdings:
            amounts[holding.consumer][names.providers[provider_id]][
                names.classes[class_id]] = holding.used
            totals[holding.consumer] += holding.used
    chosen = sorted(amounts, key=lambda c: (-totals[c], c))[:limit]
    records = db.read(storage.consumers, chosen) if chosen else {}
    found = []
    for uuid in chosen:
        record = records.get(uuid)
        found.append({
            'consumer': uuid,
            'consumer_type': record.consumer_type if record else None,
            'project_id': record.project_id if record else None,
            'user_id': record.user_id if record else None,
            'resources': {provider: dict(sorted(classes.items()))
                          for provider, classes in sorted(
                              amounts[uuid].items())},
        })
    return found, len(amounts)


@questions.question
def tree_of(state, uuid):
    """``tree``'s (body, pairs, names) for the provider ``uuid``;
    None when there is none."""
    if provider_ids(state, uuid) is None:
        return None
    return tree(state, uuid)
