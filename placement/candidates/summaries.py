"""Provider summaries: what the answer shows about each provider."""

from placement.candidates import filters


def build(conn, request, answers, root_of, show_traits, show_all_resources):
    """{uuid: summary} for every provider of every tree the answers use
    (before 1.29, only for the providers they use); ``answers`` are
    (resources, mappings, provider ids used)."""
    used = set().union(*(providers for _, _, providers in answers))
    roots = {root_of[provider] for provider in used}
    members = filters.tree_members(conn, roots)
    if not request.nested_aware:
        members = [member for member in members if member['id'] in used]
    resources = filters.inventory_summaries(conn, roots)
    traits = filters.trait_names(conn, roots) if show_traits else {}
    requested = None
    if not show_all_resources:
        requested = {name for group in request.groups
                     for name in group.resources}
    summaries = {}
    for member in members:
        inventory = resources.get(member['id'], {})
        if requested is not None:
            inventory = {name: value for name, value in inventory.items()
                         if name in requested}
        summary = {'resources': inventory}
        if show_traits:
            summary['traits'] = traits.get(member['id'], [])
        if request.nested_aware:
            summary['parent_provider_uuid'] = member['parent_provider_uuid']
            summary['root_provider_uuid'] = member['root_provider_uuid']
        summaries[member['uuid']] = summary
    return summaries
