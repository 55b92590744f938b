"""The deployment lifecycle as the deployment tools run it.

These tests need root, the network (PyPI for kolla's and kolla-ansible's
sdists) and tools the main suite does not (bubblewrap, sudo, puppet,
Apache's development files, ansible-core in a venv of its own): they run
only when ``$PLACEMENT_TEST_DEPLOYMENT`` is set (``.ci/run``'s
"deployment" stage sets it) and are skipped, saying so, otherwise.
Within such a run a test whose tool cannot be had is skipped with the
reason, except under CI (``$CI``), where kolla's and puppet's must run;
openstack-ansible's and openstack-helm's run only when their checkouts
are named (``$PLACEMENT_TEST_OSA_ROLE``, ``$PLACEMENT_TEST_HELM_CHART``):
no registry CI reaches publishes them.  See ``sources.py``.
"""

import os
import pathlib
import shutil
import sys
import tempfile

import pytest

from tests import mariadb_server
from tests import pg_cluster
from tests.deployment import kolla as kolla_container
from tests.deployment import sources

HERE = pathlib.Path(__file__).parent
ENABLED = bool(os.environ.get('PLACEMENT_TEST_DEPLOYMENT'))
DISABLED = ('deployment lifecycle tests need root, the network and the '
            'deployment tools: run them with PLACEMENT_TEST_DEPLOYMENT=1 '
            '(.ci/run\'s deployment stage; README.rst, Development)')


def pytest_collection_modifyitems(config, items):
    if ENABLED:
        return
    skip = pytest.mark.skip(reason=DISABLED)
    for item in items:
        if HERE in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(skip)


def require_root():
    if os.geteuid() != 0:
        sources.unavailable('needs root (private mount namespaces, '
                            'servers run as their own accounts)')


@pytest.fixture(scope='session')
def deployment_mariadb():
    """A throwaway MariaDB for the session (``tests/mariadb_server.py``),
    or a skip where its binaries are missing."""
    try:
        mariadb_server.find_program('mariadbd')
    except RuntimeError as exc:
        sources.unavailable(str(exc))
    server = mariadb_server.Server().start()
    yield server
    server.stop()


@pytest.fixture(scope='session')
def deployment_postgres():
    """A throwaway PostgreSQL for the session (``tests/pg_cluster.py``),
    or a skip where its binaries are missing."""
    try:
        pg_cluster.find_bindir()
    except RuntimeError as exc:
        sources.unavailable(str(exc))
    cluster = pg_cluster.Cluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope='session')
def kolla_image():
    """kolla's placement-api image files (``kolla.Image``) from kolla's
    sdist, or a skip (a failure under CI) without root, bubblewrap or
    sudo."""
    require_root()
    for program in ('bwrap', 'sudo'):
        if not shutil.which(program):
            sources.unavailable('%s is not installed (Debian: apt-get '
                                'install bubblewrap sudo)' % program)
    directory = tempfile.mkdtemp(prefix='placement-kolla-image-')
    try:
        yield kolla_container.Image(sources.kolla(), directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def workdir():
    """A directory every account may read (servers drop to their own
    accounts), removed afterwards."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix='placement-deploy-'))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope='session')
def upstream_venv():
    """Upstream openstack-placement 16.0.0's venv (the benchmarks' own,
    ``benchmarks/harness.py``: built once, cached), to compare with."""
    sys.path.insert(0, str(HERE.parents[1] / 'benchmarks'))
    try:
        import harness
    finally:
        sys.path.pop(0)
    try:
        return pathlib.Path(harness.ensure_upstream_venv())
    except Exception as exc:  # pip's failure, offline
        sources.unavailable('upstream openstack-placement 16.0.0 could not '
                            'be installed: %s' % exc)


ANSIBLE = 'ansible>=10,<11'


@pytest.fixture(scope='session')
def ansible_venv():
    """A venv with ansible (ansible-core 2.17 and the collections the
    roles use: community.general's ini_file, ansible.posix's json
    callback): ``$PLACEMENT_TEST_ANSIBLE_VENV``, or one built once in
    the tools' cache.  Never a dependency of the service."""
    named = os.environ.get('PLACEMENT_TEST_ANSIBLE_VENV')
    if named:
        return pathlib.Path(named)
    venv = sources.CACHE / 'ansible-venv'
    marker = venv / 'placement-deploy.installed'
    if marker.exists() and marker.read_text().strip() == ANSIBLE:
        return venv
    sources.CACHE.mkdir(parents=True, exist_ok=True)
    import subprocess
    for argv in ([sys.executable, '-m', 'venv', '--clear', str(venv)],
                 [str(venv / 'bin' / 'pip'), 'install', '--quiet',
                  '--disable-pip-version-check', ANSIBLE]):
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sources.unavailable('ansible could not be installed: %s'
                                % proc.stdout[-1000:])
    marker.write_text(ANSIBLE + '\n')
    return venv
