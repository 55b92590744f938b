"""WSGI entry point for any WSGI server: ``placement.wsgi:application``.

The configuration file is ``$PLACEMENT_CONFIG_FILE``, else
``$OS_PLACEMENT_CONFIG_DIR/placement.conf``, else oslo.config's default
locations (``/etc/placement/placement.conf`` ...); see README.rst.
"""

from placement import app
from placement import config_loader


def init_application():
    conf = config_loader.load(
        default_config_files=config_loader.wsgi_config_files())
    return app.build_app(conf)


application = init_application()
