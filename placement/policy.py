"""The oslo.policy enforcer: upstream's rules, overridable by policy file."""

import operator
import time

from oslo_config import cfg
from oslo_context import context as oslo_context
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

    # Allowed decisions kept, at most this many (then forgotten at once).
    ALLOWED_KEPT = 10000
    _allowed = None
    _allowed_rules = None

    def authorize(self, rule, target, creds, do_raise=False, exc=None,
                  *args, **kwargs):
        """oslo.policy's authorize, remembering what it allowed.

        Every request asks; its rule, target and credentials take a few
        forms only in a cloud (nova's services share one), and oslo.policy
        costs every request as much again as answering from memory does.
        An allowed decision is kept until the rules are read again (an
        edited policy file) or the scope options change; a refusal is
        always worked out afresh, with oslo.policy's own error.
        """
        key = self._decision_key(rule, target, creds, exc, args, kwargs)
        if key is not None and key in self._allowed:
            return True
        allowed = super().authorize(rule, target, creds, do_raise, exc,
                                    *args, **kwargs)
        if key is not None and allowed is True:
            if len(self._allowed) >= self.ALLOWED_KEPT:
                self._allowed = set()
            self._allowed.add(key)
        return allowed

    def _decision_key(self, rule, target, creds, exc, args, kwargs):
        """What an allowed decision depends on, or None when it is not
        kept (a custom exception, credentials not from a request)."""
        if exc is not None or args or kwargs or not isinstance(
                creds, oslo_context.RequestContext):
            return None
        self.load_rules()
        if self.rules is not self._allowed_rules:
            self._allowed = set()
            self._allowed_rules = self.rules
        options = self.conf.oslo_policy
        key = (rule, options.enforce_scope, options.enforce_new_defaults,
               _hashable(target), _credentials_key(creds))
        try:
            hash(key)
        except TypeError:   # a value of another kind in the target
            return None
        return key

    def _enforce_scope(self, creds, rule, do_raise=True):
        if not self.conf.oslo_policy.enforce_scope:
            return True
        return super()._enforce_scope(creds, rule, do_raise=do_raise)


def _hashable(mapping):
    """``mapping`` (a target or credentials) as a key: its lists as
    tuples.  Not sorted: the same code builds the same mapping in the same
    order, and the same mapping in another order only misses."""
    return tuple((name, tuple(value) if type(value) is list else value)
                 for name, value in mapping.items())


# The attributes oslo.context's own credentials give policy (the names of
# ``to_policy_values``), read straight from the context: building that
# mapping and walking it cost as much as the rest of a kept decision.
_POLICY_NAMES = tuple(oslo_context.RequestContext().to_policy_values())
_policy_values = operator.attrgetter(*_POLICY_NAMES)
_LISTS = tuple(index for index, name in enumerate(_POLICY_NAMES)
               if name.endswith('roles'))


def _credentials_key(creds):
    """What policy reads of ``creds``, hashable."""
    if type(creds) is not oslo_context.RequestContext:
        return _hashable(creds.to_policy_values())    # it may add values
    values = list(_policy_values(creds))
    for index in _LISTS:
        if values[index] is not None:
            values[index] = tuple(values[index])
    return tuple(values)


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
