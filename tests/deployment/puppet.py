"""A confined Debian host that puppet-placement configures.

``Host`` runs ``puppet apply`` with Debian's own puppet modules
(``puppet-module-placement`` 8.0.0 and what it depends on:
``openstacklib``, ``oslo``, ``puppetlabs-apache``, ``inifile``,
``stdlib`` ... from ``/usr/share/puppet/modules``) and then Debian's
Apache as the modules configured it, all inside a private mount and PID
namespace (``confined.Host``), so that the machine's own ``/etc``,
``/var`` and ``/usr`` are not changed.  ``/usr/bin`` (an overlay) holds
what a package of this service installs there: ``placement-manage``
(the command ``placement::db::sync``'s exec runs, from ``/usr/bin``)
and the WSGI script at the path Debian's module takes it from; puppet
writes its copy of that script into ``/usr/lib/cgi-bin/placement``
(another overlay).

Debian bookworm's puppet-placement 8.0.0 names ``/usr/bin/placement-api``
as ``wsgi_script_source`` (``placement::params``): the WSGI script
distributions built with pbr's ``wsgi_scripts`` then.  Upstream 16.0.0
ships no such script; puppet-placement now copies
``<python's site-packages>/placement/wsgi/api.py`` instead.  Here
``/usr/bin/placement-api`` is a link to that file in the service's venv,
so the module's own ``openstacklib::wsgi::apache`` copies exactly the
file current puppet-placement copies, to ``/usr/lib/cgi-bin/placement/
placement-api`` (``wsgi_script_path`` + ``wsgi_script_file``), and
Apache's ``WSGIScriptAlias`` serves the copy.

The service's Python is a venv of Debian's ``/usr/bin/python3`` (the
Python Debian's mod_wsgi is built for) with this project installed from
a copy of the checkout; ``placement::wsgi::apache``'s
``custom_wsgi_process_options`` gives mod_wsgi's daemons its
``python-home``, as deployments with a venv do.
"""

import contextlib
import pathlib

from tests import wsgi_servers
from tests.deployment import confined
from tests.functional import server as functional_server

ROOT = pathlib.Path(__file__).parents[2]
STARTUP_TIMEOUT = 90


def service_venv(directory):
    """A venv of Debian's Python with this project (a copy, readable by
    every account) in ``directory``; its path."""
    venv = pathlib.Path(directory) / 'venv'
    wsgi_servers._run(['/usr/bin/python3', '-m', 'venv', str(venv)])
    wsgi_servers._run([str(venv / 'bin' / 'pip'), 'install', '--quiet',
                       '--disable-pip-version-check',
                       str(wsgi_servers._source_copy(
                           pathlib.Path(directory) / 'source'))])
    return venv


def api_script(venv):
    return next(pathlib.Path(venv).glob(
        'lib/python3*/site-packages/placement/wsgi/api.py'))


class Host(confined.Host):
    """The confined host (``confined.Host``) with ``/usr/bin`` holding
    the service's ``placement-manage`` and its WSGI script where Debian's
    module looks for it, and ``/usr/lib/cgi-bin`` writable for puppet;
    ``venv`` is the service's."""

    def __init__(self, venv):
        self.venv = pathlib.Path(venv)
        super().__init__(binds=[self.venv.parent],
                         overlays=['/usr/bin', '/usr/lib/cgi-bin'],
                         writable=['/usr/lib/cgi-bin'])
        upper = self.upper('/usr/bin')
        (upper / 'placement-manage').symlink_to(
            self.venv / 'bin' / 'placement-manage')
        (upper / 'placement-api').symlink_to(api_script(self.venv))

    def apply(self, manifest, timeout=600):
        """``puppet apply --detailed-exitcodes`` of ``manifest`` (text):
        (exit status, output)."""
        (self.files / 'site.pp').write_text(manifest)
        return self.run(['puppet', 'apply', '--detailed-exitcodes',
                         '--color=false', '--modulepath',
                         '/usr/share/puppet/modules', '/srv/test/site.pp'],
                        timeout=timeout)

    @contextlib.contextmanager
    def apache(self, port):
        """Debian's Apache on the configuration puppet wrote, as
        ``apache2ctl`` runs it (in the foreground), until ``GET /``
        answers; stopped by SIGTERM (a graceful stop)."""
        log = self.root / 'apache.log'
        process = self.start(['/usr/sbin/apache2ctl', '-DFOREGROUND'], log)
        try:
            functional_server.wait_until_up(port, process, log,
                                            STARTUP_TIMEOUT)
            yield process
        finally:
            self.stop()
