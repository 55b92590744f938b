"""Handlers for inventory endpoints (being written)."""

from placement.handlers import base


class Inventories(base.Resource):
    pass


class Inventory(base.Resource):
    pass
