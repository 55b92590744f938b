"""[oslo_policy] enforce_scope.

oslo.policy 6 dropped ``enforce_scope`` and always checks token scope, which
is what upstream Placement then does.  Existing configuration files still
set it, so we keep the option: True (the default) is upstream's behaviour,
False skips the scope check and evaluates only the rule's check string.
"""

from oslo_config import cfg
from oslo_policy import opts as policy_opts

GROUP = 'oslo_policy'

OPTS = [
    cfg.BoolOpt('enforce_scope', default=True,
                help='Refuse a request whose token scope (project or '
                     'system) is not among the scope types of the rule.'),
]


def register_opts(conf):
    policy_opts.set_defaults(conf, policy_file='policy.yaml')
    try:
        conf.register_opts(OPTS, group=GROUP)
    except cfg.DuplicateOptError:
        pass  # an oslo.policy that still has it registered it already


def list_opts():
    return {GROUP: OPTS}
