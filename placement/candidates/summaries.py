"""Provider summaries: what the answer shows about each provider.

A provider's summary changes only when the provider does, and the state
replaces a provider's object when it reloads it; so each summary is built
once per shape and kept on the provider until then, for at most
KEPT summaries in all (about 1 KB each: at 100,000 providers an
unbounded answer would otherwise keep 120 MB in every worker that gave
it).  A summary is shared by every answer that shows it and must not be
changed.
"""

KEPT = 20000


def build(state, request, answers, show_traits, show_all_resources):
    """{uuid: summary} for every provider of every tree the answers use
    (before 1.29, only for the providers they use); ``answers`` are
    (resources, mappings, provider ids used)."""
    providers = state.providers
    used = set().union(*(ids for _, _, ids in answers))
    if request.nested_aware:
        shown = sorted({member for root in {providers[id_].root
                                            for id_ in used}
                        for member in state.trees[root]})
    else:
        shown = sorted(used)
    requested = None
    if not show_all_resources:
        requested = frozenset(state.class_ids[name]
                              for group in request.groups
                              for name in group.resources)
    result = {}
    if requested is not None:
        # Before 1.27, shaped by the request: not worth keeping.
        for id_ in shown:
            provider = providers[id_]
            result[provider.uuid] = _summary(
                state, provider, show_traits, request.nested_aware,
                requested)
        return result
    shape = (show_traits, request.nested_aware)
    for id_ in shown:
        provider = providers[id_]
        summary = provider.summaries.get(shape)
        if summary is None:
            summary = _summary(state, provider, show_traits,
                               request.nested_aware, None)
            if state.summaries_kept < KEPT:
                provider.summaries[shape] = summary
                state.summaries_kept += 1
        result[provider.uuid] = summary
    return result


def _summary(state, provider, show_traits, nested_aware, requested):
    names = state.class_names
    resources = {names[class_id]: {'capacity': record.capacity,
                                   'used': record.used}
                 for class_id, record in sorted(provider.inventory.items())
                 if requested is None or class_id in requested}
    summary = {'resources': resources}
    if show_traits:
        # Oldest trait first: the order upstream happens to answer in,
        # which its tests expect.
        summary['traits'] = [state.trait_names[trait_id]
                             for trait_id in sorted(provider.traits)]
    if nested_aware:
        providers = state.providers
        summary['parent_provider_uuid'] = (
            providers[provider.parent].uuid
            if provider.parent is not None else None)
        summary['root_provider_uuid'] = providers[provider.root].uuid
    return summary
