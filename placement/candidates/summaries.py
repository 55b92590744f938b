"""Provider summaries: what the answer shows about each provider.

A provider's summary changes only when the provider does, and the state
replaces a provider's object when it reloads it; so each summary is built
once per shape and kept by the state (``State.keep_summary``) until then.
A summary is shared by every answer that shows it and must not be
changed.
"""


def shown(state, request, used, show_traits, show_all_resources):
    """(uuid, summary) for every provider of every tree of the providers
    ids ``used`` (before 1.29, for those alone), in id order, one at a
    time: an answer at 100,000 providers is encoded a batch at a time
    rather than held whole as Python objects."""
    providers = state.providers
    if request.nested_aware:
        ids = sorted({member for root in {providers[id_].root
                                          for id_ in used}
                      for member in state.members(root)})
    else:
        ids = sorted(used)
    if not show_all_resources:
        # Before 1.27, shaped by the request: not worth keeping.
        requested = frozenset(state.class_id(name)
                              for group in request.groups
                              for name in group.resources)
        for id_ in ids:
            provider = providers[id_]
            yield provider.uuid, _summary(
                state, provider, show_traits, request.nested_aware,
                requested)
        return
    shape = (show_traits, request.nested_aware)
    for id_ in ids:
        provider = providers[id_]
        summary = state.kept_summary(provider, shape)
        if summary is None:
            summary = _summary(state, provider, show_traits,
                               request.nested_aware, None)
            state.keep_summary(provider, shape, summary)
        yield provider.uuid, summary


def _summary(state, provider, show_traits, nested_aware, requested):
    resources = {state.class_name(class_id): {'capacity': record.capacity,
                                              'used': record.used}
                 for class_id, record in sorted(provider.inventory.items())
                 if requested is None or class_id in requested}
    summary = {'resources': resources}
    if show_traits:
        # Oldest trait first: the order upstream happens to answer in,
        # which its tests expect.
        summary['traits'] = [state.trait_name(trait_id)
                             for trait_id in sorted(provider.traits)]
    if nested_aware:
        summary['parent_provider_uuid'] = (
            state.provider(provider.parent).uuid
            if provider.parent is not None else None)
        summary['root_provider_uuid'] = state.provider(provider.root).uuid
    return summary
