"""A live ``placement-api`` holding ``scene``'s cloud, and Debian's
Chromium driven against it.

Without a browser the browser tests are skipped, saying why; under CI
(``CI`` set, as ``.ci/run`` runs) a missing browser is a failure:
``.ci/run`` installs ``chromium`` and ``chromium-driver``.

The server's policy file opens the overview (and the reads it
summarises) to the ``reader`` role, as an operator would to show
readers the dashboard; the audit stays admin-only.
"""

import json

import pytest

from tests import installed
from tests.functional import server
from tests.ui import browser as browser_module
from tests.ui import scene as scene_module

READER_RULES = [
    'placement:overview', 'placement:overview:providers',
    'placement:overview:provider', 'placement:resource_providers:list',
    'placement:resource_providers:show',
    'placement:resource_providers:inventories:list',
    'placement:resource_providers:usages',
    'placement:resource_providers:traits:list',
    'placement:resource_providers:aggregates:list',
    'placement:resource_providers:allocations:list',
    'placement:allocations:list',
]


class Live:
    """The running server: its port, the scene, and ``api()`` to ask it
    what the page should show."""

    def __init__(self, port, scene):
        self.port = port
        self.scene = scene
        self.url = 'http://127.0.0.1:%d/ui/' % port

    def api(self, path, method='GET', body=None, status=200):
        code, answer = server.request(self.port, method, path, body)
        assert code == status, (path, code, answer)
        return answer


@pytest.fixture(scope='session')
def live(tmp_path_factory):
    directory = tmp_path_factory.mktemp('ui-server')
    policy = directory / 'ui-policy.yaml'
    policy.write_text(''.join('"%s": "rule:admin_api or role:reader"\n'
                              % rule for rule in READER_RULES))
    url = 'sqlite:///%s' % (directory / 'placement.sqlite')
    with server.running(url, directory, workers=1,
                        database_options='sync_on_startup = True\n',
                        extra_config='[oslo_policy]\npolicy_file = %s\n'
                        % policy) as port:
        scene = scene_module.build(
            lambda method, path, body=None: server.request(
                port, method, path, body))
        yield Live(port, scene)


@pytest.fixture(scope='session')
def browser_paths():
    return installed.require('Chromium', browser_module.find)


@pytest.fixture(scope='session')
def chromium(browser_paths, tmp_path_factory):
    driven = browser_module.Browser(
        str(tmp_path_factory.mktemp('chromium')), browser_paths)
    yield driven
    driven.quit()


class Page:
    """The dashboard in the browser: navigation, sign-in, and reading
    what it shows.  ``allowed`` lists console messages a test expects
    (the network log of a 403 it provokes)."""

    def __init__(self, chromium, live):
        self.b = chromium
        self.live = live
        self.allowed = []

    def open(self, hash_='', reload=True):
        """Load the page at ``#/...`` and wait for its view."""
        if reload:
            # A new document, not a same-document hash change.
            self.b.get('about:blank')
            self.b.get(self.live.url + hash_)
        else:
            self.b.execute('location.hash = arguments[0];', hash_)
        self.ready(hash_ or None)

    def ready(self, hash_=None):
        self.b.wait("document.querySelector('main').dataset.state === "
                    "'ready' && (!arguments[0] || document.querySelector("
                    "'main').dataset.route === arguments[0])", hash_)

    def part(self, name):
        """Wait for ``[data-part=name]`` to be drawn (or fail): its
        state."""
        return self.b.wait(
            "(function (part) { var found = document.querySelector("
            "'[data-part=\"' + part + '\"]'); return found && "
            "found.dataset.state !== 'loading' && found.dataset.state; })"
            "(arguments[0])", name)

    def sign_in(self, token='admin', roles=''):
        self.b.get(self.live.url + '#/summary')
        self.b.execute('sessionStorage.clear();')
        self.open('#/summary')
        self.b.type('#token', token)
        if roles:
            self.b.type('#roles', roles)
        self.b.click('form.sign-in button[type=submit]')
        self.b.wait("document.querySelector('h1') && document.querySelector("
                    "'h1').textContent !== 'Sign in' && document.querySelector"
                    "('main').dataset.state === 'ready'")

    def js(self, script, *args):
        return self.b.execute(script, *args)

    def text(self, css):
        return self.js("var e = document.querySelector(arguments[0]); "
                       "return e && e.textContent;", css)

    def console_errors(self):
        return [entry for entry in self.b.console()
                if entry.get('level') == 'SEVERE'
                and not any(allowed in entry.get('message', '')
                            for allowed in self.allowed)]


# Every number the page shows as text: data-value holds it exactly and
# the text must say the same (commas aside).
READ_NUMBERS = """
var root = arguments[0] ? document.querySelector(arguments[0]) : document;
var bad = [];
root.querySelectorAll('.n').forEach(function (n) {
  if (n.textContent.replace(/,/g, '') !== String(Number(n.dataset.value)))
    bad.push(n.outerHTML);
});
root.querySelectorAll('.meter').forEach(function (m) {
  var text = m.querySelector('.meter-text');
  if (!text || !/[0-9]/.test(text.textContent)) bad.push(m.outerHTML);
  else if (m.dataset.max !== undefined) {
    var shown = text.textContent.split(' over')[0].replace(/,/g, '');
    if (shown !== m.dataset.value + ' / ' + m.dataset.max) bad.push(shown);
  }
});
return bad;
"""


@pytest.fixture
def page(chromium, live):
    shown = Page(chromium, live)
    chromium.console()      # what earlier tests left
    yield shown
    assert shown.console_errors() == []
    assert shown.js(READ_NUMBERS, None) == []


def dumps(value):
    return json.dumps(value, sort_keys=True)
