"""[metrics] options: Prometheus metrics (an extension; upstream has none)."""

from oslo_config import cfg

from placement.conf import groups

GROUP = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help='Request, database and candidate metrics in the Prometheus text '
         'format, served by placement-api on an address of their own, '
         'never on the API port.')

OPTS = [
    cfg.BoolOpt('enabled', default=False,
                help='Collect and serve metrics (placement-api only).'),
    cfg.StrOpt('bind', default='127.0.0.1:9778',
               help='HOST:PORT the metrics are served on (GET /metrics). '
                    'Keep it off the networks API users reach.'),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)


def list_opts():
    return {GROUP: OPTS}
