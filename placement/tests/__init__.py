"""Test fixtures that other projects' test suites import from the installed
service (nova's functional tests among them), under the module paths
upstream Placement ships them at.

They need the ``fixtures`` extra (the ``fixtures`` and ``wsgi-intercept``
packages); nothing outside this package imports them, so the service
itself runs without either.
"""
