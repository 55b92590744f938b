"""placement-apply on a 1,000-provider file: ours against upstream 16.0.0.

    .venv/bin/python benchmarks/apply_tree.py [--roots R] [--children C]
        [--backend postgresql|mysql]

The file describes R compute nodes (default 250), each with C nested
providers (default 3: two NUMA cells with VCPU and memory, a NIC with
bandwidth), traits and an aggregate per 50 nodes, plus a selector that
sets a VCPU allocation ratio by aggregate: (R x (C + 1)) providers, all
new. Both servers run side by side (harness.Stack: same database
server, two workers each); placement-apply runs against each in turn:
the first apply (creating everything), the second (nothing to change),
and a dry run after a change to every node. The figures are wall
seconds of the whole command, reads included.
"""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
import uuid

import harness

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from placement.cmd import apply as apply_cmd  # noqa: E402


def provider_file(roots, children):
    aggregates = [str(uuid.uuid4()) for _ in range(max(1, roots // 50))]
    lines = ["meta: {schema_version: '1.1'}", 'providers:']
    for n in range(roots):
        root = 'cn%04d' % n
        lines += ['  - identification: {name: %s}' % root,
                  '    aggregates: {additional: [%s]}'
                  % aggregates[n % len(aggregates)],
                  '    traits: {additional: [CUSTOM_RACK_%d]}' % (n % 10)]
        for child in range(children):
            name = '%s-c%d' % (root, child)
            lines += ['  - identification: {name: %s}' % name,
                      '    parent: {name: %s}' % root]
            if child < children - 1:
                lines += ['    inventories:', '      additional:',
                          '        - VCPU: {total: 32}',
                          '        - MEMORY_MB: {total: 131072, '
                          'reserved: 512}',
                          '    traits: {additional: [HW_NUMA_ROOT]}']
            else:
                lines += ['    inventories:', '      additional:',
                          '        - NET_BW_EGR_KILOBIT_PER_SEC: '
                          '{total: 10000000}']
    lines += ['selectors:']
    for aggregate in aggregates:
        lines += ['  - match: {aggregate: %s}' % aggregate,
                  '    traits: {additional: [CUSTOM_GOLD]}']
    return '\n'.join(lines) + '\n'


def run(port, path, *extra):
    out = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = apply_cmd.main([path, '--os-auth-type', 'admin_token',
                               '--os-endpoint', 'http://127.0.0.1:%d' % port,
                               '--os-token', 'admin', *extra])
    elapsed = time.monotonic() - started
    if code != 0:
        raise SystemExit('placement-apply failed:\n' + out.getvalue()[-3000:])
    return elapsed, out.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    harness.add_backend_argument(parser)
    parser.add_argument('--roots', type=int, default=250)
    parser.add_argument('--children', type=int, default=3)
    args = parser.parse_args(argv)
    total = args.roots * (args.children + 1)
    directory = tempfile.mkdtemp(prefix='placement-apply-bench-')
    results = {}
    with harness.Stack(backend=args.backend) as stack:
        for name in ('ours', 'upstream'):
            path = os.path.join(directory, '%s.yaml' % name)
            with open(path, 'w') as stream:
                stream.write(provider_file(args.roots, args.children))
            port = stack.servers[name].port
            first, output = run(port, path)
            assert '%d provider(s) to create' % total in output, output[-500:]
            second, output = run(port, path)
            assert output.strip() == 'No changes.', output[-500:]
            with open(path) as stream:
                text = stream.read()
            with open(path, 'w') as stream:
                stream.write(text.replace('VCPU: {total: 32}',
                                          'VCPU: {total: 48}'))
            dry, output = run(port, path, '--dry-run')
            assert 'to change' in output
            results[name] = (first, second, dry)
            harness.log('%-8s create %.1f s, again %.1f s, dry run %.1f s'
                        % (name, first, second, dry))
        version = stack.database_version()
    print('placement-apply, %d providers (%d roots x %d children), %s, '
          '%d workers each' % (total, args.roots, args.children, version,
                               harness.WORKERS))
    print('%-10s %10s %10s %10s' % ('', 'create', 'no change', 'dry run'))
    for name, (first, second, dry) in results.items():
        print('%-10s %9.1fs %9.1fs %9.1fs' % (name, first, second, dry))
    ours, upstream = results['ours'], results['upstream']
    print('%-10s %9.1fx %9.1fx %9.1fx' % (
        'up/ours', upstream[0] / ours[0], upstream[1] / ours[1],
        upstream[2] / ours[2]))


if __name__ == '__main__':
    main()
