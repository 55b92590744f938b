"""Query strings of the filtering endpoints, parsed as upstream parses them.

``GET /resource_providers`` and ``GET /allocation_candidates`` accept the
same filter values (``resources``, ``required``, ``member_of``,
``in_tree``) with the same microversion rules and the same error texts,
which clients match on; both endpoints use these functions so the two
cannot drift apart.

Values come out as plain Python data, ready for storage:

- resources: ``{resource class name: amount}``
- required traits: ``([{name, ...}, ...], {forbidden name, ...})``; each
  set in the list is satisfied by any one of its traits, and every set
  must be satisfied
- member_of: ``([{aggregate uuid, ...}, ...], {forbidden uuid, ...})`` with
  the same any-of / all-of shape
"""

import json
import re
import urllib.parse
import uuid as uuidlib

from placement import errors
from placement import input_checks
from placement.schemas import validation

_INVALID = 'Invalid query string parameters: %s'
_RESOURCES_FORM = ('Badly formed resources parameter. Expected resources '
                   'query string parameter in form: '
                   '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')

# Microversions that change how values are read.
FORBIDDEN_TRAITS_VERSION = (1, 22)
MULTIPLE_MEMBER_OF_VERSION = (1, 24)
FORBIDDEN_AGGREGATES_VERSION = (1, 32)
ANY_TRAITS_VERSION = (1, 39)


class Query:
    """The query string as ordered (name, value) pairs.

    Decoded exactly as upstream's WSGI layer decodes it: ``&`` and ``;``
    both separate pairs, ``+`` is a space, a name without ``=`` has the
    empty value, and bytes that are not UTF-8 are a 400 rather than being
    silently replaced.
    """

    def __init__(self, pairs):
        self.pairs = list(pairs)

    @classmethod
    def from_request(cls, req):
        return cls.parse(req.query_string or '')

    @classmethod
    def parse(cls, query_string):
        raw = query_string.encode('latin-1').replace(b'+', b' ')
        pairs = []
        try:
            for item in re.split(b'[&;]', raw):
                if not item:
                    continue
                name, _, value = item.partition(b'=')
                pairs.append((
                    urllib.parse.unquote_to_bytes(name).decode('utf-8'),
                    urllib.parse.unquote_to_bytes(value).decode('utf-8')))
        except UnicodeDecodeError as exc:
            raise errors.BadRequest(_INVALID % exc)
        for name, value in pairs:
            problem = (input_checks.unstorable(name)
                       or input_checks.unstorable(value))
            if problem:
                raise errors.BadRequest(_INVALID % (
                    'parameter %s: %s' % (json.dumps(name), problem)))
        return cls(pairs)

    def __contains__(self, name):
        return any(key == name for key, _ in self.pairs)

    def getall(self, name):
        """Every value given for ``name``, in request order."""
        return [value for key, value in self.pairs if key == name]

    def get(self, name, default=None):
        """The last value given for ``name`` (a repeated key's last wins)."""
        values = self.getall(name)
        return values[-1] if values else default

    def as_dict(self):
        """{name: last value}, in order of first appearance."""
        result = {}
        for key, _ in self.pairs:
            result.setdefault(key, None)
        for key, value in self.pairs:
            result[key] = value
        return result


def validate(query, schema):
    """400 unless the query (one value per name) matches ``schema``."""
    try:
        validation.check(query.as_dict(), schema, validation.QUERY_FORMATS)
    except validation.Invalid as exc:
        raise errors.BadRequest(_INVALID % exc)


def is_uuid_like(value):
    """True for a uuid in any spelling Python's UUID reads back unchanged
    (dashed or not, any case, in braces, with a ``urn:uuid:`` prefix)."""
    try:
        canonical = str(uuidlib.UUID(value)).replace('-', '')
    except (TypeError, ValueError, AttributeError):
        return False
    bare = (value.replace('urn:', '').replace('uuid:', '').strip('{}')
            .replace('-', '').lower())
    return canonical == bare


def resources(value):
    """``"VCPU:2,MEMORY_MB:1024"`` as ``{"VCPU": 2, "MEMORY_MB": 1024}``."""
    if value.strip() == '':
        raise errors.BadRequest(_RESOURCES_FORM % 'empty string')
    amounts = {}
    for item in value.split(','):
        try:
            name, amount = item.split(':')
        except ValueError:
            raise errors.BadRequest(_RESOURCES_FORM % item)
        try:
            amount = int(amount)
        except ValueError:
            raise errors.BadRequest(
                'Requested resource %s expected positive integer amount. '
                'Got: %s.' % (name, amount))
        if amount < 1:
            raise errors.BadRequest(
                'Requested resource %s requires amount >= 1. Got: %d.'
                % (name, amount))
        amounts[name] = amount
    return amounts


def _any_traits(value):
    """The traits of an ``in:A,B`` value: one set, any of which will do."""
    names = {name.strip() for name in value[3:].split(',')}
    if not all(names):
        raise errors.BadRequest(_INVALID % (
            "Expected 'required' parameter value of the form: "
            "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s"
            % value))
    if any(name.startswith('!') for name in names):
        raise errors.BadRequest(_INVALID % (
            "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support "
            "forbidden traits. Got: %s" % value))
    return [names], set()


def traits(value, allow_forbidden=False, allow_any=False):
    """One ``required`` value as (required trait sets, forbidden traits).

    ``A,!B`` requires A and forbids B (forbidding needs
    ``allow_forbidden``); ``in:A,B`` requires A or B (needs ``allow_any``).
    Any number of leading ``!`` count as one, as upstream has always
    (accidentally, but now compatibly) read them.
    """
    if value.startswith('in:'):
        if not allow_any:
            raise errors.BadRequest(_INVALID % (
                "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                "since microversion 1.39. Got: %s" % value))
        return _any_traits(value)
    names = [name.strip() for name in value.split(',')]
    forbidden = {name.lstrip('!') for name in names if name.startswith('!')}
    if not all(names) or not all(forbidden):
        expected = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden
                    else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
        raise errors.BadRequest(_INVALID % (
            "Expected 'required' parameter value of the form: %s. "
            "Got an empty trait in: %s" % (expected, value)))
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(_INVALID % (
            "Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value))
    required = [{name} for name in names if not name.startswith('!')]
    return required, forbidden


def flat_traits(value, allow_forbidden=False):
    """One traits value without ``in:`` as a flat set of names, forbidden
    ones keeping their ``!`` (the form ``root_required`` uses)."""
    required, forbidden = traits(value, allow_forbidden)
    return ({name for names in required for name in names}
            | {'!' + name for name in forbidden})


def required_traits(query, version, suffix=''):
    """The ``required<suffix>`` parameters as (trait sets, forbidden).

    Before 1.39 only the last of repeated parameters counts; from 1.39
    each one is another condition that must hold.
    """
    values = query.getall('required' + suffix)
    allow_any = version >= ANY_TRAITS_VERSION
    if not allow_any:
        values = values[-1:]
    required, forbidden = [], set()
    for value in values:
        more_required, more_forbidden = traits(
            value, version >= FORBIDDEN_TRAITS_VERSION, allow_any)
        required += more_required
        forbidden |= more_forbidden
    return required, forbidden


def member_of_value(value):
    """One ``member_of`` value as (any-of uuids, forbidden uuids).

    ``U``, ``in:U1,U2``, ``!U`` and ``!in:U1,U2`` are the forms; a list
    needs its ``in:`` prefix.
    """
    if ',' in value and not value.startswith(('in:', '!in:')):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % value)
    required = forbidden = set()
    if value.startswith('!in:'):
        forbidden = set(value[4:].split(','))
    elif value.startswith('!'):
        forbidden = {value[1:]}
    elif value.startswith('in:'):
        required = set(value[3:].split(','))
    else:
        required = {value}
    for aggregate_uuid in required | forbidden:
        if not is_uuid_like(aggregate_uuid):
            raise errors.BadRequest(_INVALID % (
                "Expected 'member_of' parameter to contain valid UUID(s). "
                "Got: %s" % aggregate_uuid))
    return required, forbidden


def member_of(query, version, suffix=''):
    """The ``member_of<suffix>`` parameters as (uuid sets, forbidden).

    Repeating the parameter (each one another condition) needs 1.24,
    forbidding aggregates 1.32.
    """
    name = 'member_of' + suffix
    values = query.getall(name)
    if version < MULTIPLE_MEMBER_OF_VERSION and len(values) > 1:
        raise errors.BadRequest(
            'Multiple %s parameters are not supported' % name)
    required, forbidden = [], set()
    for value in values:
        any_of, none_of = member_of_value(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if version < FORBIDDEN_AGGREGATES_VERSION:
                raise errors.BadRequest(
                    'Forbidden %s parameters are not supported in the '
                    'specified microversion' % name)
            forbidden |= none_of
    return required, forbidden


def in_tree(value):
    """An ``in_tree`` value: a provider uuid, surrounding blanks ignored."""
    stripped = value.strip()
    if not is_uuid_like(stripped):
        raise errors.BadRequest(_INVALID % (
            "Expected 'in_tree' parameter to be a format of uuid. Got: %s"
            % value))
    return stripped
