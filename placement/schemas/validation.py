"""JSON schema checking: compiled matchers first, jsonschema for refusals.

``jsonschema.validate`` re-checks the schema against its meta-schema and
builds a validator on every call, which cost more than everything else in
a simple write.  Our schemas are module constants, so each gets its
compiled matcher (``compiled``) the first time it is used, which passes a
matching instance at a tenth of jsonschema's cost.  An instance it does
not pass, or one for a schema it cannot compile, is checked by
jsonschema, whose validator for that schema is then built once and kept,
and the error reported is the one ``jsonschema.validate`` would raise
(the best match).

jsonschema itself is imported only then: a worker that is sent nothing
but valid input (nova's steady traffic) never loads it and its
dependencies, 2.4 MB of each process (five uwsgi workers: 12 MB).
"""

import uuid

from placement.schemas import compiled

# (id(schema), id(formats)) -> _Checks
_VALIDATORS = {}


class _Checks:
    """A schema's compiled matcher (None: not compiled) and jsonschema's
    validator once a refusal needed it.  The schema and formats are kept
    so that their ids cannot be reused by other objects while the key
    exists."""

    __slots__ = ('schema', 'formats', 'matches', 'validator')

    def __init__(self, schema, formats):
        self.schema = schema
        self.formats = formats
        self.matches = compiled.matcher(schema, formats)
        self.validator = None


class Invalid(ValueError):
    """An instance its schema refuses; its text is jsonschema's error's
    (``error``, the best match)."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


class Formats:
    """The ``format`` keywords a check knows ({name: instance -> bool}),
    used alike by the compiled matchers and, registered in jsonschema's
    format checker in place of its own, by jsonschema."""

    def __init__(self, checks):
        self.checks = checks
        self._checker = None

    def checker(self):
        """jsonschema's FormatChecker with these checks, made once."""
        if self._checker is None:
            import jsonschema
            checker = jsonschema.FormatChecker()
            for name, check in self.checks.items():
                checker.checks(name)(check)
            self._checker = checker
        return self._checker


def _any_uuid(instance):
    """A uuid in any spelling Python reads (what upstream's bodies take)."""
    if not isinstance(instance, str):
        return True
    try:
        uuid.UUID(instance)
    except ValueError:
        return False
    return True


def _dashed_uuid(instance):
    """A uuid in the dashed form only, as jsonschema's own ``uuid`` check
    has it (what upstream's query strings take)."""
    if not isinstance(instance, str):
        return True
    return _any_uuid(instance) and all(
        instance[position] == '-' for position in (8, 13, 18, 23))


BODY_FORMATS = Formats({'uuid': _any_uuid})
QUERY_FORMATS = Formats({'uuid': _dashed_uuid})


def check(instance, schema, formats=None):
    """Raise ``Invalid`` unless ``instance`` matches ``schema``."""
    key = (id(schema), id(formats))
    checks = _VALIDATORS.get(key)
    if checks is None:
        checks = _VALIDATORS[key] = _Checks(schema, formats)
    if checks.matches is not None and checks.matches(instance):
        return
    if checks.validator is None:
        checks.validator = _jsonschema_validator(schema, formats)
    import jsonschema
    error = jsonschema.exceptions.best_match(
        checks.validator.iter_errors(instance))
    if error is not None:
        raise Invalid(error)


def _jsonschema_validator(schema, formats):
    import jsonschema
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=formats.checker() if formats else None)
