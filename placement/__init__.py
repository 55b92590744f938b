"""A standalone OpenStack Placement service."""

from placement import deferred_packages

deferred_packages.defer_all()
