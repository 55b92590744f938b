"""Authentication: keystonemiddleware, or noauth2 for tests and development.

Both end with the identity in the standard keystone headers
(X_USER_ID, X_PROJECT_ID, X_ROLES, OpenStack-System-Scope); the context
middleware turns those into credentials.  ``GET /`` (version discovery)
and the OpenAPI document never need a token.
"""

from placement import openapi

ROOT_PATHS = ('', '/')
PUBLIC_PATHS = ROOT_PATHS + (openapi.PATH,)


class NoAuth:
    """Falcon middleware trusting ``X-Auth-Token: user[:project]``.

    Roles come from ``X-Roles``; without it the token ``admin`` alone
    means the admin role.  A system-scoped request (header
    ``OpenStack-System-Scope``) has no project.
    """

    def process_request(self, req, resp):
        if req.path in PUBLIC_PATHS:
            return
        token = req.get_header('X-Auth-Token')
        if token is None:
            return  # no identity: the context middleware answers 401
        user_id, _sep, project_id = token.partition(':')
        env = req.env
        if 'HTTP_X_ROLES' in env:
            roles = env['HTTP_X_ROLES'].split(',')
        elif user_id == 'admin':
            roles = ['admin']
        else:
            roles = []
        env['HTTP_X_USER_ID'] = user_id
        if not env.get('HTTP_OPENSTACK_SYSTEM_SCOPE'):
            env['HTTP_X_TENANT_ID'] = project_id or user_id
        env['HTTP_X_ROLES'] = ','.join(roles)
