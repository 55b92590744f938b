"""[placement] and [workarounds] options."""

from oslo_config import cfg

from placement.conf import groups

DEFAULT_CONSUMER_MISSING_ID = '00000000-0000-0000-0000-000000000000'

GROUP = cfg.OptGroup('placement', title='Placement service options')

OPTS = [
    cfg.BoolOpt(
        'randomize_allocation_candidates', default=False,
        help='Return a random sample of the candidates when a limit is '
             'given, instead of a stable order.'),
    cfg.StrOpt(
        'incomplete_consumer_project_id', default=DEFAULT_CONSUMER_MISSING_ID,
        help='Project recorded for consumers written by clients older than '
             'microversion 1.8, which did not send one.'),
    cfg.StrOpt(
        'incomplete_consumer_user_id', default=DEFAULT_CONSUMER_MISSING_ID,
        help='User recorded for consumers written by clients older than '
             'microversion 1.8, which did not send one.'),
    cfg.IntOpt(
        'allocation_conflict_retry_count', default=10,
        help='Server-side retries of an allocation write that lost a '
             'provider generation race to another writer.'),
    cfg.IntOpt(
        'max_allocation_candidates', default=-1,
        help='Upper bound on the candidates generated for one request; '
             '-1 means no bound.'),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy', default='depth-first',
        choices=('depth-first', 'breadth-first'),
        help='Order in which viable root providers are visited when '
             'candidates are generated: all from one root first, or one '
             'from each root in turn.'),
    cfg.BoolOpt(
        'share_state_between_workers', default=True,
        help='When the WSGI server loads the application in each worker '
             'after forking it (uwsgi with lazy-apps, mod_wsgi), keep one '
             'in-memory state per host, read by a state keeper the workers '
             'start and shared by the readers it forks, which the workers '
             'ask over local sockets, rather than a copy in every worker. '
             'placement-api, and servers that load the application before '
             'they fork, share the parent\'s state whatever this says.'),
]

SERVICE_OPTS = [
    cfg.BoolOpt('log_options', default=True,
                help='Log every option value at start-up (DEBUG level).'),
]

WORKAROUNDS_GROUP = cfg.OptGroup('workarounds', title='Workarounds')

WORKAROUNDS_OPTS = [
    cfg.BoolOpt('optimize_for_wide_provider_trees', default=False,
                help='Accepted for compatibility with upstream; our '
                     'candidate engine needs no such switch.'),
]


def register_opts(conf):
    groups.register(conf, GROUP, OPTS)
    conf.register_opts(SERVICE_OPTS)
    groups.register(conf, WORKAROUNDS_GROUP, WORKAROUNDS_OPTS)


def list_opts():
    return {GROUP: OPTS, 'DEFAULT': SERVICE_OPTS,
            WORKAROUNDS_GROUP: WORKAROUNDS_OPTS}
