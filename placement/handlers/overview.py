"""Handlers for the overview, an extension of this service served at
every microversion (upstream has no such routes), read by the dashboard
at /ui/:

/overview                   GET  capacity and usage per resource class
/overview/providers         GET  providers with their capacity, a page
                                 at a time
/overview/providers/{uuid}  GET  a provider's whole tree, the sharing
                                 providers it reaches, its consumers

Answered from the in-memory candidate state (``placement.overview``),
exact as of the request.  Each checks its own policy rule and those of
the data it summarises.
"""

from placement import errors
from placement import microversion
from placement.candidates import filters
from placement.state import snapshot
from placement.handlers import base
from placement import query_params
from placement.overview import pages
from placement.overview import summary
from placement.overview import tree
from placement.policies import aggregate as aggregate_policies
from placement.policies import allocation as allocation_policies
from placement.policies import inventory as inventory_policies
from placement.policies import overview as policies
from placement.policies import resource_provider as provider_policies
from placement.policies import trait as trait_policies
from placement.policies import usage as usage_policies
from placement.schemas import overview as schemas

# What each answer shows, by the rules that guard it in upstream's API.
_CAPACITY_RULES = (provider_policies.LIST, inventory_policies.LIST,
                   usage_policies.PROVIDER_USAGES)
_TREE_RULES = (provider_policies.SHOW, inventory_policies.LIST,
               usage_policies.PROVIDER_USAGES, trait_policies.RP_TRAIT_LIST,
               aggregate_policies.LIST, allocation_policies.RP_ALLOC_LIST,
               allocation_policies.ALLOC_LIST)


def _authorize(req, rule, underlying):
    for name in (rule,) + underlying:
        req.context.can(name)


def _limit(query, name, default):
    value = query.get(name)
    return min(int(value), schemas.MAX_LIMIT) if value else default


class Summary(base.Resource):

    @base.operation(
        'Summarise capacity, usage and free units per resource class over '
        'every provider', query=schemas.SUMMARY_QUERY,
        responses={200: schemas.SUMMARY}, extension=True)
    def on_get(self, req, resp):
        _authorize(req, policies.SUMMARY, _CAPACITY_RULES)
        base.read_query(req)
        body = snapshot.answer(req.context.db, summary.summary)
        base.send_json(req, resp, body)


def _asked(query):
    """pages.Asked of the (validated) query; 400 where it is malformed."""
    required, forbidden = query_params.required_traits(
        query, microversion.MAX_VERSION)
    member_of, forbidden_aggregates = query_params.member_of(
        query, microversion.MAX_VERSION)
    free = []
    if query.get('free'):
        for item in query.get('free').split(','):
            name, amount = item.split(':')
            free.append((name, int(amount)))
    in_tree = query.get('in_tree')
    return pages.Asked(
        wanted=pages.Wanted(
            prefix=query.get('prefix'),
            member_of=tuple(frozenset(uuids) for uuids in member_of),
            forbidden_aggregates=frozenset(forbidden_aggregates),
            in_tree=query_params.in_tree(in_tree) if in_tree else None,
            limit=_limit(query, 'limit', schemas.DEFAULT_LIMIT),
            marker=query.get('marker')),
        required=tuple(frozenset(names) for names in required),
        forbidden=frozenset(forbidden), free=tuple(free))


class Providers(base.Resource):

    @base.operation(
        'List providers with their capacity and usage, filtered, a page '
        'at a time', query=schemas.PROVIDERS_QUERY,
        responses={200: schemas.PROVIDERS}, extension=True)
    def on_get(self, req, resp):
        _authorize(req, policies.PROVIDERS, _CAPACITY_RULES)
        query = base.read_query(req)
        try:
            body = snapshot.answer(req.context.db, pages.page_body,
                                   _asked(query))
        except (filters.UnknownTrait, filters.UnknownResourceClass) as exc:
            raise errors.BadRequest(exc.message)
        except pages.UnknownMarker as exc:
            raise errors.BadRequest(str(exc))
        base.send_json(req, resp, body)


class Provider(base.Resource):

    @base.operation(
        'Show a provider\'s whole tree with capacity and usage, the '
        'sharing providers it reaches and the consumers holding there',
        query=schemas.PROVIDER_QUERY, responses={200: schemas.PROVIDER},
        extension=True)
    def on_get(self, req, resp, uuid):
        _authorize(req, policies.PROVIDER, _TREE_RULES)
        query = base.read_query(req)
        limit = _limit(query, 'consumer_limit',
                       schemas.DEFAULT_CONSUMER_LIMIT)
        found = snapshot.answer(req.context.db, tree.tree_of, uuid)
        if found is None:
            raise errors.NotFound(
                'No resource provider with uuid %s found' % uuid)
        body, pairs, names = found
        # The allocations are read once the state is let go: the
        # candidate searches of this process wait on it.
        body['consumers'], body['consumer_count'] = tree.consumers(
            req.context.db, pairs, names, limit)
        base.send_json(req, resp, body)
