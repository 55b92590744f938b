"""``tests/consumer/oslotest_cases`` run as consumers run their suites:
``stestr`` in one worker process, every case after the first finding
what the fixtures kept from it (the template database) still there,
though oslotest removed that case's temporary directory."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).parents[2]
CASES = 'tests/consumer/oslotest_cases'


def test_stestr_runs_the_oslotest_cases_in_one_process(tmp_path):
    stestr = os.path.join(os.path.dirname(sys.executable), 'stestr')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop('OS_LOG_CAPTURE', None)
    proc = subprocess.run(
        [stestr, '--here', str(tmp_path), '--test-path', str(ROOT / CASES),
         '--top-dir', str(ROOT), 'run', '--concurrency', '1'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert ' - Passed: 6\n' in output, output[-2000:]
    assert ' - Failed: 0\n' in output, output[-2000:]
