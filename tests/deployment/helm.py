"""openstack-helm's placement chart, rendered the way helm renders what
the tests use.

``helm`` itself is not packaged for the machines the tests run on, so the
few templates the lifecycle needs are rendered here from the chart's own
files, read at run time from a checkout (``$PLACEMENT_TEST_HELM_CHART``,
the chart's directory; no registry publishes it):

- ``db_sync_script``: ``templates/bin/_db-sync.sh.tpl`` verbatim less its
  one template comment (``{{/* licence */}}``), which is all
  ``helm-toolkit.utils.template`` changes in it (``configmap-bin.yaml``'s
  ``db-sync.sh``).
- ``oslo_conf``: helm-toolkit's ``helm-toolkit.utils.to_oslo_conf``
  (``helm-toolkit/templates/utils/_to_oslo_conf.tpl``): sections and keys
  in sorted order (Go templates range over maps so), lists joined with
  commas (``joinListWithComma``), ``{type: multistring}`` maps one line
  per value, ``{type: csv}`` joined, nil values left out, Go's rendering
  of booleans (``true``/``false``).  ``configmap-etc.yaml`` renders
  ``placement.conf``, ``placement-api-uwsgi.ini`` and ``logging.conf``
  with it from ``values.yaml``'s ``conf``.
- ``values``: ``values.yaml`` with overrides merged as ``helm
  --values`` merges them (maps deeply, the rest replaced).
"""

import copy
import pathlib
import re

import yaml


def values(chart, overrides):
    merged = copy.deepcopy(yaml.safe_load(
        (pathlib.Path(chart) / 'values.yaml').read_text()))
    _merge(merged, overrides)
    return merged


def _merge(target, overrides):
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def db_sync_script(chart):
    text = (pathlib.Path(chart) / 'templates' / 'bin' /
            '_db-sync.sh.tpl').read_text()
    rendered = re.sub(r'\{\{/\*.*?\*/\}\}', '', text, flags=re.S)
    assert '{{' not in rendered, rendered
    return rendered


def _scalar(value):
    if value is True:
        return 'true'
    if value is False:
        return 'false'
    return str(value)


def oslo_conf(sections):
    lines = []
    for section in sorted(sections):
        entries = sections[section]
        if not isinstance(entries, dict):
            continue
        lines.append('[%s]' % section)
        for key in sorted(entries):
            value = entries[key]
            if isinstance(value, list):
                lines.append('%s = %s' % (key, ','.join(map(_scalar, value))))
            elif isinstance(value, dict):
                if value.get('type') == 'multistring':
                    for item in value['values']:
                        lines.append('%s = %s' % (key, _scalar(item)))
                elif value.get('type') == 'csv':
                    lines.append('%s = %s' % (
                        key, ','.join(map(_scalar, value['values']))))
            elif value is None:
                continue
            else:
                lines.append('%s = %s' % (key, _scalar(value)))
    return '\n'.join(lines) + '\n'
