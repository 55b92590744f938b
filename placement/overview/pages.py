"""Providers listed a page at a time, from the candidate state.

Filters, all optional and all to be met: a prefix of the name (compared
case-insensitively) or of the uuid; required traits (sets, one of each)
and forbidden ones; aggregates (one of each set, none of the forbidden);
a tree; and at least some free units of resource classes, where free is
capacity less usage.  Providers come in name order (names are unique),
``limit`` at a time, each page continuing after the provider its caller
names as ``marker``: never one answer with every provider.
"""

import bisect
import dataclasses
import typing

from placement.candidates import filters
from placement.state import queries
from placement.state import questions


class UnknownMarker(ValueError):
    """The marker names no provider."""


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What the caller asks for; traits and classes by id, aggregates by
    uuid (``filters`` resolves names)."""
    prefix: str = None
    required: tuple = ()            # trait id sets
    forbidden: frozenset = frozenset()
    member_of: tuple = ()           # aggregate uuid sets
    forbidden_aggregates: frozenset = frozenset()
    in_tree: str = None
    free: tuple = ()                # (class id, at least)
    limit: int = 50
    marker: str = None


def _matches(wanted):
    prefix = (wanted.prefix or '').casefold()

    def matches(provider):
        if prefix and not (provider.uuid.startswith(prefix)
                           or (provider.name or '').casefold().startswith(
                               prefix)):
            return False
        if not queries.traits_pass(provider, wanted.required,
                                   wanted.forbidden):
            return False
        if not queries.aggregates_pass(provider, wanted.member_of,
                                       wanted.forbidden_aggregates):
            return False
        inventory = provider.inventory
        for class_id, amount in wanted.free:
            record = inventory.get(class_id)
            if record is None or record.capacity - record.used < amount:
                return False
        return True
    return matches


def _key(provider):
    return (provider.name or '', provider.uuid)


def _first_ids(state, wanted):
    """The ids worth testing: a tree's, an aggregate's or a class's
    holders when the filters name one, else every provider."""
    if wanted.in_tree is not None:
        provider = state.provider_by_uuid(wanted.in_tree)
        return state.members(provider.root) if provider else ()
    if wanted.member_of:
        return queries.in_every(state, wanted.member_of)
    if wanted.free:
        return queries.holding_every(state, dict(wanted.free))
    return state.providers


def page(state, wanted):
    """(matching providers in name order from after the marker, at most
    ``limit``; how many match in all; the marker of the next page or
    None)."""
    providers = state.providers
    matches = _matches(wanted)
    found = sorted((provider for provider in map(
        providers.__getitem__, _first_ids(state, wanted))
        if matches(provider)), key=_key)
    start = 0
    if wanted.marker is not None:
        after = state.provider_by_uuid(wanted.marker)
        if after is None:
            raise UnknownMarker('Marker %s names no resource provider.'
                                % wanted.marker)
        start = bisect.bisect_right([_key(p) for p in found], _key(after))
    chosen = found[start:start + wanted.limit]
    following = (chosen[-1].uuid if start + wanted.limit < len(found)
                 else None)
    return chosen, len(found), following


def resources(state, provider):
    """{class name: its record and usage} of the provider's inventory,
    by class name."""
    return dict(sorted(
        (state.class_name(class_id), {
            'total': record.total, 'reserved': record.reserved,
            'min_unit': record.min_unit, 'max_unit': record.max_unit,
            'step_size': record.step_size,
            'allocation_ratio': record.allocation_ratio,
            'capacity': record.capacity, 'used': record.used})
        for class_id, record in provider.inventory.items()))


def described(state, provider):
    """One provider of a page, as the answer shows it."""
    everyone = state.providers
    inventory = resources(state, provider)
    return {
        'uuid': provider.uuid,
        'name': provider.name,
        'generation': provider.generation,
        'parent_provider_uuid': (everyone[provider.parent].uuid
                                 if provider.parent is not None else None),
        'root_provider_uuid': everyone[provider.root].uuid,
        'sharing': provider.id in state.sharing,
        'resources': inventory,
        'over_capacity': [name for name, record in inventory.items()
                          if record['used'] > record['capacity']],
    }


class Asked(typing.NamedTuple):
    """A providers query, parsed (by the handler) with its traits and
    classes still named (resolved on the state: ``page_body``)."""
    wanted: Wanted
    required: tuple
    forbidden: frozenset
    free: tuple


@questions.question
def page_body(state, asked):
    """The body of the page of providers ``asked`` for, its names
    resolved in ``state`` (filters.UnknownTrait or UnknownResourceClass
    for one it does not know)."""
    traits = filters.trait_ids(
        state, {name for names in asked.required for name in names}
        | asked.forbidden)
    classes = filters.class_ids(state, [name for name, _ in asked.free])
    wanted = dataclasses.replace(
        asked.wanted,
        required=tuple(frozenset(traits[name] for name in names)
                       for names in asked.required),
        forbidden=frozenset(traits[name] for name in asked.forbidden),
        free=tuple((classes[name], amount) for name, amount in asked.free))
    chosen, total, following = page(state, wanted)
    return {'resource_providers': [described(state, provider)
                                   for provider in chosen],
            'total': total, 'next_marker': following}
