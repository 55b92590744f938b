"""``openstack placement audit`` and ``openstack placement audit what
if``: GET /audit and POST /audit/what_if.

In a table, one row per finding (per provider and class for the
what-if), with the counts (the copies before and after) on a line of
their own first; in other formats (``-f json``) that line goes to
stderr, so that stdout stays machine-readable.
"""

import json
import urllib.parse

from osc_lib import exceptions

from placement.osc import commands

KINDS = ('over_capacity', 'split_consumers', 'stale_migrations',
         'unusable_inventory')


class Audit(commands.PlacementLister):
    """List allocations over capacity, consumers split across trees,
    stale migrations and unusable inventory (an extension of this
    service)."""

    columns = ('kind', 'subject', 'resource class', 'numbers', 'consumers',
               'reason')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--kind', action='append', default=[],
                            choices=KINDS, help='Only findings of this '
                            'kind (repeatable; default: every kind)')
        parser.add_argument('--stale-after', type=int, metavar='SECONDS',
                            help='Age after which a migration is stale '
                                 '(default 86400)')
        parser.add_argument('--in-tree', metavar='PROVIDER',
                            help='Only findings about this tree')
        parser.add_argument('--member-of', action='append', default=[],
                            metavar='AGGREGATES', help='Only providers in '
                            'one of these aggregates (comma separated, '
                            'repeatable)')
        parser.add_argument('--project', metavar='PROJECT_ID',
                            help="Only findings about this project's "
                                 'consumers')
        parser.add_argument('--limit', type=int,
                            help='At most this many findings of each kind')
        return parser

    def take_action(self, args):
        pairs = []
        if args.kind:
            pairs.append(('kind', ','.join(args.kind)))
        for name, value in (('stale_after', args.stale_after),
                            ('in_tree', args.in_tree),
                            ('project_id', args.project),
                            ('limit', args.limit)):
            if value is not None:
                pairs.append((name, value))
        pairs += [('member_of', value if ',' not in value
                   else 'in:' + value) for value in args.member_of]
        body = self.placement().request(
            'GET', '/audit?' + urllib.parse.urlencode(pairs, safe=':,'),
        ).json()
        self.say(args, ', '.join('%s %d' % (kind, count)
                                 for kind, count in body['counts'].items()))
        rows = []
        for kind in KINDS:
            for finding in body.get(kind, ()):
                rows.append(_ROWS[kind](finding))
        return self.columns, rows


def _provider(finding):
    provider = finding['resource_provider']
    return provider['name'] or provider['uuid']


def _over_capacity(f):
    return ('over_capacity', _provider(f), f['resource_class'],
            'used %d, capacity %d, over %d' % (f['used'], f['capacity'],
                                               f['over']),
            ' '.join(f['consumers']), f['reason'])


def _split(f):
    return ('split_consumers', f['consumer'], '',
            '%d trees' % len(f['roots']), f['consumer'], f['reason'])


def _stale(f):
    return ('stale_migrations', f['consumer'], '',
            '%d s old' % f['age_seconds'], f['consumer'], f['reason'])


def _unusable(f):
    return ('unusable_inventory', _provider(f), f['resource_class'], '', '',
            f['reason'])


_ROWS = {'over_capacity': _over_capacity, 'split_consumers': _split,
         'stale_migrations': _stale, 'unusable_inventory': _unusable}


class AuditWhatIf(commands.PlacementLister):
    """Say what changed inventories would do, writing nothing: capacity
    before and after, who would hold any excess, how many more copies of
    a request fit (an extension of this service)."""

    columns = ('provider', 'resource class', 'capacity before',
               'capacity after', 'used', 'over after', 'consumers',
               'refused')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument('--provider', metavar='UUID',
                            help='The provider to change')
        target.add_argument('--aggregate', metavar='UUID',
                            help='Change every provider of this aggregate '
                                 '(those with the class)')
        target.add_argument('--trait', metavar='NAME',
                            help='Change every provider with this trait '
                                 '(those with the class)')
        parser.add_argument('--set', action='append', default=[],
                            metavar='CLASS:FIELD=VALUE', dest='changes',
                            help='A field of a class (total, reserved, '
                                 'min_unit, max_unit, step_size, '
                                 'allocation_ratio); repeatable')
        parser.add_argument('--remove', action='append', default=[],
                            metavar='CLASS', help='Remove the class '
                                                  '(repeatable)')
        parser.add_argument('--resources', metavar='CLASS:AMOUNT,...',
                            help='Count copies of this request before and '
                                 'after')
        return parser

    def take_action(self, args):
        changes = _changes(args.changes, args.remove)
        key, target = (('inventories', args.provider) if args.provider
                       else ('by_aggregate', args.aggregate)
                       if args.aggregate else ('by_trait', args.trait))
        body = {key: {target: changes}}
        if args.resources:
            body['resources'] = args.resources
        answer = self.placement().request(
            'POST', '/audit/what_if', data=json.dumps(body),
            headers={'Content-Type': 'application/json'}).json()
        if 'capacity' in answer:
            self.say(args, 'copies of %s that fit: %d before, %d after' % (
                args.resources, answer['capacity']['before'],
                answer['capacity']['after']))
        rows = [(_provider(row), row['resource_class'],
                 row['capacity_before'], row['capacity_after'], row['used'],
                 row['over_after'], ' '.join(row['consumers']),
                 row['refused'] or '')
                for row in answer['providers']]
        return self.columns, rows


_FLOAT_FIELDS = ('allocation_ratio',)


def _changes(settings, removals):
    """{class: {field: value} or None} of ``--set`` and ``--remove``."""
    changes = {}
    for setting in settings:
        name, _, assignment = setting.partition(':')
        field, sep, value = assignment.partition('=')
        if not (name and field and sep):
            raise exceptions.CommandError(
                '--set %s is not CLASS:FIELD=VALUE' % setting)
        try:
            value = float(value) if field in _FLOAT_FIELDS else int(value)
        except ValueError:
            raise exceptions.CommandError(
                '--set %s: %s is not a number' % (setting, value))
        changes.setdefault(name, {})[field] = value
    for name in removals:
        changes[name] = None
    if not changes:
        raise exceptions.CommandError('Nothing to change: give --set or '
                                      '--remove')
    return changes
