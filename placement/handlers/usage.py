"""Handlers for usage reports.

/resource_providers/{uuid}/usages   GET
/usages                             GET (1.9; by consumer type from 1.38)

Usage is what is allocated now, so (as upstream) Last-Modified is always
the time of the answer.
"""

from placement import errors
from placement.state import provider_reads
from placement.handlers import base
from placement import query_params
from placement.policies import usage as policies
from placement.schemas import usage as schemas
from placement.storage import exceptions as storage_exc
from placement.state import project_usages

CONSUMER_TYPE_VERSION = (1, 38)


class ProviderUsages(base.Resource):

    @base.operation("Show a provider's usages",
                    responses={200: schemas.PROVIDER_USAGES})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.PROVIDER_USAGES)
        try:
            generation, usages = provider_reads.usages(req.context.db, uuid)
        except storage_exc.NotFound as exc:
            raise errors.NotFound('No resource provider with uuid %s found: '
                                  '%s' % (uuid, exc.message))
        base.send_json(req, resp, {
            'resource_provider_generation': generation,
            'usages': usages})
        base.send_cache_headers(req, resp, base.utcnow())


class Usages(base.Resource):

    @base.operation("Show a project's (or user's) usages", since='1.9',
                    query=(((1, 38), schemas.GET_1_38),
                           ((1, 9), schemas.GET_1_9)),
                    responses={200: schemas.USAGES})
    def on_get(self, req, resp):
        query = query_params.Query.from_request(req)
        project_id = query.get('project_id')
        # The project asked about is the policy target: a project reader
        # may see its own project's usage.
        req.context.can(policies.TOTAL_USAGES,
                        target={'project_id': project_id})
        by_type = tuple(req.context.microversion) >= CONSUMER_TYPE_VERSION
        base.validate_query(req, query)
        user_id = query.get('user_id')
        if by_type:
            usages = project_usages.for_project_by_type(
                req.context.db, project_id, user_id,
                query.get('consumer_type'))
        else:
            usages = project_usages.for_project(
                req.context.db, project_id, user_id)
        base.send_json(req, resp, {'usages': usages})
        base.send_cache_headers(req, resp, base.utcnow())
