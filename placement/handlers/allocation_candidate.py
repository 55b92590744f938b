"""Handler for /allocation_candidates (1.10): GET, the scheduler's
question "which providers could satisfy this request?".

The query is parsed by ``candidate_query`` and answered from the state
by ``candidates.answer`` (the search, in the shape each microversion
documents).
"""

import contextlib

from placement import errors
from placement import metrics
from placement.candidates import answer
from placement.candidates import filters
from placement.candidates import request as candidate_request
from placement.state import snapshot
from placement import candidate_query
from placement.handlers import base
from placement.handlers import json_pieces
from placement.policies import allocation_candidate as policies
from placement.schemas import allocation_candidate as schemas


def settings(conf):
    """The engine's settings from the configuration, read per request
    (options changed at run time apply at once)."""
    return candidate_request.Settings(
        max_candidates=conf.placement.max_allocation_candidates,
        randomize=conf.placement.randomize_allocation_candidates,
        breadth_first=(
            conf.placement.allocation_candidates_generation_strategy
            == 'breadth-first'))


@contextlib.contextmanager
def unknown_names_refused():
    """An unknown class or trait in the query, answered as upstream's
    candidates answer it."""
    try:
        yield
    except filters.UnknownResourceClass as exc:
        raise errors.BadRequest(
            'Invalid resource class in resources parameter: %s'
            % exc.message)
    except filters.UnknownTrait as exc:
        raise errors.BadRequest(exc.message)


class AllocationCandidates(base.Resource):

    @base.operation('Find allocation candidates', since='1.10',
                    query=schemas.GET_BY_VERSION,
                    responses={200: schemas.CANDIDATES})
    def on_get(self, req, resp):
        req.context.can(policies.LIST)
        version = tuple(req.context.microversion)
        query = base.read_query(req)
        request = candidate_query.parse(query, version)
        with unknown_names_refused():
            body, count = snapshot.answer(
                req.context.db, answer.candidates_body, request,
                settings(req.context.conf), version)
        metrics.observe_candidates(count)
        json_pieces.send_json_pieces(req, resp, body)
        base.send_cache_headers(req, resp, base.utcnow())
