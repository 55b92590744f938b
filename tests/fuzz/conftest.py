"""schemathesis against a live server: run only where a venv with it
exists.

``$PLACEMENT_TEST_SCHEMATHESIS_VENV`` names a venv with schemathesis
(``tox -e fuzz`` and ``.ci/run`` build one); without it these tests are
not collected.
"""

import os

collect_ignore_glob = []
if not os.environ.get('PLACEMENT_TEST_SCHEMATHESIS_VENV'):
    collect_ignore_glob = ['test_*.py']
