"""[placement_database] options: where the data lives and how it is pooled."""

from oslo_config import cfg

from placement.conf import groups

GROUP = cfg.OptGroup(
    'placement_database', title='Placement database options',
    help='The database holding providers, inventories and allocations. '
         'With no connection set, an SQLite file under [DEFAULT] state_path '
         'is used, which suits a single host and local development.')

OPTS = [
    cfg.StrOpt('connection', secret=True,
               help='SQLAlchemy URL, e.g. '
                    'postgresql+psycopg2://user:pass@host/placement or '
                    'sqlite:////var/lib/placement/placement.sqlite. '
                    'Unset means an SQLite file in [DEFAULT] state_path.'),
    cfg.StrOpt('connection_parameters', default='',
               help='Extra query string appended to the connection URL.'),
    cfg.BoolOpt('sqlite_synchronous', default=True,
                help='If False, SQLite runs with synchronous=OFF (faster, '
                     'not crash safe).'),
    cfg.StrOpt('slave_connection', secret=True,
               help='Accepted for compatibility with upstream '
                    'configuration files; not used.'),
    cfg.StrOpt('mysql_sql_mode', default='TRADITIONAL',
               help='MySQL/MariaDB only: the sql_mode every session sets. '
                    'TRADITIONAL (strict) makes a value a column cannot '
                    'hold an error instead of a silent truncation. An empty '
                    'value leaves the server\'s own setting.'),
    cfg.IntOpt('mysql_wsrep_sync_wait', default=None, min=0, max=15,
               help='Galera only: the wsrep_sync_wait every session sets. '
                    '1 makes each read wait until this node has applied '
                    'every write set the cluster committed before it, so '
                    'that a client writing through one API node and '
                    'reading through another sees its own writes. Unset '
                    'leaves the server\'s setting (0: reads may lag).'),
    cfg.IntOpt('connection_recycle_time', default=3600,
               help='Seconds after which a pooled connection is replaced.'),
    cfg.IntOpt('max_pool_size', default=5, min=1,
               help='Connections kept open per process.'),
    cfg.IntOpt('max_retries', default=10,
               help='Attempts to connect when the API or '
                    'placement-manage starts (-1 for ever).'),
    cfg.IntOpt('retry_interval', default=10,
               help='Seconds between those connection attempts.'),
    cfg.IntOpt('max_overflow', default=50, min=0,
               help='Connections allowed beyond max_pool_size under load.'),
    cfg.IntOpt('connection_debug', default=0, min=0, max=100,
               help='50 logs every SQL statement, 100 also the results.'),
    cfg.BoolOpt('connection_trace', default=False,
                help='Accepted for compatibility; not used.'),
    cfg.IntOpt('pool_timeout', default=30, min=1,
               help='Seconds to wait for a free pooled connection.'),
    cfg.BoolOpt('sync_on_startup', default=False,
                help='Apply database migrations when the API starts. The '
                     'embedded default (no connection set) always does.'),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)


def list_opts():
    return {GROUP: OPTS}
