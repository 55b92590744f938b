"""``openstack allocation candidate explain`` and ``openstack allocation
candidate capacity``: GET /allocation_candidates/explain and /capacity.

They take the request as osc-placement's ``allocation candidate list``
users write it (``--resource VCPU=8``, ``--required``, ``--member-of``
...) and, for anything else (granular groups, ``same_subtree``), the
query string itself (``--query``).  In a table the summary line comes
first, then the funnel (or the counts); in other formats (``-f json``)
the summary goes to stderr, so that stdout stays machine-readable.
"""

import urllib.parse

from osc_lib.command import command

_REQUEST_OPTIONS = (
    ('--resource', 'resources', 'RESOURCE_CLASS=AMOUNT: an amount of the '
                                'unsuffixed group (repeatable)'),
    ('--required', 'required', 'A trait the unsuffixed group needs '
                               '(repeatable; in:A,B for any of them)'),
    ('--forbidden', 'forbidden', 'A trait it must not have (repeatable)'),
    ('--member-of', 'member_of', 'Aggregate uuids, comma separated, one '
                                 'of which it must be in (repeatable)'),
    ('--in-tree', 'in_tree', 'A provider of the tree it must be in'),
    ('--root-required', 'root_required', "Traits the tree's root must "
                                         "(not, with !) have"),
    ('--group-policy', 'group_policy', 'none or isolate'),
    ('--limit', 'limit', 'At most this many allocation requests'),
    ('--query', 'query', 'More of the query string of GET '
                         '/allocation_candidates, as is (repeatable)'),
)
_REPEATABLE = {'resources', 'required', 'forbidden', 'member_of', 'query'}


def add_request_options(parser):
    for flag, dest, text in _REQUEST_OPTIONS:
        parser.add_argument(
            flag, dest=dest, metavar=dest.upper(), help=text,
            action='append' if dest in _REPEATABLE else 'store',
            default=[] if dest in _REPEATABLE else None)
    return parser


def query_string(args):
    """The query string the options describe."""
    pairs = []
    if args.resources:
        pairs.append(('resources', ','.join(
            item.replace('=', ':', 1) for item in args.resources)))
    traits = [t for t in args.required if not t.startswith('in:')]
    traits += ['!' + t for t in args.forbidden]
    if traits:
        pairs.append(('required', ','.join(traits)))
    pairs += [('required', t) for t in args.required if t.startswith('in:')]
    pairs += [('member_of', value) for value in args.member_of]
    for name in ('in_tree', 'root_required', 'group_policy', 'limit'):
        if getattr(args, name):
            pairs.append((name, getattr(args, name)))
    text = urllib.parse.urlencode(pairs, safe=':,!')
    return '&'.join(part for part in [text] + args.query if part)


class PlacementLister(command.Lister):
    """Rows from this service's extensions, with a line said first."""

    def placement(self):
        return self.app.client_manager.placement

    def say(self, args, line):
        """``line`` above a table, or on stderr in other formats, so that
        stdout stays machine-readable."""
        stream = (self.app.stdout if args.formatter == 'table'
                  else self.app.stderr)
        stream.write(line + '\n')


class _ExtensionCommand(PlacementLister):
    """Shared: the request options, the GET."""

    path = None

    def get_parser(self, prog_name):
        return add_request_options(super().get_parser(prog_name))

    def fetch(self, args):
        return self.placement().request(
            'GET', '%s?%s' % (self.path, query_string(args))).json()


class ExplainAllocationCandidates(_ExtensionCommand):
    """Explain which constraints removed which providers and trees for an
    allocation-candidates request (an extension of this service)."""

    path = '/allocation_candidates/explain'
    columns = ('group', 'constraint', 'asked', 'providers kept',
               'providers removed', 'trees kept', 'trees removed',
               'examples')

    def take_action(self, args):
        body = self.fetch(args)
        self.say(args, body['summary'])
        rows = []
        for group in body['groups']:
            for step in group['constraints']:
                rows.append(_row(group['suffix'] or '(unsuffixed)', step,
                                 step['constraint'], step['providers']))
        for step in body['combination']:
            rows.append(_row('(combined)', step, step['step'], None))
        return self.columns, rows


def _row(group, step, name, providers):
    asked = {k: v for k, v in step.items() if k not in (
        'constraint', 'step', 'providers', 'trees', 'examples')}
    examples = '; '.join('%s: %s' % (e['name'] or e['uuid'], e['reason'])
                         for e in step['examples'])
    return (group, name, ' '.join('%s=%s' % (key, _text(value))
                                  for key, value in asked.items()),
            '' if providers is None else providers['kept'],
            '' if providers is None else providers['removed'],
            step['trees']['kept'], step['trees']['removed'], examples)


def _text(value):
    """A list as A,B (a list of lists as A,B & C)."""
    if isinstance(value, list):
        return (' & ' if any(isinstance(v, list) for v in value)
                else ',').join(_text(v) for v in value)
    return str(value)


class CapacityAllocationCandidates(_ExtensionCommand):
    """Count how many copies of an allocation-candidates request fit now,
    per root provider and per sharing provider (an extension of this
    service)."""

    path = '/allocation_candidates/capacity'
    columns = ('provider', 'kind', 'copies', 'exact')

    def take_action(self, args):
        body = self.fetch(args)
        self.say(args, '%d copies fit in total%s' % (
            body['total'], ' (fewer: sharing providers cannot serve them '
                           'all at once)' if body['limited_by_sharing']
            else ''))
        bounded = set(body['bounded'])
        rows = [(uuid, kind, copies, uuid not in bounded)
                for kind in ('root', 'sharing')
                for uuid, copies in sorted(body['roots' if kind == 'root'
                                                else 'sharing'].items())]
        return self.columns, rows
