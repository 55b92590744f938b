"""[api] options."""

from oslo_config import cfg

from placement.conf import groups

GROUP = cfg.OptGroup('api', title='API options',
                     help='How the HTTP API authenticates its callers.')

OPTS = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=('keystone', 'noauth2'),
        deprecated_group='DEFAULT',
        help="'keystone' validates tokens with keystonemiddleware "
             "([keystone_authtoken]). 'noauth2' trusts the X-Auth-Token "
             "header as 'user[:project]' and is for tests and local "
             "development only; the token 'admin' carries the admin role."),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)


def list_opts():
    return {GROUP: OPTS}
