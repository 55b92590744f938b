"""Provider files: reading, validating, and errors that name the line.

The format is nova's ``provider.yaml`` (schema 1.0: ``meta``, then
``providers``, each with ``identification``, ``inventories.additional``
and ``traits.additional``), which is accepted as it is, extended with:

- ``identification`` may give both ``uuid`` and ``name`` (a new provider
  needs a name);
- ``parent``: ``{uuid: ...}`` or ``{name: ...}``, an existing provider or
  one earlier in the file; a provider the file names that does not exist
  yet is created, under its parent if it has one;
- ``aggregates.additional``: aggregate uuids the provider is a member of;
- inventory records with any of ``total``, ``reserved``, ``min_unit``,
  ``max_unit``, ``step_size``, ``allocation_ratio``;
- ``selectors``: ``match`` every provider in an ``aggregate`` or with a
  ``trait``, and give them all ``traits.additional`` or
  ``allocation_ratios`` (``{resource class: ratio}`` for the classes they
  have inventory of).

``$COMPUTE_NODE`` as a uuid (nova's "this compute node") stands for the
provider named by ``--compute-node``.
"""

import jsonschema
import yaml

COMPUTE_NODE = '$COMPUTE_NODE'
SCHEMA_VERSIONS = ('1.0', '1.1')

_UUID = {'type': 'string', 'pattern': (
    r'^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
    r'[0-9a-fA-F]{12}$')}
_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 200}
_CLASS = '^[A-Z0-9_]{1,255}$'
_TRAIT = {'type': 'string', 'pattern': '^[A-Z0-9_]{1,255}$'}
_COUNT = {'type': 'integer', 'minimum': 0, 'maximum': 0x7FFFFFFF}
_RATIO = {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 3.40282e+38}
_REFERENCE = {
    'type': 'object',
    'properties': {'uuid': {'anyOf': [_UUID, {'const': COMPUTE_NODE}]},
                   'name': _NAME},
    'minProperties': 1,
    'additionalProperties': False,
}
_RECORD = {
    'type': 'object',
    'properties': {
        'total': _COUNT, 'reserved': _COUNT,
        'min_unit': dict(_COUNT, minimum=1),
        'max_unit': dict(_COUNT, minimum=1),
        'step_size': dict(_COUNT, minimum=1),
        'allocation_ratio': _RATIO,
    },
    'minProperties': 1,
    'additionalProperties': False,
}
_TRAITS = {
    'type': 'object',
    'properties': {'additional': {'type': 'array', 'items': _TRAIT,
                                  'uniqueItems': True}},
    'additionalProperties': False,
}
PROVIDER = {
    'type': 'object',
    'properties': {
        'identification': _REFERENCE,
        'parent': _REFERENCE,
        'inventories': {
            'type': 'object',
            'properties': {'additional': {
                'type': 'array',
                'items': {'type': 'object',
                          'patternProperties': {_CLASS: _RECORD},
                          'additionalProperties': False,
                          'minProperties': 1},
            }},
            'additionalProperties': False,
        },
        'traits': _TRAITS,
        'aggregates': {
            'type': 'object',
            'properties': {'additional': {'type': 'array', 'items': _UUID,
                                          'uniqueItems': True}},
            'additionalProperties': False,
        },
    },
    'required': ['identification'],
    'additionalProperties': False,
}
SELECTOR = {
    'type': 'object',
    'properties': {
        'match': {
            'type': 'object',
            'properties': {'aggregate': _UUID, 'trait': _TRAIT},
            'minProperties': 1, 'maxProperties': 1,
            'additionalProperties': False,
        },
        'traits': _TRAITS,
        'allocation_ratios': {'type': 'object',
                              'patternProperties': {_CLASS: _RATIO},
                              'additionalProperties': False},
    },
    'required': ['match'],
    'additionalProperties': False,
}
SCHEMA = {
    'type': 'object',
    'properties': {
        'meta': {
            'type': 'object',
            'properties': {'schema_version': {'enum': list(SCHEMA_VERSIONS)}},
            'required': ['schema_version'],
        },
        'providers': {'type': 'array', 'items': PROVIDER},
        'selectors': {'type': 'array', 'items': SELECTOR},
    },
    'required': ['meta'],
    'additionalProperties': False,
}


class Invalid(Exception):
    """The file cannot be applied: every problem, each with its line."""

    def __init__(self, path, problems):
        self.problems = problems
        super().__init__('\n'.join('%s:%s' % (path, problem)
                                   for problem in problems))


def _field(path):
    text = ''
    for part in path:
        text += '[%d]' % part if isinstance(part, int) else (
            '.%s' % part if text else str(part))
    return text or '(top level)'


def _line(node, path):
    """The 1-based line of the deepest node ``path`` reaches."""
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = [value for key, value in node.value if key.value == part]
            if not found:
                break
            node = found[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
    return node.start_mark.line + 1


def load(text, path='<file>'):
    """The validated document in ``text``; Invalid naming each problem's
    line and field."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        line = mark.line + 1 if mark else 1
        raise Invalid(path, ['%d: not YAML: %s' % (
            line, getattr(exc, 'problem', None) or exc)])
    if root is None:
        raise Invalid(path, ['1: the file is empty'])
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: _line(root, e.absolute_path))
    problems = ['%d: %s: %s' % (_line(root, error.absolute_path),
                                _field(error.absolute_path), error.message)
                for error in errors]
    problems += _reference_problems(data, root) if not problems else []
    if problems:
        raise Invalid(path, problems)
    return data


def _reference_problems(data, root):
    """Names the file's own rules give, beyond the schema's."""
    problems = []
    seen = set()
    for index, provider in enumerate(data.get('providers') or []):
        ident = provider['identification']
        key = ident.get('uuid') or ident.get('name')
        if key in seen:
            problems.append('%d: providers[%d].identification: %s is '
                            'named twice' % (
                                _line(root, ('providers', index)), index,
                                key))
        seen.add(key)
        parent = provider.get('parent')
        if parent and (parent.get('uuid') or parent.get('name')) == key:
            problems.append('%d: providers[%d].parent: a provider cannot be '
                            'its own parent' % (_line(
                                root, ('providers', index, 'parent')), index))
    return problems
