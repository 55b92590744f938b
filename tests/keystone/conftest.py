"""Tests against a real keystone: run only where one can be started.

``$PLACEMENT_TEST_KEYSTONE_VENV`` names a venv with keystone and gunicorn
installed (``tox -e keystone`` and ``.ci/run`` build one); without it these
tests are not collected, and the main suite stays free of keystone.
"""

import os

collect_ignore_glob = []
if not os.environ.get('PLACEMENT_TEST_KEYSTONE_VENV'):
    collect_ignore_glob = ['test_*.py']
