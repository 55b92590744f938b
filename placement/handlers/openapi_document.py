"""``GET /openapi.json``: the OpenAPI document of this API, open to anyone
(like version discovery) and the same at every microversion."""

import json

from placement import openapi
from placement.handlers import base


class OpenAPIDocument(base.Resource):
    """Serves the document of ``api_routes`` (and of itself), built on
    the first request: the route table does not change while serving."""

    def __init__(self, api_routes):
        self._routes = list(api_routes) + [(openapi.PATH, self)]
        self._text = None

    @base.operation('This document', responses={200: {'type': 'object'}})
    def on_get(self, req, resp):
        if self._text is None:
            self._text = json.dumps(openapi.document(self._routes))
        resp.content_type = base.JSON
        resp.text = self._text
