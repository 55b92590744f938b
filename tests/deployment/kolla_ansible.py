"""kolla-ansible's placement configuration, rendered from its own files.

What kolla-ansible 22.2.0's ``placement`` role writes into a host's
``/etc/kolla/placement-api/`` (``node_config_directory``), made from the
role's own templates and variables as they are in its source
distribution (``sources.kolla_ansible()``); nothing of them is copied
into this repository:

- ``config.json``: ``roles/placement/templates/placement-api.json.j2``
  (``tasks/config.yml``, "Copying over config.json files for services").
- ``placement.conf``: ``templates/placement.conf.j2`` merged with the
  operator's overrides in ``node_custom_config`` as the role's
  ``merge_configs`` task lists them, by kolla-ansible's own
  ``OverrideConfigParser`` (``ansible/action_plugins/merge_configs.py``,
  loaded with ansible's two imports stubbed: it subclasses nothing of
  them).  The tests' override is the one thing an operator adds here:
  ``[api] auth_strategy = noauth2``, as there is no keystone.
- ``placement-api-uwsgi.ini``: ``roles/service-uwsgi-config/templates/
  uwsgi.ini.j2`` with the variables ``tasks/config.yml``'s "Configure
  uWSGI for Placement" task passes (read from that file) over the role's
  ``defaults/main.yml``.
- ``migrate-db.rc``: ``templates/migrate-db.rc.j2``.

Variables are resolved as Ansible would for these templates, lazily and
with the same precedence: the roles' ``defaults/main.yml`` under
kolla-ansible's ``group_vars/all/*.yml``, under the task's vars, under
the deployment's own settings (what ``globals.yml`` and
``passwords.yml`` give as extra vars: addresses, ports, passwords).  A
value that is a single ``{{ expression }}`` keeps its type (Ansible's
native types).  The filters are kolla-ansible's own (``kolla_address``,
``kolla_url``, ``put_address_in_context`` from ``kolla_ansible/``) and
Ansible's ``bool``; ``kolla_address`` reads the host's facts, given here
for the loopback interface.
"""

import collections.abc
import importlib.util
import ipaddress
import pathlib
import sys
import types

import jinja2
import jinja2.nativetypes
import yaml

SERVICE = 'placement-api'


def _ansible_bool(value):
    """Ansible's ``bool`` filter."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ('yes', 'on', '1', 'true', 'y')


def _ipaddr(value, query=''):
    """The ``ansible.utils.ipaddr`` filter, for what kolla-ansible's
    group_vars ask of it: ``ipaddr('address')`` of a plain address."""
    address = ipaddress.ip_interface(str(value)).ip
    if query not in ('', 'address'):
        raise NotImplementedError('ipaddr(%r)' % query)
    return str(address)


def _load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kolla_ansible_filters(source):
    """kolla-ansible's address filters, from its ``kolla_ansible``
    package in the sdist ``source`` (its ``__init__`` is skipped: it asks
    pbr for the installed package's version)."""
    package = source / 'kolla_ansible'
    if 'kolla_ansible' not in sys.modules:
        stub = types.ModuleType('kolla_ansible')
        stub.__path__ = [str(package)]
        sys.modules['kolla_ansible'] = stub
    modules = {name: _load_module('kolla_ansible.%s' % name,
                                  package / ('%s.py' % name))
               for name in ('exception', 'helpers', 'put_address_in_context',
                            'kolla_address', 'kolla_url')}
    return {'kolla_address': modules['kolla_address'].kolla_address,
            'kolla_url': modules['kolla_url'].kolla_url,
            'put_address_in_context':
                modules['put_address_in_context'].put_address_in_context,
            'bool': _ansible_bool,
            'ansible.utils.ipaddr': _ipaddr}


def override_config_parser(source):
    """kolla-ansible's ``merge_configs`` parser class
    (``ansible/action_plugins/merge_configs.py``).  The module imports
    ``ansible.constants`` and ``ansible.plugins.action`` for its action
    class, which is not used here: those two are stubbed while it loads,
    so that ansible itself is not needed in the test venv."""
    saved = {name: sys.modules.get(name)
             for name in ('ansible', 'ansible.constants', 'ansible.plugins',
                          'ansible.plugins.action', 'ansible.template')}
    ansible = types.ModuleType('ansible')
    ansible.constants = types.ModuleType('ansible.constants')
    ansible.plugins = types.ModuleType('ansible.plugins')
    ansible.plugins.action = types.ModuleType('ansible.plugins.action')
    ansible.plugins.action.ActionBase = object
    sys.modules.update({'ansible': ansible,
                        'ansible.constants': ansible.constants,
                        'ansible.plugins': ansible.plugins,
                        'ansible.plugins.action': ansible.plugins.action})
    try:
        module = _load_module('_kolla_ansible_merge_configs',
                              source / 'ansible' / 'action_plugins'
                              / 'merge_configs.py')
    finally:
        for name, module_before in saved.items():
            if module_before is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module_before
    return module.OverrideConfigParser


class Variables(collections.abc.Mapping):
    """Ansible's variables for one host: ``layers`` (lowest precedence
    first) merged, each value rendered when first read."""

    def __init__(self, layers, filters):
        self.raw = {}
        for layer in layers:
            self.raw.update(layer)
        self.cache = {}
        self.native = jinja2.nativetypes.NativeEnvironment(
            undefined=jinja2.StrictUndefined)
        self.native.filters.update(filters)

    def __getitem__(self, key):
        if key not in self.cache:
            raw = self.raw[key]
            try:
                self.cache[key] = self.resolve(raw)
            except jinja2.UndefinedError as exc:
                # Jinja looks up every name a template mentions when it
                # starts, used or not: as in Ansible, a variable that
                # cannot be rendered fails only where it is used.
                self.cache[key] = jinja2.StrictUndefined(
                    hint='%s: %s' % (key, exc))
        return self.cache[key]

    def __contains__(self, key):
        return key in self.raw

    def __iter__(self):
        return iter(self.raw)

    def __len__(self):
        return len(self.raw)

    def resolve(self, value):
        if isinstance(value, str) and ('{{' in value or '{%' in value):
            template = self.native.from_string(value)
            context = template.new_context(self, shared=True)
            return jinja2.nativetypes.native_concat(
                template.root_render_func(context))
        if isinstance(value, dict):
            return {key: self.resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        return value


def _yaml(path):
    return yaml.safe_load(path.read_text()) or {}


def _task(tasks_file, name):
    for task in _yaml(tasks_file):
        if task.get('name') == name:
            return task
    raise LookupError('%s: no task %r' % (tasks_file, name))


class NodeConfig:
    """``node_config_directory`` for the placement-api service on one
    host, rendered from kolla-ansible's sdist ``source``.

    ``settings``: the deployment's extra vars; at least
    ``database_address``, ``database_port``, ``placement_api_port``,
    ``placement_database_password``.  ``custom``: {path under
    ``node_custom_config``: text}, the operator's overrides."""

    def __init__(self, source, settings, custom):
        self.source = pathlib.Path(source)
        self.filters = kolla_ansible_filters(self.source)
        ansible = self.source / 'ansible'
        self.role = ansible / 'roles' / 'placement'
        self.uwsgi_role = ansible / 'roles' / 'service-uwsgi-config'
        group_vars = {}
        for path in sorted((ansible / 'group_vars' / 'all').glob('*.yml')):
            group_vars.update(_yaml(path))
        uwsgi_task = _task(self.role / 'tasks' / 'config.yml',
                           'Configure uWSGI for Placement')
        self.settings = settings
        self.custom = custom
        base = [_yaml(self.role / 'defaults' / 'main.yml'),
                _yaml(self.uwsgi_role / 'defaults' / 'main.yml'),
                group_vars]
        self.variables = Variables(
            base + [self._host(), uwsgi_task['vars'], settings],
            self.filters)
        self.text = jinja2.Environment(undefined=jinja2.StrictUndefined,
                                       trim_blocks=True,
                                       keep_trailing_newline=True)
        self.text.filters.update(self.filters)

    def _host(self):
        """What Ansible itself provides: the inventory, facts of the
        loopback interface, the play's role."""
        return {
            'inventory_hostname': 'localhost',
            'groups': {'placement-api': ['localhost'],
                       'memcached': ['localhost'],
                       'valkey': ['localhost'],
                       'loadbalancer': []},
            'hostvars': _HostVars(self),
            'network_interface': 'lo',
            'ansible_facts': {'lo': {'ipv4': {'address': '127.0.0.1'}},
                              'processor_vcpus': 2},
            'ansible_parent_role_names': ['placement'],
            'role_path': str(self.role),
        }

    def render(self, template, environment=None, **task_vars):
        """``template`` (a path) rendered as Ansible's template module
        does (``trim_blocks``) with the host's variables and
        ``task_vars`` over them."""
        env = environment or self.text
        compiled = env.from_string(pathlib.Path(template).read_text())
        scope = Variables([self.variables.raw, task_vars], self.filters)
        return ''.join(compiled.root_render_func(
            compiled.new_context(scope, shared=True)))

    def merged_placement_conf(self):
        """The role's "Copying over placement.conf" task: its
        ``merge_configs`` sources in order, each one present rendered
        with ``lstrip_blocks`` (as merge_configs does), merged by
        kolla-ansible's parser."""
        task = _task(self.role / 'tasks' / 'config.yml',
                     'Copying over placement.conf')
        parser = override_config_parser(self.source)()
        lstrip = jinja2.Environment(undefined=jinja2.StrictUndefined,
                                    trim_blocks=True, lstrip_blocks=True,
                                    keep_trailing_newline=True)
        lstrip.filters.update(self.filters)
        scope = Variables([self.variables.raw,
                           {'item': {'key': SERVICE}, 'service_name': SERVICE,
                            'node_custom_config': '/custom'}],
                          self.filters)
        for source in task['merge_configs']['sources']:
            path = scope.resolve(source)
            if path.startswith('/custom/'):
                text = self.custom.get(path[len('/custom/'):])
                if text is None:
                    continue
                file = None
            else:
                file = pathlib.Path(path)
                text = file.read_text()
            compiled = lstrip.from_string(text)
            rendered = ''.join(compiled.root_render_func(
                compiled.new_context(scope, shared=True)))
            parser.parse(iter(rendered.splitlines(True)))
        out = _StringWriter()
        parser.write(out)
        return out.getvalue()

    def write(self, node_config_directory):
        """Write the service's directory as the role's config tasks do:
        ``<node_config_directory>/placement-api/``."""
        target = pathlib.Path(node_config_directory) / SERVICE
        target.mkdir(parents=True, exist_ok=True)
        templates = self.role / 'templates'
        (target / 'config.json').write_text(
            self.render(templates / 'placement-api.json.j2',
                        item={'key': SERVICE}))
        (target / 'placement.conf').write_text(self.merged_placement_conf())
        (target / ('%s-uwsgi.ini' % SERVICE)).write_text(self.render(
            self.uwsgi_role / 'templates' / 'uwsgi.ini.j2',
            service_name=SERVICE,
            **{key: value for key, value in self._uwsgi_task_vars().items()
               if key != 'service_name'}))
        (target / 'migrate-db.rc').write_text(
            self.render(templates / 'migrate-db.rc.j2'))
        for path in target.iterdir():
            path.chmod(0o660)
        return target

    def _uwsgi_task_vars(self):
        return _task(self.role / 'tasks' / 'config.yml',
                     'Configure uWSGI for Placement')['vars']


class _HostVars(collections.abc.Mapping):
    """``hostvars``: the one host's variables."""

    def __init__(self, node):
        self.node = node

    def __getitem__(self, name):
        if name != 'localhost':
            raise KeyError(name)
        return self.node.variables

    def __iter__(self):
        return iter(['localhost'])

    def __len__(self):
        return 1


class _StringWriter:
    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def getvalue(self):
        return ''.join(self.parts)
