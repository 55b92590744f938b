"""The real clients, unchanged, against a live server: run only where a
venv with them exists.

``$PLACEMENT_TEST_CLIENT_VENV`` names a venv with python-openstackclient,
osc-placement and openstacksdk (``tox -e clients`` and ``.ci/run`` build
one); without it these tests are not collected.
"""

import os

collect_ignore_glob = []
if not os.environ.get('PLACEMENT_TEST_CLIENT_VENV'):
    collect_ignore_glob = ['test_*.py']
