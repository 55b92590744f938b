"""Handlers for /resource_providers/{uuid}/aggregates (microversion 1.1+).

From 1.19 the provider generation travels with the list both ways, and a
PUT must name the current generation and bumps it; before that a PUT
replaced the list without touching the generation.
"""

from placement import microversion
from placement.state import provider_reads
from placement.handlers import base
from placement.policies import aggregate as policies
from placement.schemas import aggregate as schemas
from placement.storage import aggregates as storage
from placement.storage import providers_core
from placement.storage import tables

_GENERATION_VERSION = '1.19'


def _send_aggregates(req, resp, aggregate_uuids, generation):
    body = {'aggregates': aggregate_uuids}
    if microversion.is_at_least(req, _GENERATION_VERSION):
        body['resource_provider_generation'] = generation
    base.send_json(req, resp, body)
    # Memberships carry no meaningful timestamp of their own, so (like
    # upstream) the list is always reported as modified just now.
    base.send_cache_headers(req, resp, tables.utcnow())


class ProviderAggregates(base.Resource):

    @base.operation("List a provider's aggregates", since='1.1',
                    responses={200: schemas.AGGREGATES})
    def on_get(self, req, resp, uuid):
        req.context.can(policies.LIST)
        generation, aggregate_uuids = provider_reads.aggregates(
            req.context.db, uuid)
        _send_aggregates(req, resp, aggregate_uuids, generation)

    @base.require_json
    @base.operation("Replace a provider's aggregates", since='1.1',
                    body=(((1, 19), schemas.PUT_1_19),
                          ((1, 1), schemas.PUT_1_1)),
                    responses={200: schemas.AGGREGATES})
    def on_put(self, req, resp, uuid):
        req.context.can(policies.UPDATE)
        # An unknown provider is a 404 even when the body is also bad.
        req.context.db.read(providers_core.get_by_uuid, uuid)
        with_generation = microversion.is_at_least(req, _GENERATION_VERSION)
        data = base.read_body(req)
        if with_generation:
            aggregate_uuids = data['aggregates']
            expected_generation = data['resource_provider_generation']
        else:
            aggregate_uuids, expected_generation = data, None
        generation = req.context.db.write(
            storage.set_provider_aggregates, uuid, aggregate_uuids,
            expected_generation)
        # The reply echoes the list as the client sent it.
        _send_aggregates(req, resp, aggregate_uuids, generation)
