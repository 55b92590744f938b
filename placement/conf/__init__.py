"""Configuration: every option upstream Placement registers, same groups and names.

An operator's existing ``placement.conf`` must load unchanged, so option
names, groups and choices follow upstream.  The help text is ours.
"""

from oslo_config import cfg
from oslo_log import log as logging

from placement import tracing
from placement.conf import api
from placement.conf import database
from placement.conf import metrics
from placement.conf import paths
from placement.conf import placement
from placement.conf import policy

_MODULES = (api, database, metrics, paths, placement, policy)


def register_opts(conf, api=True):
    """Register every option the service reads on ``conf``; without
    ``api``, those of a process that answers no API request (the state
    keeper, the metrics process): none of oslo.middleware's (``[cors]``,
    ``[oslo_middleware]``, ``[healthcheck]``), and osprofiler's only once
    the files are read (``tracing.register_opts_if_set``).  The modules
    of oslo.middleware that hold those options import webob; with
    osprofiler and its drivers that was 10 MB of a process before
    ``deferred_packages`` kept the rest of oslo.middleware out."""
    for module in _MODULES:
        module.register_opts(conf)
    logging.register_options(conf)
    if api:
        _register_middleware_opts(conf)
        tracing.register_opts(conf)


def _register_middleware_opts(conf):
    from oslo_middleware import cors
    from oslo_middleware import http_proxy_to_wsgi
    from oslo_middleware import sizelimit

    from placement import health
    set_lib_defaults()
    conf.register_opts(cors.CORS_OPTS, 'cors')
    conf.register_opts(http_proxy_to_wsgi.OPTS, 'oslo_middleware')
    conf.register_opts(sizelimit.OPTS, 'oslo_middleware')
    health.register_opts(conf)


def new_config(api=True):
    """A fresh ConfigOpts with our options registered (tests use many)."""
    conf = cfg.ConfigOpts()
    register_opts(conf, api=api)
    return conf


def list_opts():
    """Entry point for ``oslo-config-generator`` (namespace placement.conf).

    Library options ([cors], logging, [keystone_authtoken] ...) are listed
    by their libraries' own namespaces; see etc/placement/.
    """
    opts = {}
    for module in _MODULES:
        for group, group_opts in module.list_opts().items():
            opts.setdefault(group, []).extend(group_opts)
    return [(group, group_opts) for group, group_opts in opts.items()]


# Room for a reshaper request over a 1,000-provider tree with its
# allocations (tests/functional/test_hostile_input.py builds one).
MAX_REQUEST_BODY_SIZE = 4 * 1024 * 1024


def set_lib_defaults():
    """Our defaults for library options, upstream's values.

    Applied whenever options are registered, and by oslo-config-generator
    through the ``oslo.config.opts.defaults`` entry point.
    """
    from oslo_middleware import cors
    from oslo_middleware import sizelimit

    from placement import health
    cors.set_defaults(
        allow_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                       'X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                       'X-User-Id', 'X-Tenant-Id', 'OpenStack-API-Version'],
        expose_headers=['X-Auth-Token', 'X-Openstack-Request-Id',
                        'X-Subject-Token', 'X-Service-Token',
                        'OpenStack-API-Version'],
        allow_methods=['GET', 'PUT', 'POST', 'DELETE', 'PATCH'])
    health.set_defaults()
    # oslo's 112 KiB would refuse a reshape of a large provider tree.
    cfg.set_defaults(sizelimit.OPTS,
                     max_request_body_size=MAX_REQUEST_BODY_SIZE)
