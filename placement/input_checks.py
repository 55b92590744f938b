"""What the service accepts as text and as JSON, the same on every
database backend.

PostgreSQL cannot store NUL in text and no UTF-8 database can store a
lone UTF-16 surrogate, while SQLite stores both; so the same request
would be kept by one deployment and be a 500 on another. Such text is
refused up front (400) wherever it arrives: body, path or query string.
JSON is refused when it nests deeper than any request of this API does
(the decoder would otherwise recurse until Python's stack limit), and
when it carries NaN, Infinity or a number too large to be finite, which
are not JSON and which no column holds.
"""

import json
import math
import re

# No request body of this API nests deeper than six levels.
MAX_JSON_DEPTH = 32

_UNSTORABLE = re.compile('[\x00\ud800-\udfff]')


def unstorable(text):
    """Why ``text`` cannot be stored everywhere, or None if it can."""
    match = _UNSTORABLE.search(text)
    if match is None:
        return None
    if match.group() == '\x00':
        return 'it contains a NUL character'
    return 'it contains a lone UTF-16 surrogate (U+%04X)' % ord(match.group())


def _refuse_constant(name):
    raise ValueError('%s is not a JSON number' % name)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError('number %s is out of range' % text)
    return value


def load_json(raw):
    """``raw`` (bytes) decoded; ValueError saying what is wrong if it is
    not JSON this service can keep."""
    try:
        data = json.loads(raw, parse_constant=_refuse_constant,
                          parse_float=_finite_float)
    except RecursionError:
        raise ValueError('nested more than %d levels deep' % MAX_JSON_DEPTH)
    if not _plainly_fine(raw):
        _check_tree(data)
    return data


def _plainly_fine(raw):
    """Whether ``raw`` can be seen, without walking what it decoded to,
    to hold nothing ``_check_tree`` refuses (nova's small PUTs): it is
    UTF-8 (UTF-16 or 32 has NUL bytes), and so can carry NUL or a lone
    surrogate only as a ``\\u`` escape or, for a surrogate, as bytes
    led by 0xED (which the decoder lets through); and it has no more
    brackets than the depth allowed, counting any inside strings."""
    return (b'\\u' not in raw and b'\xed' not in raw and b'\x00' not in raw
            and raw.count(b'[') + raw.count(b'{') <= MAX_JSON_DEPTH)


def _check_tree(data):
    """Depth and strings of a decoded document, without recursion."""
    pending = [(data, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise ValueError('nested more than %d levels deep'
                                 % MAX_JSON_DEPTH)
            if isinstance(node, dict):
                for key, value in node.items():
                    _check_string(key)
                    pending.append((value, depth + 1))
            else:
                pending.extend((item, depth + 1) for item in node)
        elif isinstance(node, str):
            _check_string(node)


def _check_string(text):
    problem = unstorable(text)
    if problem:
        raise ValueError('string %s is not accepted: %s'
                         % (json.dumps(text[:40]), problem))
