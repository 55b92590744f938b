"""The query string of GET /allocation_candidates as a CandidateRequest.

Parsed in upstream's order, with upstream's messages and error codes:
the request-wide parameters first, then each request group in the order
its first parameter appears, then the checks that span groups.
"""

import functools
import re

from placement import error_codes
from placement import errors
from placement import microversion
from placement import schemas as schema_tables
from placement.candidates import request as candidate_request
from placement import query_params
from placement.schemas import allocation_candidate as schemas

FORBIDDEN_TRAITS_VERSION = (1, 22)
NAMED_SUFFIX_VERSION = (1, 33)
SAME_SUBTREE_VERSION = (1, 36)
NESTED_AWARE_VERSION = (1, 29)

_GROUP_KEY = {
    suffix: re.compile(r'^(%s)(%s)?$' % ('|'.join(schemas.GROUPED), suffix))
    for suffix in (schemas.NUMERIC_SUFFIX, schemas.NAMED_SUFFIX)}


def _root_required(query):
    """(required, forbidden) traits the root of every answer's tree must
    (not) have."""
    values = query.getall('root_required')
    if not values:
        return set(), set()
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=error_codes.ILLEGAL_DUPLICATE_QUERYPARAM)
    traits = query_params.flat_traits(values[0], allow_forbidden=True)
    forbidden = {name[1:] for name in traits if name.startswith('!')}
    required = {name for name in traits if not name.startswith('!')}
    conflicts = required & forbidden
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in '
            'root_required: %s' % ', '.join(sorted(conflicts)),
            code=error_codes.QUERYPARAM_BAD_VALUE)
    return required, forbidden


def _same_subtrees(query):
    """Each ``same_subtree`` value as a set of group suffixes."""
    result = []
    for value in query.getall('same_subtree'):
        suffixes = {part.strip() for part in value.split(',')}
        if '' in suffixes:
            raise errors.BadRequest(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=error_codes.QUERYPARAM_BAD_VALUE)
        result.append(suffixes)
    return result


def _groups(query, version):
    """{suffix: RequestGroup}, in the order the groups are first named."""
    pattern = _GROUP_KEY[schemas.NAMED_SUFFIX if version >= NAMED_SUFFIX_VERSION
                         else schemas.NUMERIC_SUFFIX]
    groups = {}
    for key, value in query.pairs:
        match = pattern.match(key)
        if not match:
            continue
        name, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(
            suffix, candidate_request.RequestGroup(suffix=suffix))
        if name == 'resources':
            group.resources = query_params.resources(value)
        elif name == 'required':
            group.required_traits, group.forbidden_traits = (
                query_params.required_traits(query, version, suffix))
        elif name == 'member_of':
            group.member_of, group.forbidden_aggregates = (
                query_params.member_of(query, version, suffix))
        else:
            group.in_tree = query_params.in_tree(value)
    return groups


def _check_resources_named(groups, same_subtrees):
    """From 1.36 a group may have no resources, if it is only there to be
    placed by ``same_subtree``."""
    resourceless = [suffix for suffix, group in groups.items()
                    if not group.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            'There must be at least one resources or resources[$S] '
            'parameter.', code=error_codes.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*same_subtrees)
    bad = [suffix for suffix in resourceless if suffix not in in_subtrees]
    if bad:
        raise errors.BadRequest(
            'Resourceless suffixed group request should be specified in '
            '`same_subtree` query param: bad group(s) - %s.' % bad,
            code=error_codes.QUERYPARAM_BAD_VALUE)
    unknown = [suffix for suffix in sorted(in_subtrees)
               if suffix not in groups]
    if unknown:
        raise errors.BadRequest(
            'Real suffixes should be specified in `same_subtree`: %s not '
            'found in %s.' % (unknown, list(groups)),
            code=error_codes.QUERYPARAM_BAD_VALUE)


def _check_no_orphans(groups):
    """Before 1.36 every group needs resources."""
    orphans = ['required%s' % suffix for suffix, group in groups.items()
               if group.required_traits and not group.resources]
    if orphans:
        raise errors.BadRequest(
            'All traits parameters must be associated with resources.  '
            'Found the following orphaned traits keys: %s'
            % ', '.join(orphans))
    orphans = ['member_of%s' % suffix for suffix, group in groups.items()
               if not group.resources and (group.member_of
                                           or group.forbidden_aggregates)]
    if orphans:
        raise errors.BadRequest(
            'All member_of parameters must be associated with resources. '
            'Found the following orphaned member_of keys: %s'
            % ', '.join(orphans))
    if not all(group.resources for group in groups.values()):
        raise errors.BadRequest('All request groups must specify resources.')
    if not groups:
        raise errors.BadRequest(
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')


def _check_not_both_required_and_forbidden(groups):
    conflicts = [
        'required%s: (%s)' % (suffix, ', '.join(sorted(any_of)))
        for suffix, group in groups.items()
        for any_of in group.required_traits
        if all(name in group.forbidden_traits for name in any_of)]
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(sorted(conflicts)))


@functools.lru_cache(maxsize=None)
def _parameter_schema(version, name):
    """The schema of one parameter alone: one object per (version, name),
    so that its validator is built once."""
    return {'type': 'object', 'properties': {
        name: schema_tables.for_version(schemas.GET_BY_VERSION, version)[
            'properties'][name]}}


def _first_valid(query, name, version):
    """The first value of a parameter that may be repeated, every value
    checked (the schema only sees the last one; upstream uses the first,
    unchecked, and fails with a 500 or ignores it)."""
    values = query.getall(name)
    for value in values:
        query_params.validate(query_params.Query([(name, value)]),
                              _parameter_schema(version, name))
    return values[0] if values else None


def parse(query, version):
    """The CandidateRequest of ``query`` (a query_params.Query, already
    validated against the version's schema) at ``version``."""
    limit = _first_valid(query, 'limit', version)
    group_policy = _first_valid(query, 'group_policy', version)
    root_required, root_forbidden = _root_required(query)
    same_subtrees = _same_subtrees(query)
    groups = _groups(query, version)
    if version >= SAME_SUBTREE_VERSION:
        _check_resources_named(groups, same_subtrees)
    else:
        _check_no_orphans(groups)
    if version >= FORBIDDEN_TRAITS_VERSION:
        _check_not_both_required_and_forbidden(groups)
    if not group_policy and sum(
            1 for group in groups.values() if group.granular) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more '
            'than one "resources{N}" parameter.')
    return candidate_request.CandidateRequest(
        groups=list(groups.values()),
        limit=int(limit) if limit else None,
        group_policy=group_policy,
        root_required=root_required, root_forbidden=root_forbidden,
        same_subtrees=same_subtrees,
        nested_aware=version >= NESTED_AWARE_VERSION)


def from_text(text):
    """The CandidateRequest a client or an operator writes as text: a
    flavor-like ``VCPU:4,MEMORY_MB:8192`` (the unsuffixed group's
    resources) or a whole query string, at the latest microversion, with
    the errors GET /allocation_candidates answers for it.

    ``text`` is text already decoded (from JSON or a configuration
    file), so it is read as the UTF-8 a query string would carry."""
    if '=' not in text:
        text = 'resources=' + text
    try:
        raw = text.strip().encode('utf-8').decode('latin-1')
    except UnicodeError as exc:
        raise errors.BadRequest('Invalid request text: %s' % exc)
    version = microversion.MAX_VERSION
    query = query_params.Query.parse(raw)
    query_params.validate(query, schema_tables.for_version(
        schemas.GET_BY_VERSION, version))
    return parse(query, version)
