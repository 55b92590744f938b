"""Per-request state, kept on falcon's ``req.context``."""

from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from placement import errors


class RequestContext:
    """What a handler needs besides the request: who, which version, where.

    ``credentials`` is an oslo.context RequestContext built from the
    identity headers (set by keystonemiddleware or by noauth2), the shape
    oslo.policy expects.
    """

    def __init__(self):
        self.microversion = None
        self.credentials = None
        self.conf = None
        self.db = None
        self.enforcer = None

    @property
    def project_id(self):
        return self.credentials.project_id if self.credentials else None

    @property
    def user_id(self):
        return self.credentials.user_id if self.credentials else None

    def can(self, action, target=None):
        """Raise Forbidden unless policy allows ``action`` on ``target``."""
        if target is None:
            target = {'project_id': self.project_id,
                      'user_id': self.user_id}
        try:
            self.enforcer.authorize(action, target, self.credentials,
                                    do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
            raise errors.Forbidden(
                'Policy does not allow %s to be performed.' % action)
        except oslo_policy.InvalidScope:
            # Upstream words a token of the wrong scope differently: its
            # detail is the bare rule name.
            raise errors.Forbidden(action)


def credentials_from_environ(environ, request_id):
    return oslo_context.RequestContext.from_environ(
        environ, request_id=request_id)
