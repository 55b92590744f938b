"""A deferred package's ``__init__`` runs only when a name it defines is
read; its submodules import without it."""

import os
import subprocess
import sys
import textwrap

import pytest

from placement import deferred_packages


@pytest.fixture
def package(tmp_path, monkeypatch):
    """``deferme``: its ``__init__`` counts its runs in ``RUNS`` (a
    module of its own, so that the count survives) and imports ``heavy``,
    which a submodule does not need."""
    root = tmp_path / 'deferme'
    (root / 'inner').mkdir(parents=True)
    (tmp_path / 'deferme_runs.py').write_text('RUNS = []\n')
    (root / '__init__.py').write_text(
        'import deferme_runs\ndeferme_runs.RUNS.append("deferme")\n'
        'from deferme import heavy\nWHOLE = heavy.NAME\n')
    (root / 'heavy.py').write_text('NAME = "heavy"\n')
    (root / 'light.py').write_text('from deferme import inner\n'
                                   'NAME = "light"\n')
    (root / 'inner' / '__init__.py').write_text(
        'import deferme_runs\ndeferme_runs.RUNS.append("inner")\n'
        'INNER = True\n')
    (root / 'inner' / 'leaf.py').write_text('LEAF = True\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in list(sys.modules):
        if name.split('.')[0] in ('deferme', 'deferme_runs'):
            del sys.modules[name]


def runs():
    import deferme_runs
    return deferme_runs.RUNS


def test_submodules_import_without_the_packages_init(package):
    deferred_packages.defer('deferme')
    deferred_packages.defer('deferme.inner')
    from deferme import light
    from deferme.inner import leaf
    assert (light.NAME, leaf.LEAF) == ('light', True)
    assert runs() == []
    assert 'deferme.heavy' not in sys.modules


def test_the_first_name_the_init_defines_runs_it_once(package):
    deferred_packages.defer('deferme')
    import deferme
    assert deferme.WHOLE == 'heavy'
    assert deferme.WHOLE == 'heavy'
    assert runs() == ['deferme']
    assert type(deferme) is type(os)


def test_a_deferred_subpackage_runs_its_own_init_alone(package):
    deferred_packages.defer('deferme')
    deferred_packages.defer('deferme.inner')
    from deferme import inner
    assert inner.INNER is True
    assert runs() == ['inner']


def test_a_name_neither_defines_is_still_an_attribute_error(package):
    deferred_packages.defer('deferme')
    import deferme
    with pytest.raises(AttributeError):
        deferme.missing
    assert runs() == ['deferme']


def test_an_init_that_fails_fails_again_at_the_next_read(package, tmp_path):
    """As a failed import does, rather than leave a package half made."""
    init = tmp_path / 'deferme' / '__init__.py'
    init.write_text('import deferme_runs\ndeferme_runs.RUNS.append(1)\n'
                    'raise ImportError("a library is missing")\n')
    deferred_packages.defer('deferme')
    import deferme
    for _ in range(2):
        with pytest.raises(ImportError, match='a library is missing'):
            deferme.WHOLE
    assert runs() == [1, 1]


def test_a_package_imported_already_is_left_as_it_is(package):
    import deferme
    deferred_packages.defer('deferme')
    assert sys.modules['deferme'] is deferme
    assert runs() == ['deferme']


def test_a_package_not_installed_is_left_out_with_its_subpackages():
    """A client's venv (the osc commands) has none of the server's
    libraries."""
    deferred_packages.defer('no_such_package_here')
    deferred_packages.defer('no_such_package_here.inner')
    assert 'no_such_package_here' not in sys.modules
    assert 'no_such_package_here.inner' not in sys.modules


def test_an_api_process_loads_oslo_middlewares_extras_only_when_asked(
        tmp_path):
    """The application built and answering, CORS and proxy headers on:
    none of oslo.middleware's other middleware (OpenTelemetry, psutil,
    bcrypt) and no jinja2 until ``/healthcheck`` is probed; the package
    whole is still there for whoever reads it."""
    conf = tmp_path / 'placement.conf'
    conf.write_text(
        '[api]\nauth_strategy = noauth2\n[placement_database]\n'
        'connection = sqlite:///%s\nsync_on_startup = true\n'
        '[cors]\nallowed_origin = http://ui.example\n'
        '[oslo_middleware]\nenable_proxy_headers_parsing = true\n'
        '[healthcheck]\ndetailed = true\n' % (tmp_path / 'p.db'))
    code = textwrap.dedent('''
        import sys
        import webtest
        from placement import app, config_loader
        from placement.storage import engine
        conf = config_loader.load(['--config-file', %r])
        client = webtest.TestApp(app.build_app(
            conf, engine.Database.from_conf(conf)))
        answer = client.get('/resource_providers', headers={
            'X-Auth-Token': 'admin', 'Origin': 'http://ui.example'})
        assert answer.headers['Access-Control-Allow-Origin'] == (
            'http://ui.example')
        extras = ('opentelemetry', 'psutil', 'bcrypt', 'jinja2')
        loaded = sorted({name.split('.')[0] for name in sys.modules}
                        & set(extras))
        assert not loaded, loaded
        health = client.get('/healthcheck', headers={
            'Accept': 'application/json'})
        assert health.json['reasons'][0]['reason'] == 'OK', health.json
        assert 'jinja2' in sys.modules
        import oslo_middleware
        assert oslo_middleware.Healthcheck is not None
        assert 'opentelemetry' in sys.modules
    ''' % str(conf))
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120)
