"""A process imports only its own database's driver and SQLAlchemy
dialect: psycopg2 (with the libraries it loads) and PostgreSQL's dialect
are 7 MB of a worker's resident memory, paid by every worker of a host
that runs on MariaDB (kolla-ansible's default) or SQLite."""

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

DIALECTS = ('postgresql', 'mysql', 'sqlite')


@pytest.mark.parametrize('database', ['sqlite', 'mysql'])
def test_a_process_loads_only_its_own_databases_driver(tmp_path, request,
                                                       database):
    """Writes that take every dialect-specific path (a new consumer's
    INSERT that skips a duplicate, a provider's traits replaced, the
    state's reads) in a fresh process, the schema migrated beforehand as
    deployment tools do (``placement-manage db sync``: the migrations
    name every dialect)."""
    if database == 'mysql':
        server = request.getfixturevalue('mariadb')
        name = 'imports_%s' % uuid.uuid4().hex[:8]
        server.create_database(name)
        url = server.url(name)
    else:
        url = 'sqlite:///%s' % (tmp_path / 'placement.db')
    conf = tmp_path / 'placement.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n[api]\n'
                    'auth_strategy = noauth2\n[placement_database]\n'
                    'connection = %s\n' % (tmp_path, url))
    subprocess.run([os.path.join(os.path.dirname(sys.executable),
                                 'placement-manage'), '--config-file',
                    str(conf), 'db', 'sync'], check=True, timeout=120)
    code = textwrap.dedent('''
        import sys
        import webtest
        from placement import app, config_loader
        from placement.storage import engine
        conf = config_loader.load(['--config-file', %r])
        db = engine.Database.from_conf(conf)
        client = webtest.TestApp(app.build_app(conf, db))
        headers = {'X-Auth-Token': 'admin',
                   'OpenStack-API-Version': 'placement latest'}
        rp = '4e8e5957-649f-477b-8e34-6bd7ecb7a69c'
        client.post_json('/resource_providers', {'uuid': rp, 'name': 'n'},
                         headers=headers)
        client.put_json('/resource_providers/%%s/inventories' %% rp, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 8}}}, headers=headers)
        client.put_json('/resource_providers/%%s/traits' %% rp, {
            'resource_provider_generation': 1,
            'traits': ['HW_CPU_X86_AVX2']}, headers=headers)
        client.put_json(
            '/allocations/0b3a51a1-52b4-4ef4-8e6d-1f0a0c9d2e77', {
                'allocations': {rp: {'resources': {'VCPU': 1}}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            headers=headers, status=204)
        client.get('/allocation_candidates?resources=VCPU:1',
                   headers=headers)
        others = tuple('sqlalchemy.dialects.' + name for name in %r
                       if name != %r)
        loaded = sorted(name for name in sys.modules if name.startswith(
            ('psycopg2', 'placement.storage.postgresql') + others))
        assert not loaded, loaded
        assert 'sqlalchemy.dialects.' + %r in sys.modules
    ''' % (str(conf), DIALECTS, database, database))
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120)
