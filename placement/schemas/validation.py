"""JSON schema checking with one validator per schema, built once.

``jsonschema.validate`` re-checks the schema against its meta-schema and
builds a validator on every call, which cost more than everything else in
a simple write.  Our schemas are module constants, so each gets its
validator the first time it is used, and its compiled matcher
(``compiled``), which passes a matching body at a tenth of jsonschema's
cost; a body it does not pass is checked by jsonschema, and the error
reported is the same one ``jsonschema.validate`` would raise (the best
match).
"""

import jsonschema

from placement.schemas import compiled

_VALIDATORS = {}


def _validator(schema, format_checker):
    key = (id(schema), id(format_checker))
    entry = _VALIDATORS.get(key)
    if entry is None:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        # The schema and checker are kept in the entry so that their ids
        # cannot be reused by other objects while the key exists.
        entry = (schema, format_checker,
                 cls(schema, format_checker=format_checker),
                 compiled.matcher(schema, format_checker))
        _VALIDATORS[key] = entry
    return entry[2], entry[3]


def check(instance, schema, format_checker=None):
    """Raise ``jsonschema.ValidationError`` unless ``instance`` matches."""
    validator, matches = _validator(schema, format_checker)
    if matches is not None and matches(instance):
        return
    error = jsonschema.exceptions.best_match(
        validator.iter_errors(instance))
    if error is not None:
        raise error
