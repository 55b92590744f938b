"""schemathesis, driven by the document the server publishes at
/openapi.json, against placement-api (two workers) on PostgreSQL.

Every phase runs (the document's examples, boundary and negative
coverage, random fuzzing, and stateful sequences that follow the links
between operations), bounded in examples per operation and in time. The
checks: no 5xx, and every answer's status, content type and body as the
document says. The service's own log must show no unexpected error.
"""

import os
import subprocess

import pytest

from tests.functional.server import running

CHECKS = ('not_a_server_error', 'status_code_conformance',
          'content_type_conformance', 'response_schema_conformance')
MAX_EXAMPLES = int(os.environ.get('PLACEMENT_TEST_FUZZ_EXAMPLES', '25'))
MAX_SECONDS = int(os.environ.get('PLACEMENT_TEST_FUZZ_SECONDS', '240'))


@pytest.mark.backends('postgresql')
def test_schemathesis_finds_nothing(database_url, tmp_path):
    st = os.path.join(os.environ['PLACEMENT_TEST_SCHEMATHESIS_VENV'],
                      'bin', 'st')
    with running(database_url, tmp_path) as port:
        result = subprocess.run(
            [st, '--no-color', 'run',
             'http://127.0.0.1:%d/openapi.json' % port,
             '--header', 'X-Auth-Token: admin',
             '--header', 'X-Roles: admin,service',
             '--header', 'OpenStack-API-Version: placement latest',
             '--checks', ','.join(CHECKS),
             '--max-examples', str(MAX_EXAMPLES),
             '--max-time', str(MAX_SECONDS),
             # One: with two, hypothesis's threads parsing lambdas at once
             # met CPython 3.11's AST recursion-depth race (gh-106905),
             # a SystemError in the tool, not the service.
             '--workers', '1', '--request-timeout', '30',
             '--warnings', 'off'],
            cwd=tmp_path, capture_output=True, text=True,
            timeout=MAX_SECONDS + 300)
    log = (tmp_path / 'server.log').read_text()
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr
    assert 'Unexpected error' not in log, log[-20000:]
