"""keystonemiddleware's auth_token, kept out of the noauth2 import path.

Imported only when ``[api] auth_strategy = keystone``: keystonemiddleware is
heavy to import and a noauth2 server (tests, development) never needs it.
"""

from keystonemiddleware import auth_token

from placement.middleware import auth


class KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for version discovery."""

    def __init__(self, application, conf):
        self._unprotected = application
        super().__init__(application, {'oslo_config_config': conf})

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in auth.PUBLIC_PATHS:
            return self._unprotected(environ, start_response)
        return super().__call__(environ, start_response)
