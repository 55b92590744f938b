"""Microversions: the supported range and how a handler is gated on it.

A request's version is a ``microversion_parse.Version`` (a tuple subclass
with ``matches``), kept on ``req.context.microversion`` by the
microversion middleware.
"""

import functools

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


_ENVIRON_KEY = 'HTTP_OPENSTACK_API_VERSION'


def parse(environ):
    """Return the Version the client asked for (the minimum if none).

    Raises ``TypeError`` for a malformed version string (400) and
    ``ValueError`` for one outside our range (406).
    """
    return _parse_header(environ.get(_ENVIRON_KEY))


@functools.lru_cache(maxsize=256)
def _parse_header(value):
    """The Version for one value of the header (None: not sent).

    The header is all the library reads of the environ, and clients send
    a handful of values all day: parsing it each time (the library folds
    every header of the request first) cost 7-17 % of a cheap request's
    CPU.  Bounded, since the value is the client's to choose; a refused
    value raises and is not kept.  The Version is shared, and nothing
    changes one after it is made.
    """
    return microversion_parse.extract_version(
        {} if value is None else {_ENVIRON_KEY: value}, SERVICE_TYPE,
        VERSIONS)


def as_tuple(value):
    if value is None:
        return None
    major, minor = value.split('.')
    return int(major), int(minor)


def is_at_least(req, version):
    """True if the request's microversion is ``version`` ("X.Y") or later."""
    return tuple(req.context.microversion) >= as_tuple(version)
