"""[metrics] options: Prometheus metrics (an extension; upstream has none)."""

from oslo_config import cfg

from placement.conf import groups

GROUP = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help='Request, database and candidate metrics in the Prometheus text '
         'format, summed over the host\'s workers and served on an address '
         'of their own, never on the API port: by placement-api\'s parent, '
         'or, under a WSGI server, by a metrics process the first worker '
         'starts.')

OPTS = [
    cfg.BoolOpt('enabled', default=False,
                help='Collect and serve metrics.'),
    cfg.StrOpt('bind', default='127.0.0.1:9778',
               help='HOST:PORT the metrics are served on (GET /metrics). '
                    'Keep it off the networks API users reach.'),
    cfg.MultiStrOpt(
        'capacity_request', default=[],
        help='NAME=REQUEST (repeatable): publish placement_capacity '
             'gauges for REQUEST, how many copies of it fit now per root '
             'provider, in total, and whether sharing providers limit it '
             '(as GET /allocation_candidates/capacity answers). REQUEST '
             'is a flavor-like resource string, such as '
             'm1.small=VCPU:1,MEMORY_MB:2048,DISK_GB:20, or a whole query '
             'string of GET /allocation_candidates at the latest '
             'microversion (m1.avx=resources=VCPU:8&required=HW_CPU_X86_'
             'AVX512F). Checked when placement-api starts.'),
    cfg.IntOpt('capacity_interval', default=60, min=1,
               help='Seconds between two computations of the '
                    'placement_capacity gauges (a scrape reads the last '
                    'one, never computes).'),
    cfg.BoolOpt('placement_gauges', default=True,
                help='Publish openstack-exporter\'s placement gauges '
                     '(openstack_placement_resource_total, '
                     '_allocation_ratio, _reserved, _generation, _usage, '
                     '_up), from the in-memory state, worked out when '
                     'scraped.'),
    cfg.BoolOpt('placement_gauges_per_provider', default=True,
                help='Those gauges per provider and class (labels '
                     'hostname, resourcetype), as openstack-exporter '
                     'publishes them; false: per class only (label '
                     'resourcetype), for clouds that do not want that many '
                     'series.'),
    cfg.BoolOpt('placement_allocation_gauges', default=False,
                help='Also openstack_placement_resource_provider_'
                     'allocations (labels hostname, uuid, resourcetype): '
                     'one series per consumer and class, read from the '
                     'database when scraped.'),
    cfg.IntOpt('audit_interval', default=60, min=0,
               help='Publish placement_audit_findings gauges (the '
                    'findings of GET /audit by kind), counted when '
                    'scraped at most once in this many seconds; 0 '
                    'publishes none.'),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)


def list_opts():
    return {GROUP: OPTS}
