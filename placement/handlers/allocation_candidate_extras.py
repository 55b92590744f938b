"""Handlers for GET /allocation_candidates/explain and
GET /allocation_candidates/capacity: extensions of this service, never
sent by upstream's clients.

Both take the query string of GET /allocation_candidates at the request's
microversion, parsed and validated by the same code, so they fail with
the same errors; they exist where it does (1.10 on; below, 404 as it
answers), and need its policy rule and their own.
"""

from placement.candidates import capacity
from placement.candidates import explain
from placement.state import snapshot
from placement.handlers import allocation_candidate
from placement import candidate_query
from placement.handlers import base
from placement.policies import allocation_candidate as candidate_policies
from placement.policies import allocation_candidate_extras as policies
from placement.schemas import allocation_candidate as schemas
from placement.schemas import allocation_candidate_extras as extra_schemas
from placement.storage import provider_names


def _request(req, rule):
    """The parsed request, once both policy rules allow it."""
    req.context.can(candidate_policies.LIST)
    req.context.can(rule)
    query = base.read_query(req)
    return candidate_query.parse(
        query, tuple(req.context.microversion))


def _examples(body):
    for group in body['groups']:
        for step in group['constraints']:
            yield from step['examples']
    for step in body['combination']:
        yield from step['examples']


class Explain(base.Resource):

    @base.operation(
        'Explain which constraints removed which providers and trees for '
        'an allocation-candidates request', since='1.10',
        query=schemas.GET_BY_VERSION,
        responses={200: extra_schemas.EXPLAIN}, extension=True)
    def on_get(self, req, resp):
        request = _request(req, policies.EXPLAIN)
        settings = allocation_candidate.settings(req.context.conf)
        with allocation_candidate.unknown_names_refused():
            body = snapshot.answer(req.context.db, explain.explain,
                                   request, settings)
        examples = list(_examples(body))
        names = req.context.db.read(
            provider_names.by_uuid, [item['uuid'] for item in examples])
        for item in examples:
            item['name'] = names.get(item['uuid'])
        base.send_json(req, resp, body)


class Capacity(base.Resource):

    @base.operation(
        'Count how many copies of an allocation-candidates request fit in '
        'each tree now', since='1.10', query=schemas.GET_BY_VERSION,
        responses={200: extra_schemas.CAPACITY}, extension=True)
    def on_get(self, req, resp):
        request = _request(req, policies.CAPACITY)
        with allocation_candidate.unknown_names_refused():
            body = snapshot.answer(req.context.db, capacity.capacity,
                                   request)
        base.send_json(req, resp, body)
