"""Handler for /allocation_candidates (1.10): GET, the scheduler's
question "which providers could satisfy this request?".

The query is parsed by ``candidate_query``, answered by the
candidate search, and serialized here in the shape each microversion
documents: allocation requests as a list (before 1.12) or keyed by
provider (from 1.12, with ``mappings`` from 1.34), provider summaries
with traits (1.17), every class of inventory (1.27) and tree uuids
(1.29).
"""

import contextlib
import functools
import itertools

from placement import errors
from placement import metrics
from placement.candidates import search
from placement.candidates import explain
from placement.candidates import filters
from placement.candidates import request as candidate_request
from placement.state import snapshot
from placement import candidate_query
from placement.handlers import base
from placement.handlers import json_pieces
from placement.policies import allocation_candidate as policies
from placement.schemas import allocation_candidate as schemas


def _allocation_request(version, allocations, mappings):
    if version < (1, 12):
        return {'allocations': [
            {'resource_provider': {'uuid': uuid},
             'resources': given['resources']}
            for uuid, given in allocations.items()]}
    if version >= (1, 34):
        return {'allocations': allocations, 'mappings': mappings}
    return {'allocations': allocations}


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


def candidates_body(state, request, settings, version):
    """(the answer's body as pieces of JSON, how many candidates) from
    ``state``, in the shape ``version`` documents."""
    found = search.Found(state, request, settings)
    # Encoded as they come: an unbounded answer at 100,000 providers is
    # never whole as Python objects.
    body = [b'{"allocation_requests":']
    body += json_pieces.json_array(itertools.starmap(
        functools.partial(_allocation_request, version),
        found.allocation_requests()))
    body.append(b',"provider_summaries":')
    body += json_pieces.json_object(found.provider_summaries(
        show_traits=version >= (1, 17),
        show_all_resources=version >= (1, 27)))
    body.append(b'}')
    if not found.count:
        explain.log_empty_answer(state, request)
    return body, found.count


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
                req.context.db, candidates_body, request,
                settings(req.context.conf), version)
        metrics.observe_candidates(count)
        json_pieces.send_json_pieces(req, resp, body)
        base.send_cache_headers(req, resp, base.utcnow())
