"""[api] options."""

from oslo_config import cfg

from placement.conf import groups

GROUP = cfg.OptGroup('api', title='API options',
                     help='How the HTTP API authenticates its callers, and '
                          'whether it serves the dashboard.')

OPTS = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=(
            ('keystone', 'Validate tokens with keystonemiddleware, '
                         'configured in [keystone_authtoken].'),
            ('noauth2', "Trust the X-Auth-Token header as "
                        "'user[:project]'; the token 'admin' carries the "
                        "admin role. For tests and local development "
                        "only."),
        ),
        deprecated_group='DEFAULT',
        help='How API requests are authenticated. Without any '
             'configuration file the service runs embedded, with '
             'noauth2.'),
    cfg.BoolOpt(
        'ui_enabled',
        default=True,
        help='Serve the read-only capacity dashboard at /ui/: static '
             'files (no token needed to fetch them) whose pages call '
             'this API with the token the user enters, so they show what '
             'policy lets that token see. False answers /ui/ with 404; '
             'the /overview extensions the dashboard reads stay served.'),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)


def list_opts():
    return {GROUP: OPTS}
