"""The deployment tools' own files, obtained when the tests run.

Nothing of kolla, kolla-ansible, openstack-ansible, openstack-helm or
puppet is kept in this repository: each test takes the tool's files from
where the tool publishes them.

- kolla 23.0.0 and kolla-ansible 22.2.0: their source distributions on
  PyPI (``pip download --no-deps --no-binary :all:``), kept in
  ``~/.cache/placement-deploy-tools`` (``$PLACEMENT_DEPLOY_TOOLS_CACHE``)
  and unpacked there once.
- puppet-placement and the modules it needs (openstacklib,
  puppetlabs-apache, ...): Debian's ``puppet-module-*`` packages, with
  ``puppet`` itself, installed by ``.ci/run`` (``apt-get install
  puppet-module-placement``).
- openstack-ansible's ``os_placement`` role and openstack-helm's
  ``placement`` chart are on no registry CI can reach: a checkout named by
  ``$PLACEMENT_TEST_OSA_ROLE`` / ``$PLACEMENT_TEST_HELM_CHART``, or a skip.

``unavailable(reason, required_in_ci)`` skips a test whose tool cannot be
had, or fails it under CI (``$CI``) when CI is meant to have it.
"""

import contextlib
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

KOLLA = 'kolla==23.0.0'
KOLLA_ANSIBLE = 'kolla-ansible==22.2.0'
CACHE = pathlib.Path(os.environ.get(
    'PLACEMENT_DEPLOY_TOOLS_CACHE',
    os.path.join(os.path.expanduser('~'), '.cache',
                 'placement-deploy-tools')))
PUPPET_MODULES = pathlib.Path('/usr/share/puppet/modules')
NOT_ON_A_REGISTRY = (
    '%s is on no package registry CI can reach (no GitHub at run time): '
    'set %s to a checkout of it to run this test')


def in_ci():
    return os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


def unavailable(reason, required_in_ci=True):
    """Skip the calling test for ``reason``; under CI fail it instead
    when ``required_in_ci`` (CI installs what the test needs)."""
    if required_in_ci and in_ci():
        pytest.fail('under CI this must run: %s' % reason)
    pytest.skip(reason)


@contextlib.contextmanager
def _cache_lock():
    """One process at a time fills the cache (pytest-xdist's workers)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _sdist(requirement):
    """The unpacked source distribution of ``requirement`` (``name==v``),
    downloaded from PyPI once."""
    name, version = requirement.split('==')
    stem = '%s-%s' % (name.replace('-', '_'), version)
    with _cache_lock():
        for candidate in (stem, '%s-%s' % (name, version)):
            if (CACHE / candidate / 'PKG-INFO').exists():
                return CACHE / candidate
        archives = [CACHE / ('%s.tar.gz' % candidate)
                    for candidate in (stem, '%s-%s' % (name, version))]
        if not any(archive.exists() for archive in archives):
            proc = subprocess.run(
                [sys.executable, '-m', 'pip', 'download', '--quiet',
                 '--disable-pip-version-check', '--no-deps',
                 '--no-binary', ':all:', '--dest', str(CACHE), requirement],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=600)
            if proc.returncode != 0:
                unavailable('pip download %s failed: %s'
                            % (requirement, proc.stdout[-1000:]))
        archive = next(archive for archive in archives if archive.exists())
        with tarfile.open(archive) as tar:
            top = tar.getnames()[0].split('/')[0]
            shutil.rmtree(CACHE / top, ignore_errors=True)
            tar.extractall(CACHE, filter='data')
        return CACHE / top


def kolla():
    """kolla 23.0.0's unpacked sdist (``.../kolla-23.0.0``)."""
    return _sdist(KOLLA)


def kolla_ansible():
    """kolla-ansible 22.2.0's unpacked sdist."""
    return _sdist(KOLLA_ANSIBLE)


def checkout(variable, what):
    """The directory ``$variable`` names, or a skip saying why not."""
    path = os.environ.get(variable)
    if not path:
        unavailable(NOT_ON_A_REGISTRY % (what, variable),
                    required_in_ci=False)
    path = pathlib.Path(path)
    if not path.is_dir():
        pytest.fail('%s=%s is not a directory' % (variable, path))
    return path


def puppet_modules():
    """Debian's puppet module directory with ``placement`` in it and the
    ``puppet`` command, or a skip (a failure under CI)."""
    if not shutil.which('puppet') or not (PUPPET_MODULES / 'placement'
                                          / 'manifests').is_dir():
        unavailable('puppet and Debian\'s puppet-module-placement are not '
                    'installed (apt-get install puppet-module-placement)')
    return PUPPET_MODULES
