"""Falcon middleware filling ``req.context`` with services and credentials."""

from placement import context as placement_context
from placement import errors
from placement.middleware import auth
from placement.middleware import request_id


class RequestContextMiddleware:

    def __init__(self, conf, db, enforcer):
        self.conf = conf
        self.db = db
        self.enforcer = enforcer

    def process_request(self, req, resp):
        ctx = req.context
        ctx.conf = self.conf
        ctx.db = self.db
        ctx.enforcer = self.enforcer
        ctx.credentials = placement_context.credentials_from_environ(
            req.env, req.env.get(request_id.ENV_REQUEST_ID))
        if (ctx.credentials.user_id is None
                and req.path not in auth.PUBLIC_PATHS):
            raise errors.Unauthorized('The request carries no user identity.')
