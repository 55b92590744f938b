"""Handlers for the audit, an extension of this service served at every
microversion (upstream has no such route):

/audit          GET   leaked and impossible allocations, unusable
                      inventory
/audit/what_if  POST  what changed inventories would do; writes nothing
"""

from placement import errors
from placement import microversion
from placement.audit import findings
from placement.audit import what_if
from placement.candidates import filters
from placement import candidate_query
from placement.handlers import base
from placement import query_params
from placement.policies import audit as policies
from placement.schemas import audit as schemas


def _scope(query):
    """findings.Scope of the (validated) query string."""
    kinds = query.get('kind')
    in_tree = query.get('in_tree')
    member_of, forbidden = query_params.member_of(query,
                                                  microversion.MAX_VERSION)
    stale_after = query.get('stale_after')
    limit = query.get('limit')
    return findings.Scope(
        kinds=(tuple(kind for kind in findings.KINDS
                     if kind in kinds.split(',')) if kinds
               else findings.KINDS),
        stale_after=(int(stale_after) if stale_after is not None
                     else findings.STALE_AFTER),
        in_tree=query_params.in_tree(in_tree) if in_tree else None,
        member_of=tuple(frozenset(uuids) for uuids in member_of),
        forbidden_aggregates=frozenset(forbidden),
        project_id=query.get('project_id'),
        limit=int(limit) if limit is not None else None)


class Audit(base.Resource):

    @base.operation(
        'List allocations over capacity, consumers split across trees, '
        'stale migrations and unusable inventory',
        query=schemas.GET_QUERY, responses={200: schemas.AUDIT},
        extension=True)
    def on_get(self, req, resp):
        req.context.can(policies.AUDIT)
        scope = _scope(base.read_query(req))
        base.send_json(req, resp, findings.audit(req.context.db, scope))


class WhatIf(base.Resource):

    @base.operation(
        'Say what changed inventories would do, writing nothing',
        body=schemas.WHAT_IF, responses={200: schemas.WHAT_IF_ANSWER},
        extension=True)
    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.WHAT_IF)
        data = base.read_body(req)
        for uuid in list(data.get('inventories', {})) + list(
                data.get('by_aggregate', {})):
            if not query_params.is_uuid_like(uuid):
                raise errors.BadRequest('%s is not a uuid.' % uuid)
        request = None
        if 'resources' in data:
            request = candidate_query.from_text(
                data['resources'])
        changes = what_if.Changes(
            inventories=data.get('inventories', {}),
            by_aggregate=data.get('by_aggregate', {}),
            by_trait=data.get('by_trait', {}))
        try:
            body = what_if.what_if(req.context.db, changes, request)
        except what_if.Invalid as exc:
            raise errors.BadRequest(str(exc))
        except (filters.UnknownResourceClass, filters.UnknownTrait) as exc:
            raise errors.BadRequest(exc.message)
        base.send_json(req, resp, body)
