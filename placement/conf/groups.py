"""Registering an option group on one ConfigOpts only."""

from oslo_config import cfg


def register(conf, group, opts):
    """Register ``opts`` under a copy of ``group`` that ``conf`` owns.

    oslo.config keeps defaults and overrides in the group object it is
    given (shallow-copied, sharing its options table), so registering our
    module-level groups directly would let ``set_default`` or
    ``set_override`` on one ConfigOpts change every other one in the
    process.
    """
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                     help=group.help))
    conf.register_opts(opts, group=group.name)
