"""Handlers for aggregate endpoints (being written)."""

from placement.handlers import base


class ProviderAggregates(base.Resource):
    pass
