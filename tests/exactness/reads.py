"""The reads a step compares: every read the service answers from memory
(the listing with its filters, a provider's usages, traits and
aggregates, project usages, the overview and its pages and trees,
allocation candidates with explain and capacity, the audit), drawn
afresh at each step from what the cloud holds.
"""

import dataclasses
import urllib.parse
import uuid as uuidlib

import webob.multidict

from placement import query_params
from placement.storage import resource_providers as rp_storage
from tests.exactness import history
from tests.functional import candidates_reference as ref

VERSION = (1, 39)


@dataclasses.dataclass
class Listing:
    """A ``GET /resource_providers`` query, as a query string."""
    query: str

    @property
    def path(self):
        return '/resource_providers' + ('?' + self.query if self.query
                                        else '')

    def filters(self):
        """The query as the storage's SQL listing takes it (as the
        handler parses it)."""
        query = webob.multidict.MultiDict(
            urllib.parse.parse_qsl(self.query))
        filters = rp_storage.Filters(in_tree=query.get('in_tree'))
        if 'member_of' in query:
            filters.member_of, filters.forbidden_aggregates = (
                query_params.member_of(query, VERSION))
        if 'required' in query:
            filters.required_traits, filters.forbidden_traits = (
                query_params.required_traits(query, VERSION))
        if 'resources' in query:
            filters.resources = query_params.resources(query['resources'])
        return filters


def listings(rng, truth, writer, count=4):
    """The plain listing and ``count`` filtered ones."""
    def one_filter():
        kind = rng.choice(('in_tree', 'member_of', 'member_of_in',
                           'member_of_not', 'required', 'required_not',
                           'required_in', 'resources'))
        aggregates = writer.aggregates
        if kind == 'in_tree':
            return 'in_tree=' + (rng.choice(truth.uuids()) if truth.providers
                                 else writer.uuid())
        if kind == 'member_of':
            return 'member_of=' + rng.choice(aggregates)
        if kind == 'member_of_in':
            return 'member_of=in:' + ','.join(rng.sample(aggregates, 2))
        if kind == 'member_of_not':
            return 'member_of=!' + rng.choice(aggregates)
        if kind == 'required':
            return 'required=' + rng.choice(history.TRAITS)
        if kind == 'required_not':
            return 'required=!' + rng.choice(history.TRAITS)
        if kind == 'required_in':
            return 'required=in:' + ','.join(rng.sample(history.TRAITS, 2))
        return 'resources=' + ','.join(
            '%s:%d' % (rc, rng.choice((1, 2, 8)))
            for rc in sorted(rng.sample(history.CLASSES[:3],
                                        rng.randint(1, 2))))

    found = [Listing('')]
    for _ in range(count):
        parts = {one_filter() for _ in range(rng.randint(1, 2))}
        found.append(Listing('&'.join(sorted(parts))))
    return found


def provider_paths(rng, truth, most=4):
    """A provider's usages, traits, aggregates and allocations, for a few
    providers."""
    chosen = rng.sample(truth.uuids(), min(most, len(truth.providers)))
    return [(uuid, '/resource_providers/%s/%s' % (uuid, what))
            for uuid in chosen
            for what in ('usages', 'traits', 'aggregates', 'allocations')]


def consumer_paths(rng, truth, most=4):
    """A few consumers' allocations, and one of a consumer that holds
    nothing."""
    known = sorted(truth.consumers)
    chosen = rng.sample(known, min(most, len(known)))
    chosen.append(str(uuidlib.UUID(int=rng.getrandbits(128), version=4)))
    return [(uuid, '/allocations/' + uuid) for uuid in chosen]


def project_queries(writer):
    """(project, user, consumer type, path) for each project: alone, with
    a user, with a consumer type."""
    found = []
    for project in writer.projects:
        found.append((project, None, None, '/usages?project_id=' + project))
        for user in writer.users:
            found.append((project, user, None, '/usages?project_id=%s'
                          '&user_id=%s' % (project, user)))
        for kind in history.CONSUMER_TYPES:
            found.append((project, None, kind, '/usages?project_id=%s'
                          '&consumer_type=%s' % (project, kind)))
    return found


def overview_paths(rng, truth):
    paths = ['/overview', '/overview/providers?limit=3',
             '/overview/providers?free=VCPU:1&limit=50']
    if truth.providers:
        uuid = rng.choice(truth.uuids())
        paths += ['/overview/providers/' + uuid,
                  '/overview/providers?limit=3&marker=' + uuid]
    return paths


def candidate_requests(rng, truth, writer, count=3):
    """``count`` candidate requests (``candidates_reference.Request``)
    over the classes, traits and aggregates the history uses."""
    found = []
    for _ in range(count):
        groups = {'': ref.Group(_amounts(rng))}
        if rng.random() < 0.5:
            groups['1'] = ref.Group(_amounts(rng, most=1))
        for group in groups.values():
            if rng.random() < 0.3:
                group.required = (frozenset([rng.choice(
                    history.TRAITS[:3])]),)
            if rng.random() < 0.2:
                required = set().union(*group.required)
                group.forbidden = frozenset([rng.choice([
                    name for name in history.TRAITS[:3]
                    if name not in required])])
            if rng.random() < 0.25:
                group.member_of = (frozenset(rng.sample(
                    writer.aggregates, rng.randint(1, 2))),)
        if truth.providers and rng.random() < 0.2:
            groups[''].in_tree = rng.choice(truth.uuids())
        request = ref.Request(groups)
        if len(groups) > 1:
            request.group_policy = rng.choice(('none', 'isolate'))
        found.append(request)
    return found


def names_known(request, truth):
    """Whether every trait and class ``request`` names exists (a name
    the history dropped makes it a 400)."""
    for group in request.groups.values():
        traits = set(group.forbidden).union(*group.required)
        if not (traits <= truth.trait_names
                and set(group.resources) <= truth.class_names):
            return False
    return True


def _amounts(rng, most=2):
    classes = rng.sample(history.CLASSES, rng.randint(1, most))
    return {rc: rng.choice((1, 1, 2, 4)) for rc in classes}


def candidate_extras(rng):
    """Explain and capacity, which answer from the state too."""
    rc = rng.choice(history.CLASSES)
    return ['/allocation_candidates/explain?resources=%s:1' % rc,
            '/allocation_candidates/capacity?resources=%s:1' % rc,
            '/audit']
