"""This release's version, as its installed package states it."""

from importlib import metadata

PACKAGE = 'placement-falcon'


def release():
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:   # run from a bare checkout
        return 'unknown'
