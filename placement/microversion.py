"""Microversions: the supported range and how a handler is gated on it.

A request's version is a ``microversion_parse.Version`` (a tuple subclass
with ``matches``), kept on ``req.context.microversion`` by the
microversion middleware.
"""

import microversion_parse

SERVICE_TYPE = 'placement'
HEADER = 'OpenStack-API-Version'

# One entry per microversion; what each adds is in api-ref/.
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)


def version_string(version):
    return '%d.%d' % tuple(version)


VERSIONS = [version_string((1, minor))
            for minor in range(MIN_VERSION[1], MAX_VERSION[1] + 1)]
MIN_VERSION_STRING = version_string(MIN_VERSION)
MAX_VERSION_STRING = version_string(MAX_VERSION)


def parse(environ):
    """Return the Version the client asked for (the minimum if none).

    Raises ``TypeError`` for a malformed version string (400) and
    ``ValueError`` for one outside our range (406).
    """
    return microversion_parse.extract_version(
        environ, SERVICE_TYPE, VERSIONS)


def as_tuple(value):
    if value is None:
        return None
    major, minor = value.split('.')
    return int(major), int(minor)


def is_at_least(req, version):
    """True if the request's microversion is ``version`` ("X.Y") or later."""
    return tuple(req.context.microversion) >= as_tuple(version)
