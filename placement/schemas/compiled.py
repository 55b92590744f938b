"""A schema's verdict as plain Python, for bodies that match it.

jsonschema walks the schema afresh for every body it checks, through a
validator object per subschema: 140 us for the inventory nova PUTs when
a host changes, a tenth of that request's CPU.  ``matcher`` turns a
schema into one function per subschema that only answers whether an
instance matches, for the keywords our schemas use; a schema with any
other keyword is not compiled (``None``) and jsonschema checks every body
against it.  A match is final; a body that does not match is checked by
jsonschema as well, which reports the error it always has.  So this may
be wrong only one way without anyone seeing it: saying "matches" where
jsonschema would refuse, which ``tests/unit/test_schema_compiled.py``
checks on every schema of the API against jsonschema.

The rules are those of JSON Schema 2020-12 as jsonschema applies them,
the draft every schema here is read as (none names another).
"""

import numbers
import re

# Keywords that say nothing about whether an instance matches.
_ANNOTATIONS = frozenset(('title', 'description', 'default', 'examples',
                          '$comment', 'deprecated', 'readOnly',
                          'writeOnly'))


def _is_integer(value):
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float)
                                      and value.is_integer())


def _is_number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


TYPES = {
    'array': lambda value: isinstance(value, list),
    'boolean': lambda value: isinstance(value, bool),
    'integer': _is_integer,
    'null': lambda value: value is None,
    'number': _is_number,
    'object': lambda value: isinstance(value, dict),
    'string': lambda value: isinstance(value, str),
}


class NotCompiled(Exception):
    """The schema uses something this module does not compile."""


def matcher(schema, format_checker=None):
    """A function saying whether an instance matches ``schema`` (False
    may also mean "ask jsonschema"), or None when the schema cannot be
    compiled."""
    if schema.get('$schema') is not None:
        return None
    try:
        return _compile(schema, format_checker)
    except NotCompiled:
        return None


def _compile(schema, format_checker):
    if schema is True:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, dict):
        raise NotCompiled(schema)
    tests = []
    for keyword, argument in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise NotCompiled(keyword)
        test = make(argument, schema, format_checker)
        if test is not None:
            tests.append(test)
    if len(tests) == 1:
        return tests[0]

    def every(value):
        for test in tests:
            if not test(value):
                return False
        return True
    return every


def _type(argument, schema, format_checker):
    names = [argument] if isinstance(argument, str) else list(argument)
    if not names or any(name not in TYPES for name in names):
        raise NotCompiled(argument)
    checks = [TYPES[name] for name in names]
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


def _on(kind, test):
    """``test`` for instances of JSON type ``kind``; others pass, as each
    of these keywords ignores them."""
    applies = TYPES[kind]
    return lambda value: not applies(value) or test(value)


def _minimum(argument, schema, format_checker):
    return _on('number', lambda value: not value < argument)


def _maximum(argument, schema, format_checker):
    return _on('number', lambda value: not value > argument)


def _min_length(argument, schema, format_checker):
    return _on('string', lambda value: len(value) >= argument)


def _max_length(argument, schema, format_checker):
    return _on('string', lambda value: len(value) <= argument)


def _pattern(argument, schema, format_checker):
    regex = re.compile(argument)
    return _on('string', lambda value: regex.search(value) is not None)


def _format(argument, schema, format_checker):
    """``format_checker``: ``validation.Formats``; a format it does not
    check is left to jsonschema, whose own checker might."""
    if format_checker is None:
        return None
    check = format_checker.checks.get(argument)
    if check is None:
        raise NotCompiled(argument)
    return check


def _enum(argument, schema, format_checker):
    # Only names: jsonschema's equality has its own rules for numbers,
    # booleans and containers.
    if not all(isinstance(each, str) for each in argument):
        raise NotCompiled(argument)
    names = frozenset(argument)
    return lambda value: isinstance(value, str) and value in names


def _any_of(argument, schema, format_checker):
    choices = [_compile(each, format_checker) for each in argument]
    return lambda value: any(choice(value) for choice in choices)


def _required(argument, schema, format_checker):
    names = list(argument)
    return _on('object', lambda value: all(name in value for name in names))


def _min_properties(argument, schema, format_checker):
    return _on('object', lambda value: len(value) >= argument)


def _max_properties(argument, schema, format_checker):
    return _on('object', lambda value: len(value) <= argument)


# The keywords on members loop by hand (or map): they run for every
# member of every body, and a generator costs more than the checks it
# drives.

def _properties(argument, schema, format_checker):
    checks = [(name, _compile(sub, format_checker))
              for name, sub in argument.items()]

    def members_match(value):
        if not isinstance(value, dict):
            return True
        for name, check in checks:
            if name in value and not check(value[name]):
                return False
        return True
    return members_match


def _pattern_properties(argument, schema, format_checker):
    checks = [(re.compile(pattern).search, _compile(sub, format_checker))
              for pattern, sub in argument.items()]

    def members_match(value):
        if not isinstance(value, dict):
            return True
        for key, item in value.items():
            for search, check in checks:
                if search(key) and not check(item):
                    return False
        return True
    return members_match


def _additional_properties(argument, schema, format_checker):
    named = frozenset(schema.get('properties', ()))
    searches = [re.compile(pattern).search
                for pattern in schema.get('patternProperties', ())]
    check = _compile(argument, format_checker)

    def extras_match(value):
        if not isinstance(value, dict):
            return True
        for key, item in value.items():
            if (key not in named
                    and not any(search(key) for search in searches)
                    and not check(item)):
                return False
        return True
    return extras_match


def _items(argument, schema, format_checker):
    if 'prefixItems' in schema:
        raise NotCompiled('prefixItems')
    check = _compile(argument, format_checker)
    return _on('array', lambda value: all(map(check, value)))


def _min_items(argument, schema, format_checker):
    return _on('array', lambda value: len(value) >= argument)


def _max_items(argument, schema, format_checker):
    return _on('array', lambda value: len(value) <= argument)


def _unique_items(argument, schema, format_checker):
    """For lists of strings (an aggregate PUT's uuids); any other list
    is "ask jsonschema", whose equality has its own rules for numbers,
    booleans and containers."""
    if argument is not True:
        raise NotCompiled(argument)

    def unique(value):
        if all(type(item) is str for item in value):
            return len(set(value)) == len(value)
        return False
    return _on('array', unique)


_KEYWORDS = {
    'type': _type,
    'minimum': _minimum,
    'maximum': _maximum,
    'minLength': _min_length,
    'maxLength': _max_length,
    'pattern': _pattern,
    'format': _format,
    'enum': _enum,
    'anyOf': _any_of,
    'required': _required,
    'minProperties': _min_properties,
    'maxProperties': _max_properties,
    'properties': _properties,
    'patternProperties': _pattern_properties,
    'additionalProperties': _additional_properties,
    'items': _items,
    'minItems': _min_items,
    'maxItems': _max_items,
    'uniqueItems': _unique_items,
}
