"""The enforcer's policy-file reload throttle."""

import os

from oslo_context import context as oslo_context

from placement import conf as placement_conf
from placement import policy

RULE = 'placement:resource_providers:list'


def _enforcer(tmp_path, rules):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(rules)
    conf = placement_conf.new_config()
    conf([], project='placement', default_config_files=[])
    conf.set_override('policy_file', str(policy_file), group='oslo_policy')
    return policy_file, policy.build_enforcer(conf)


def _allowed(enforcer):
    creds = oslo_context.RequestContext(user_id='u', project_id='p',
                                        roles=['member'])
    return enforcer.authorize(RULE, {'project_id': 'p'}, creds,
                              do_raise=False)


def _edit(policy_file, rules):
    policy_file.write_text(rules)
    # Make sure the modification time moves even on coarse filesystems.
    stat = policy_file.stat()
    os.utime(policy_file, (stat.st_atime, stat.st_mtime + 5))


def test_policy_file_is_not_re_read_within_the_interval(tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(policy, 'RULES_CHECK_INTERVAL', 3600)
    policy_file, enforcer = _enforcer(tmp_path, '{}\n')
    assert not _allowed(enforcer)
    _edit(policy_file, '"%s": "@"\n' % RULE)
    assert not _allowed(enforcer)


def test_policy_file_change_applies_after_the_interval(tmp_path,
                                                       monkeypatch):
    monkeypatch.setattr(policy, 'RULES_CHECK_INTERVAL', 0)
    policy_file, enforcer = _enforcer(tmp_path, '{}\n')
    assert not _allowed(enforcer)
    _edit(policy_file, '"%s": "@"\n' % RULE)
    assert _allowed(enforcer)
