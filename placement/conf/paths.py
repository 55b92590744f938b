"""[DEFAULT] path options."""

import os

from oslo_config import cfg

OPTS = [
    cfg.StrOpt('pybasedir',
               default=os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                    '..', '..')),
               sample_default='<Path>',
               help='Directory where the placement package is installed.'),
    cfg.StrOpt('state_path',
               default=os.path.join(os.getcwd(), 'state'),
               sample_default='<working directory>/state',
               help='Directory for local state; the embedded SQLite '
                    'database is created here when no '
                    '[placement_database] connection is set.'),
    cfg.StrOpt('tempdir', help='Directory for temporary files.'),
]


def register_opts(conf):
    conf.register_opts(OPTS)


def list_opts():
    return {'DEFAULT': OPTS}
