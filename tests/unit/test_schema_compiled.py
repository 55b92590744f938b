"""The compiled schema matchers (``placement.schemas.compiled``) against
jsonschema itself, on every schema of the API: for thousands of bodies
built from each schema and then spoiled at random, the matcher says
"matches" exactly when jsonschema finds no error."""

import importlib
import math
import pkgutil
import random
import re
import subprocess
import sys
import textwrap
import uuid

import jsonschema
import pytest

import placement.schemas
from placement.schemas import compiled
from placement.schemas import inventory
from placement.schemas import validation

EXAMPLES = 300
UUID = str(uuid.UUID(int=7))
# Strings and keys to draw from: some match each pattern the schemas use.
WORDS = ['VCPU', 'MEMORY_MB', 'CUSTOM_GOLD', 'HW_CPU_X86_AVX2', 'custom_x',
         'CUSTOM_', 'in:' + UUID, UUID, UUID.upper(), 'not-a-uuid', '',
         ' ', 'a' * 300, 'foo', 'resources', 'INSTANCE', 'MIGRATION',
         '1.0', '12', 'é', 'MISC_SHARES_VIA_AGGREGATE', '!' + UUID,
         'CUSTOM_\u00e9', UUID.replace('-', ''), '{%s}' % UUID]
ODD = [True, False, None, 0, -1, 1, 1.0, 1.5, 2 ** 31, 2 ** 63, -2 ** 31,
       1e308, math.inf, -math.inf, 3.40282e+38, 3.5e+38, '', 'x', UUID,
       [], {}, {'a': 1}, [1, 'a'], [UUID, UUID]]


def _schemas():
    """Every schema the API validates with: (name, schema)."""
    found = []
    for module in pkgutil.iter_modules(placement.schemas.__path__):
        values = vars(importlib.import_module(
            'placement.schemas.' + module.name))
        for name, value in sorted(values.items()):
            if (isinstance(value, dict) and not name.startswith('_')
                    and 'type' in value):
                found.append(('%s.%s' % (module.name, name), value))
    return found


SCHEMAS = _schemas()
# Those the matchers compile; the others are always left to jsonschema.
COMPILED = [(name, schema) for name, schema in SCHEMAS
            if compiled.matcher(schema) is not None]


def _string(schema, rng):
    if 'enum' in schema:
        return rng.choice(schema['enum'])
    if schema.get('format') == 'uuid':
        return str(uuid.UUID(int=rng.getrandbits(128)))
    pattern = schema.get('pattern')
    choices = [w for w in WORDS
               if pattern is None or re.search(pattern, w)] or WORDS
    return rng.choice(choices)


def _number(schema, rng, integer):
    low = schema.get('minimum', -10)
    high = schema.get('maximum', 10 ** 6)
    value = rng.choice([low, high, low + 1, high - 1,
                        rng.uniform(low, min(high, low + 10 ** 6))])
    return int(value) if integer else float(value)


def _object(schema, rng, depth):
    value = {}
    for name, sub in schema.get('properties', {}).items():
        if name in schema.get('required', ()) or rng.random() < 0.6:
            value[name] = build(sub, rng, depth + 1)
    for pattern, sub in schema.get('patternProperties', {}).items():
        for key in rng.sample(WORDS, 3):
            if re.search(pattern, key):
                value[key] = build(sub, rng, depth + 1)
    extra = schema.get('additionalProperties', True)
    if isinstance(extra, dict) and rng.random() < 0.5:
        value[rng.choice(WORDS)] = build(extra, rng, depth + 1)
    return value


def build(schema, rng, depth=0):
    """An instance shaped as ``schema`` asks, mostly matching it."""
    if not isinstance(schema, dict) or depth > 6:
        return rng.choice(ODD)
    if 'anyOf' in schema:
        branch = rng.choice(schema['anyOf'])
        rest = {k: v for k, v in schema.items() if k != 'anyOf'}
        if rest:    # the branch narrows the rest: {'required': [...]}
            branch = dict(rest, **branch)
            branch['required'] = (list(rest.get('required', []))
                                  + list(branch.get('required', [])))
        return build(branch, rng, depth)
    kinds = schema.get('type', 'object')
    kind = rng.choice([kinds] if isinstance(kinds, str) else kinds)
    if kind == 'object':
        return _object(schema, rng, depth)
    if kind == 'array':
        count = rng.randint(schema.get('minItems', 0),
                            min(schema.get('maxItems', 4), 4))
        return [build(schema.get('items', True), rng, depth + 1)
                for _ in range(count)]
    if kind == 'string':
        return _string(schema, rng)
    if kind in ('integer', 'number'):
        return _number(schema, rng, kind == 'integer')
    return {'boolean': rng.choice([True, False]), 'null': None}[kind]


def spoil(value, rng):
    """``value`` with one part replaced, removed or added at random."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        action = rng.random()
        if action < 0.3:
            del value[key]
        elif action < 0.5:
            value[rng.choice(WORDS)] = rng.choice(ODD)
        else:
            value[key] = spoil(value[key], rng)
        return value
    if isinstance(value, list) and value and rng.random() < 0.7:
        index = rng.randrange(len(value))
        value[index] = spoil(value[index], rng)
        return value
    return rng.choice(ODD)


@pytest.mark.parametrize('formats', [validation.BODY_FORMATS,
                                     validation.QUERY_FORMATS],
                         ids=['body', 'query'])
@pytest.mark.parametrize('name, schema', COMPILED,
                         ids=[name for name, _ in COMPILED])
def test_the_matcher_agrees_with_jsonschema(name, schema, formats):
    matches = compiled.matcher(schema, formats)
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=formats.checker())
    rng = random.Random(name)
    verdicts = set()
    for example in range(EXAMPLES):
        instance = build(schema, rng)
        for _ in range(example % 3):
            instance = spoil(instance, rng)
        valid = validator.is_valid(instance)
        assert matches(instance) == valid, instance
        verdicts.add(valid)
    assert verdicts == {True, False}


def test_every_schema_of_the_api_compiles():
    """So a valid body or query is never checked by jsonschema, which a
    worker then need not import."""
    assert len(SCHEMAS) > 60
    for name, schema in SCHEMAS:
        jsonschema.validators.validator_for(schema).check_schema(schema)
        for formats in (validation.BODY_FORMATS, validation.QUERY_FORMATS):
            assert compiled.matcher(schema, formats) is not None, name


@pytest.mark.parametrize('schema', [
    {'type': 'object', 'not': {'required': ['a']}},
    {'type': 'array', 'contains': {'type': 'string'}},
    {'type': 'integer', 'enum': [1, 2]},
    {'$schema': 'http://json-schema.org/draft-04/schema#',
     'type': 'integer'},
    {'type': 'string', 'const': 'a'},
])
def test_what_the_matchers_do_not_know_is_left_to_jsonschema(schema):
    assert compiled.matcher(schema) is None


def test_a_format_the_checks_do_not_know_is_left_to_jsonschema():
    schema = {'type': 'string', 'format': 'email'}
    assert compiled.matcher(schema, validation.BODY_FORMATS) is None
    assert compiled.matcher(schema) is not None     # formats not checked


def test_unique_items_of_other_than_strings_are_asked_of_jsonschema():
    """jsonschema tells 1 from True (unique) and 1 from 1.0 (not);
    the matcher leaves both to it."""
    schema = {'type': 'array', 'uniqueItems': True}
    matches = compiled.matcher(schema)
    assert matches(['a', 'b']) and not matches(['a', 'a'])
    assert not matches([1, True])
    validation.check([1, True], schema)
    with pytest.raises(validation.Invalid):
        validation.check([1, 1.0], schema)


def test_the_json_types_are_jsonschema_s():
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER
    for value in ODD + WORDS + [2.0, -0.0, math.nan]:
        for kind, test in compiled.TYPES.items():
            assert test(value) == checker.is_type(value, kind), (kind, value)


def test_a_refused_body_still_gets_jsonschema_s_error():
    body = {'resource_provider_generation': 1,
            'inventories': {'VCPU': {'total': 0}}}
    with pytest.raises(validation.Invalid) as caught:
        validation.check(body, inventory.PUT_ALL)
    assert caught.value.error.message == '0 is less than the minimum of 1'
    assert str(caught.value) == str(caught.value.error)


def test_jsonschema_is_imported_only_for_a_refusal():
    """A process sent only valid bodies and queries (every handler
    imported) never loads jsonschema; the first refusal does."""
    code = textwrap.dedent('''
        import sys
        import placement.app
        from placement import errors
        from placement import query_params
        from placement.handlers import base
        from placement.schemas import aggregate, inventory, resource_provider
        uuid = '%s'
        base.validate({'resource_provider_generation': 1, 'inventories': {
            'VCPU': {'total': 8}}}, inventory.PUT_ALL)
        base.validate({'resource_provider_generation': 1,
                       'aggregates': [uuid]}, aggregate.PUT_1_19)
        query_params.validate(query_params.Query.parse('in_tree=' + uuid),
                              resource_provider.GET_1_14)
        assert 'jsonschema' not in sys.modules
        try:
            base.validate({'inventories': {}}, inventory.PUT_ALL)
        except errors.BadRequest as refused:
            assert 'is a required property' in refused.description
        assert 'jsonschema' in sys.modules
    ''' % UUID)
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120)
