"""``GET /``: version discovery, open to anyone."""

from placement import microversion
from placement.handlers import base
from placement.schemas import root as schemas


class Root(base.Resource):

    @base.operation('Discover the API versions',
                    responses={200: schemas.VERSIONS})
    def on_get(self, req, resp):
        base.send_json(req, resp, {'versions': [{
            'id': 'v%s' % microversion.MIN_VERSION_STRING,
            'max_version': microversion.MAX_VERSION_STRING,
            'min_version': microversion.MIN_VERSION_STRING,
            'status': 'CURRENT',
            # Relative on purpose: the service need not know the address
            # clients (or proxies) reach it by.
            'links': [{'rel': 'self', 'href': ''}],
        }]})
        base.send_cache_headers(req, resp, base.utcnow())
