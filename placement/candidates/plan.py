"""A request's plan: what the search, explain and capacity all read the
same way.

- the *slots* of an answer and their order (``slot_templates``): a
  granular group is one slot, the unsuffixed group one slot per class
  (sorted by class id), groups in the order requested;
- a tree's slots with their providers (``tree_slots``);
- how many answers a request may have (``answer_bound``);
- the roots ``root_required`` permits (``permitted_roots``);
- every group's candidates over every tree (``load_groups``) and the
  request-wide constraints, one added at a time (``constraint_levels``).

Nothing here knows about HTTP.
"""

import typing

from placement.candidates import combine
from placement.candidates import filters
from placement.candidates import groups as group_loading


class SlotTemplate(typing.NamedTuple):
    """One slot of every answer, whatever the tree."""
    suffix: str
    granular: bool
    amounts: tuple      # ((class id, amount), ...)
    named: tuple        # ((class name, amount), ...); () when not asked
    group: int          # the index of its group in the request
    class_id: int | None    # its class (unsuffixed group), else None


def slot_templates(groups, class_names=None):
    """The SlotTemplates of ``groups`` (each with ``group`` and
    ``amounts`` ({class id: amount}), as ``groups.Resolved`` and
    ``groups.GroupCandidates`` have), in the search's order; names from
    ``class_names`` ({id: name}) when given."""
    def named(amounts):
        if class_names is None:
            return ()
        return tuple((class_names[class_id], amount)
                     for class_id, amount in amounts)

    templates = []
    for index, found in enumerate(groups):
        if found.group.granular:
            amounts = tuple(sorted(found.amounts.items()))
            templates.append(SlotTemplate(found.group.suffix, True, amounts,
                                          named(amounts), index, None))
            continue
        for class_id in sorted(found.amounts):
            amounts = ((class_id, found.amounts[class_id]),)
            templates.append(SlotTemplate('', False, amounts,
                                          named(amounts), index, class_id))
    return templates


def slot_providers(found, template, anchor):
    """The providers ``template``'s slot may take in ``anchor``'s tree
    (``found``: each group's GroupCandidates); None when its group has
    none there."""
    options = found[template.group].by_anchor.get(anchor)
    if not options:
        return None
    if template.class_id is None:
        return options
    return options.get(template.class_id, [])


def tree_slots(found, anchor):
    """The combine.Slots of ``anchor``'s tree in the search's order; None
    when some group has no provider for that tree."""
    slots = []
    for template in slot_templates(found):
        options = slot_providers(found, template, anchor)
        if options is None:
            return None
        slots.append(combine.Slot(template.suffix, template.granular,
                                  template.amounts, options))
    return slots


def answer_bound(request, settings):
    """The most answers the request may have (``limit``, the configured
    ``max_candidates``), or None when unbounded."""
    bounds = [request.limit or 0]
    if settings.max_candidates >= 0:
        bounds.append(settings.max_candidates)
    bounds = [bound for bound in bounds if bound > 0]
    return min(bounds) if bounds else None


def permitted_roots(state, request):
    """Ids of the roots ``root_required`` permits, ascending; a trait the
    state does not know (its id None) is held by no root."""
    required = {state.trait_id(name) for name in request.root_required}
    forbidden = {state.trait_id(name)
                 for name in request.root_forbidden} - {None}
    return filters.roots(state, required, forbidden)


def load_groups(state, request):
    """(loader, each group's GroupCandidates over every tree); None when
    a name in the request matches nothing at all."""
    loader = group_loading.Loader(state)
    class_names = {}
    try:
        resolved = [group_loading.resolve(state, group, class_names)
                    for group in request.groups]
    except (group_loading.Empty, filters.UnknownResourceClass,
            filters.UnknownTrait):
        return None
    loader.enter(group_loading.Scope())
    return loader, [loader.load(item) for item in resolved]


def trait_index(found):
    """The unsuffixed group's groups.TraitIndex among ``found`` (each
    group's GroupCandidates), or None."""
    return next((candidates.traits for candidates in found
                 if candidates.traits is not None), None)


def trait_constraints(index):
    """The combine.Constraints fields a groups.TraitIndex (or None)
    gives."""
    return {} if index is None else index.constraint_fields()


def constraint_levels(state, request, loaded):
    """[(step name, phrase, combine.Constraints)], each adding one
    request-wide constraint to the previous; ``loaded`` as
    ``load_groups`` gives it."""
    loader, found = loaded
    parents = filters.Parents(state)
    base = dict(inventory=loader.inventory,
                **trait_constraints(trait_index(found)))
    levels = [('together', 'cannot fit all groups at once',
               combine.Constraints(**base))]
    granular = [g.suffix for g in request.groups if g.granular]
    if request.isolate and len(granular) > 1:
        base['isolate'] = True
        levels.append(('group_policy_isolate',
                       'have no separate provider for each of groups %s '
                       '(group_policy=isolate)' % ', '.join(granular),
                       combine.Constraints(**base)))
    if request.same_subtrees:
        base.update(same_subtrees=request.same_subtrees, parents=parents)
        levels.append(('same_subtree', 'cannot place groups %s in one '
                       'subtree (same_subtree)' % '; '.join(
                           ','.join(sorted(s)) for s in
                           request.same_subtrees),
                       combine.Constraints(**base)))
    return levels
