"""Handlers for trait endpoints (being written)."""

from placement.handlers import base


class Traits(base.Resource):
    pass


class Trait(base.Resource):
    pass


class ProviderTraits(base.Resource):
    pass
