"""Consumers' fixtures change process-wide defaults as upstream's do
(``PlacementFixture`` turns oslo.policy's ``enforce_new_defaults`` off);
each test here puts them back, so that the rest of this suite runs with
the defaults it expects."""

from oslo_config import cfg
from oslo_policy import opts as policy_opts
import pytest


def _policy_defaults():
    return {opt.dest: opt.default
            for _, opts in policy_opts.list_opts() for opt in opts
            if opt.dest != 'policy_file'}


@pytest.fixture(autouse=True)
def _restore_policy_defaults():
    before = _policy_defaults()
    yield
    # list_opts() hands out copies: set_defaults changes the options
    # every configuration registers.
    policy_opts.set_defaults(cfg.ConfigOpts(), **before)
