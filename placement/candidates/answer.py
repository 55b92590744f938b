"""The answer to GET /allocation_candidates, from the state: the
question the handler asks (``state.questions``), in the shape each
microversion documents: allocation requests as a list (before 1.12) or
keyed by provider (from 1.12, with ``mappings`` from 1.34), provider
summaries with traits (1.17) and every class of inventory (1.27).
"""

import functools
import itertools

from placement import json_encoding
from placement.candidates import explain
from placement.candidates import search
from placement.state import questions


def _allocation_request(version, allocations, mappings):
    if version < (1, 12):
        return {'allocations': [
            {'resource_provider': {'uuid': uuid},
             'resources': given['resources']}
            for uuid, given in allocations.items()]}
    if version >= (1, 34):
        return {'allocations': allocations, 'mappings': mappings}
    return {'allocations': allocations}


@questions.question
def candidates_body(state, request, settings, version):
    """(the answer's body as pieces of JSON, how many candidates) from
    ``state``, in the shape ``version`` documents."""
    found = search.Found(state, request, settings)
    # Encoded as they come: an unbounded answer at 100,000 providers is
    # never whole as Python objects.
    body = [b'{"allocation_requests":']
    body += json_encoding.json_array(itertools.starmap(
        functools.partial(_allocation_request, version),
        found.allocation_requests()))
    body.append(b',"provider_summaries":')
    body += json_encoding.json_object(found.provider_summaries(
        show_traits=version >= (1, 17),
        show_all_resources=version >= (1, 27)))
    body.append(b'}')
    if not found.count:
        explain.log_empty_answer(state, request)
    return body, found.count
