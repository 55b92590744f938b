"""Providers listed from the in-memory state.

``GET /resource_providers`` answers from the same exact state the
candidate search uses (refreshed from the change log before each
request), whatever it filters by but a name or a uuid: every
nova-compute asks for its own tree (``in_tree``) and for the providers
sharing with it (``member_of`` and ``required``) every few minutes, and
at 10,000 providers reading and shaping every row from the database cost
more than anything else in an unfiltered listing.  Entries are built per
request, not kept: at 100,000 providers a kept copy of each would cost a
worker more memory than the candidate state itself.  A short listing's
body is kept whole instead (``body``, ``kept_answers``), until the change
log names a write that may move it.  A name or uuid
filter, and any provider, trait, aggregate or class the state does not
know, are left to SQL: it finds names as the database's collation
compares them (case-insensitively on MySQL), and raises upstream's
errors in upstream's order.
"""

import itertools
import re
import typing

from placement import json_encoding
from placement.state import kept_answers
from placement.state import queries
from placement.state import questions
from placement.state import shared
from placement.state import snapshot

# A tree of more providers than this is not kept: its owners would cost
# more than its answer.
TREE_OWNERS_AT_MOST = 1000


def _size(answer):
    return sum(map(len, answer[0]))


SHELF = kept_answers.Shelf('provider listings', size=_size)


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
    for any_of in required:
        # nova's sharing providers (member_of and the sharing trait) are
        # none of an aggregate's fifty members: look only at holders.
        holders = queries.holding_any_trait(state, any_of)
        if len(holders) < len(ids):
            ids = sorted(holders.intersection(ids))
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


def _fields(state, providers):
    """Each provider's fields as a listing shows them: (uuid, name,
    generation, parent's uuid, root's uuid), one at a time."""
    everyone = state.providers
    return ((provider.uuid, provider.name, provider.generation,
             (everyone[provider.parent].uuid if provider.parent is not None
              else None), everyone[provider.root].uuid)
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


class _Encoder:
    """A provider's body in ``shape`` as JSON text, from its fields
    (``_fields``): the same text orjson makes of ``shaped``'s dict,
    written from a template instead.  At 100,000 providers, making a dict
    of every link took three quarters of a listing's time."""

    # What a JSON string holds as it is: printable ASCII but the quote
    # and the backslash.
    _AS_IS = re.compile(r'[ !#-\[\]-~]*\Z')

    def __init__(self, shape):
        self.shape = shape
        root = self._inside(shape.root).replace('%', '%%')
        links = [',{"rel":"%s","href":"%s%%s%s"}' % (
            relation, root, self._inside(suffix).replace('%', '%%'))
            for relation, suffix in shape.suffixes]
        self._template = (
            '{"uuid":"%s","name":%s,"generation":%d,"links":['
            '{"rel":"self","href":"' + root + '%s"}' + ''.join(links) + ']'
            + (',"parent_provider_uuid":%s,"root_provider_uuid":%s}'
               if shape.with_tree else '%s%s}'))
        self._uuids = 2 + len(links)

    @classmethod
    def _inside(cls, text):
        """``text`` as it is within a JSON string."""
        return text if cls._AS_IS.match(text) else (
            json_encoding.encode_json(text).decode()[1:-1])

    @classmethod
    def _value(cls, text):
        if text is None:
            return 'null'
        return '"%s"' % text if cls._AS_IS.match(text) else (
            json_encoding.encode_json(text).decode())

    def __call__(self, fields):
        uuid, name, generation, parent, root = fields
        if not (self._AS_IS.match(uuid) and isinstance(generation, int)):
            return json_encoding.encode_json(shaped(self.shape, dict(zip(
                ('uuid', 'name', 'generation', 'parent_provider_uuid',
                 'root_provider_uuid'), fields)))).decode()
        tree = ((self._value(parent), self._value(root))
                if self.shape.with_tree else ('', ''))
        return self._template % (
            (uuid, self._value(name), generation) + (uuid,) * (
                self._uuids - 1) + tree)


def body(db, filters, shape):
    """(the body of the listing ``filters`` asks for in ``shape``, as
    pieces of JSON; when the latest of its providers changed) as a fresh
    read of the state of ``db`` gives it now; (None, None) when the
    listing is left to SQL (``matching``), or when no state reader took
    the question in time: SQL answers as exactly, where a state of this
    worker's own would cost it a whole read of the state (140 MB and
    seconds at 100,000 providers) and keep part of that memory after.
    Kept by this process while the change log names no write that may
    move it (``_owners``)."""
    def fresh():
        try:
            pieces, changed, owners = snapshot.answer(
                db, listing_body, filters, shape, own_state=False)
        except shared.Unreachable:
            return None, (None, None)
        return owners, (pieces, changed)
    return kept_answers.answer(db, SHELF, (_key(filters), shape), fresh)


def _key(filters):
    """What of ``filters`` the answer depends on, in plain values."""
    return (filters.in_tree, tuple(map(frozenset, filters.member_of)),
            frozenset(filters.forbidden_aggregates),
            tuple(map(frozenset, filters.required_traits)),
            frozenset(filters.forbidden_traits),
            tuple(sorted(filters.resources.items())))


def _owners(state, wanted):
    """The ``kept_answers`` owners of the listing ``wanted`` asks for:
    in a tree, every provider of the tree (a provider created in it or
    moved into it is logged with the tree's root); else a write to any
    provider, which may have joined an aggregate or taken a trait.  None
    for a tree too large to keep."""
    if wanted.in_tree is None:
        return [kept_answers.ANY_PROVIDER]
    members = state.members(state.provider_by_uuid(wanted.in_tree).root)
    if len(members) > TREE_OWNERS_AT_MOST:
        return None
    return [(kept_answers.PROVIDER, id_) for id_ in members]


@questions.question
def listing_body(state, filters, shape):
    """(the listing's body as pieces of JSON, when the latest of its
    providers changed, its ``kept_answers`` owners) from ``state``;
    (None, None, None) when the listing is left to SQL (``matching``)."""
    providers = matching(state, filters)
    if providers is None:
        return None, None, None
    changed = max((provider.changed_at for provider in providers
                   if provider.changed_at is not None), default=None)
    # Encoded a batch at a time: 100,000 providers' bodies are 74 MB of
    # JSON, and three times that as Python objects.
    encoder = _Encoder(shape)
    pieces = [b'{"resource_providers":[']
    fields = _fields(state, providers)
    while True:
        batch = [encoder(each) for each in itertools.islice(
            fields, json_encoding.ENCODE_BATCH)]
        if not batch:
            break
        if len(pieces) > 1:
            pieces.append(b',')
        pieces.append(','.join(batch).encode())
    pieces.append(b']}')
    return pieces, changed, _owners(state, filters)
