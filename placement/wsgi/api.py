"""``placement.wsgi.api:application``, the application deployment tools
load (uwsgi's ``module``, mod_wsgi's ``WSGIScriptAlias`` to this file,
gunicorn's ``placement.wsgi.api:application``).

Imports are absolute: mod_wsgi runs this file as a script, outside the
package.
"""

from placement import wsgi

application = wsgi.init_application()
