"""Handlers for resource provider endpoints (being written)."""

from placement.handlers import base


class ResourceProviders(base.Resource):
    pass


class ResourceProvider(base.Resource):
    pass
