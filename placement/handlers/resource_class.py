"""Handlers for resource class endpoints (being written)."""

from placement.handlers import base


class ResourceClasses(base.Resource):
    pass


class ResourceClass(base.Resource):
    pass
