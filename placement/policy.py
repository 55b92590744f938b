"""The oslo.policy enforcer: upstream's rules, overridable by policy file."""

import time

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from placement import policies


# How often the policy file is looked at for changes.
RULES_CHECK_INTERVAL = 1.0


class Enforcer(oslo_policy.Enforcer):
    """oslo.policy's Enforcer, honouring ``[oslo_policy] enforce_scope``.

    oslo.policy 6 always checks scope; setting enforce_scope = False in an
    existing configuration keeps its old meaning (check strings only).

    oslo.policy also stats (and may re-read) the policy files on every
    check, a cost paid by every request; here the files are looked at no
    more than once per ``RULES_CHECK_INTERVAL``, so an edited policy file
    takes effect within that time instead of at once.
    """

    _rules_checked_at = None

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if (not force_reload and self._rules_checked_at is not None
                and now - self._rules_checked_at < RULES_CHECK_INTERVAL):
            return
        super().load_rules(force_reload)
        self._rules_checked_at = now

    def _enforce_scope(self, creds, rule, do_raise=True):
        if not self.conf.oslo_policy.enforce_scope:
            return True
        return super()._enforce_scope(creds, rule, do_raise=do_raise)


def build_enforcer(conf):
    """An enforcer with every Placement rule registered and the file loaded."""
    enforcer = Enforcer(conf)
    # Every default changed in the secure-RBAC work; a warning per rule at
    # each start helps nobody.
    enforcer.suppress_default_change_warnings = True
    enforcer.register_defaults(policies.list_rules())
    enforcer.load_rules()
    return enforcer


def get_enforcer():
    """Entry point for oslopolicy-policy-generator and friends."""
    from placement import conf as placement_conf
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf([], project='placement')
    return build_enforcer(conf)
