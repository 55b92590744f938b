"""Load configuration the same way for every entry point.

With no configuration file anywhere, the service runs in its embedded
mode: SQLite under ``state_path``, noauth2, listening on loopback only.
That is the zero-setup way to try it; every start says so in the log.
A configuration file that names no database is refused
(``engine.NoConnection``), as upstream refuses it.
"""

import logging
import os

from oslo_log import log as oslo_log

from placement import conf as placement_conf
from placement import log_format
from placement import tracing
from placement import version
from placement.storage import engine

LOG = logging.getLogger(__name__)

CONFIG_DIR_ENV = 'OS_PLACEMENT_CONFIG_DIR'
CONFIG_FILE_ENV = 'PLACEMENT_CONFIG_FILE'


def load(argv=None, cli_opts=(), default_config_files=None,
         setup_logging=True, api=True):
    """Parse ``argv`` and config files into a new ConfigOpts (``--version``
    prints this release's and exits); without ``api``, for a process
    that answers no API request (``placement_conf.register_opts``)."""
    conf = placement_conf.new_config(api=api)
    if cli_opts:
        conf.register_cli_opts(cli_opts)
    conf(argv if argv is not None else [], project='placement',
         default_config_files=default_config_files,
         version=version.release())
    if not api:
        tracing.register_opts_if_set(conf)
    embedded = not conf.config_file and not conf.config_dir
    if embedded:
        conf.set_default('auth_strategy', 'noauth2', group='api')
    if setup_logging:
        oslo_log.setup(conf, 'placement')
        log_format.speed_up()
        if conf.log_options:
            # Secret options (the database URL) are masked by oslo.config.
            conf.log_opt_values(LOG, logging.DEBUG)
    if embedded:
        LOG.warning('No configuration file found: running embedded, with '
                    'an SQLite database in %s and auth_strategy noauth2 '
                    '(no authentication; do not expose this beyond '
                    'localhost).', conf.state_path)
    engine.check_connection(conf)
    return conf


def wsgi_config_files():
    """Config files for a WSGI server: $PLACEMENT_CONFIG_FILE, else
    placement.conf in $OS_PLACEMENT_CONFIG_DIR (upstream's variable), else
    oslo.config's usual search path.

    A file named either way must exist (oslo.config refuses to start
    without it): an operator who said where the configuration is must
    not get the embedded mode, unauthenticated, because it is not there.
    """
    explicit = os.environ.get(CONFIG_FILE_ENV, '').strip()
    if explicit:
        return [explicit]
    config_dir = os.environ.get(CONFIG_DIR_ENV, '').strip()
    if config_dir:
        return [os.path.join(config_dir, 'placement.conf')]
    return None
