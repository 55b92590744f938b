"""``placement-apply``: describe providers in a file, make Placement match.

    placement-apply FILE [--dry-run] [--prune] [--state PATH]
                    [--compute-node NAME] [auth options]

Works over the REST API with keystoneauth, so against this service and
upstream Placement alike, with the ``openstack`` CLI's options:
``--os-cloud`` (clouds.yaml), or ``--os-auth-type``/``--os-auth-url``/...
and the ``OS_*`` variables; ``--os-auth-type admin_token --os-endpoint URL
--os-token TOKEN`` for a noauth service. It prints what it will change,
then changes it (``--dry-run``: only prints, with what the inventory
changes would do, where the service answers ``POST /audit/what_if``).
Exit status: 0 done (or nothing to do), 1 something failed part way (the
report says what was and was not applied), 2 the file is invalid or
names what does not exist.
"""

import argparse
import json
import os
import sys
import time

from keystoneauth1 import adapter
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import yaml

from placement.apply import client as placement_client
from placement.apply import document
from placement.apply import plan as plans
from placement.apply import runner

_CLOUDS_YAML = ('clouds.yaml', '~/.config/openstack/clouds.yaml',
                '/etc/openstack/clouds.yaml')


def _parser(argv):
    parser = argparse.ArgumentParser(
        prog='placement-apply',
        description='Make Placement match a provider file (nova '
                    'provider.yaml 1.0, extended).')
    parser.add_argument('file')
    parser.add_argument('--dry-run', action='store_true',
                        help='Print the changes; write nothing.')
    parser.add_argument('--prune', action='store_true',
                        help='Also remove what the file added before and '
                             'no longer names (providers it created, '
                             'inventories, traits, aggregates).')
    parser.add_argument('--state', help='Where what the file owns is '
                        'recorded (default: FILE.state).')
    parser.add_argument('--compute-node', help='The provider $COMPUTE_NODE '
                        'stands for.')
    parser.add_argument('--os-cloud', default=os.environ.get('OS_CLOUD'),
                        help='A cloud in clouds.yaml.')
    parser.add_argument('--os-region-name',
                        default=os.environ.get('OS_REGION_NAME'))
    parser.add_argument('--os-interface',
                        default=os.environ.get('OS_INTERFACE', 'public'))
    loading.register_session_argparse_arguments(parser)
    loading.register_auth_argparse_arguments(parser, argv,
                                             default='password')
    return parser


def _cloud(name):
    """The clouds.yaml entry ``name``, from the usual places."""
    for path in _CLOUDS_YAML:
        path = os.path.expanduser(path)
        if os.path.exists(path):
            with open(path) as stream:
                clouds = (yaml.safe_load(stream) or {}).get('clouds', {})
            if name in clouds:
                return clouds[name]
    raise SystemExit('placement-apply: cloud %s is in no clouds.yaml' % name)


def _adapter(args):
    region, interface = args.os_region_name, args.os_interface
    if args.os_cloud:
        cloud = _cloud(args.os_cloud)
        auth = loading.get_plugin_loader(
            cloud.get('auth_type', 'password')).load_from_options(
                **cloud.get('auth', {}))
        session = ks_session.Session(auth=auth,
                                     verify=cloud.get('cacert',
                                                      cloud.get('verify',
                                                                True)))
        region = cloud.get('region_name', region)
        interface = cloud.get('interface', interface)
    else:
        auth = loading.load_auth_from_argparse_arguments(args)
        session = loading.load_session_from_argparse_arguments(args,
                                                               auth=auth)
    return adapter.Adapter(session, service_type='placement',
                           interface=interface, region_name=region)


def _read_state(path):
    if not os.path.exists(path):
        return {}
    with open(path) as stream:
        return json.load(stream)['providers']


def _write_state(path, state):
    partial = path + '.new'
    with open(partial, 'w') as stream:
        json.dump({'providers': state}, stream, indent=1, sort_keys=True)
    os.replace(partial, path)


def _what_if(client, plan):
    """Print what the plan's inventory changes would do (capacity, any
    excess and who holds it), where the service says (this one's
    POST /audit/what_if)."""
    changes = runner.inventory_changes(plan)
    if not changes:
        return
    try:
        answer = client.what_if(changes)
    except placement_client.Failed as exc:
        print('What-if not answered: %s' % exc.detail)
        return
    if answer is None:
        print('What-if not answered: the service has no /audit/what_if.')
        return
    print(runner.render_what_if(answer))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    state_path = args.state or args.file + '.state'
    try:
        with open(args.file) as stream:
            data = document.load(stream.read(), args.file)
    except OSError as exc:
        print('placement-apply: %s' % exc, file=sys.stderr)
        return 2
    except document.Invalid as exc:
        print(exc, file=sys.stderr)
        return 2
    client = placement_client.Placement(_adapter(args))
    started = time.monotonic()
    try:
        plan = plans.make(data, client, _read_state(state_path), args.prune,
                          args.compute_node)
    except plans.Unresolvable as exc:
        print('%s: %s' % (args.file, exc), file=sys.stderr)
        return 2
    print(runner.render(plan))
    if args.dry_run:
        _what_if(client, plan)
        print('Dry run: nothing written.')
        return 0
    if plan.empty():
        _write_state(state_path, runner.apply(client, plan, None)[1])
        return 0
    report, state = runner.apply(client, plan)
    _write_state(state_path, state)
    print(report.text())
    print('Took %.1f s.' % (time.monotonic() - started))
    return 1 if report.failed else 0


if __name__ == '__main__':
    sys.exit(main())
