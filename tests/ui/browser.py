"""Debian's Chromium driven through chromedriver's W3C WebDriver API, by
a client of a few dozen lines over ``http.client``: no browser download,
no test dependency beyond the two Debian packages (``chromium``,
``chromium-driver``; ``.ci/run`` installs them).

``find()`` says where they are (``PLACEMENT_TEST_CHROMIUM`` and
``PLACEMENT_TEST_CHROMEDRIVER`` override), ``Browser(directory)`` starts
chromedriver on a free loopback port and a headless Chromium with a
fresh profile in ``directory``, offline by construction (no background
networking, component updates, sync or QUIC).
"""

import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import time

ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'
TAB = '\ue004'
ENTER = '\ue007'
SHIFT = '\ue008'

CHROMIUM_ARGS = [
    '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic',
    '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--disable-default-apps',
    '--disable-extensions', '--no-default-browser-check',
    '--window-size=1400,1000',
]


def find():
    """(chromium, chromedriver) paths, or None when either is missing."""
    chromium = (os.environ.get('PLACEMENT_TEST_CHROMIUM')
                or shutil.which('chromium') or '/usr/bin/chromium')
    driver = (os.environ.get('PLACEMENT_TEST_CHROMEDRIVER')
              or shutil.which('chromedriver') or '/usr/bin/chromedriver')
    if os.access(chromium, os.X_OK) and os.access(driver, os.X_OK):
        return chromium, driver
    return None


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class WebDriverError(Exception):
    pass


class Browser:

    def __init__(self, directory, paths=None, timeout=30):
        chromium, driver = paths or find()
        self.port = _free_port()
        self._log = open(os.path.join(directory, 'chromedriver.log'), 'w')
        self.process = subprocess.Popen(
            [driver, '--port=%d' % self.port, '--allowed-ips=127.0.0.1'],
            stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.session = None
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._call('GET', '/status').get('ready'):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.quit()
                raise WebDriverError('chromedriver did not start')
            time.sleep(0.05)
        profile = os.path.join(directory, 'profile')
        os.makedirs(profile, exist_ok=True)
        answer = self._call('POST', '/session', {'capabilities': {
            'alwaysMatch': {
                'browserName': 'chrome',
                'goog:chromeOptions': {
                    'binary': chromium,
                    'args': CHROMIUM_ARGS + ['--user-data-dir=' + profile],
                },
                'goog:loggingPrefs': {'browser': 'ALL'},
            }}})
        self.session = answer['sessionId']

    def _call(self, method, path, body=None, timeout=60):
        conn = http.client.HTTPConnection('127.0.0.1', self.port,
                                          timeout=timeout)
        try:
            if body is None and method == 'POST':
                body = {}
            conn.request(method, path, body=None if body is None
                         else json.dumps(body),
                         headers={'Content-Type': 'application/json'})
            response = conn.getresponse()
            data = json.loads(response.read() or b'{}')
        finally:
            conn.close()
        value = data.get('value', data)
        if response.status >= 400:
            raise WebDriverError('%s %s: %s' % (method, path, value))
        return value

    def call(self, method, path, body=None):
        return self._call(method, '/session/%s%s' % (self.session, path),
                          body)

    # -- what the tests use ----------------------------------------------

    def get(self, url):
        self.call('POST', '/url', {'url': url})

    def execute(self, script, *args):
        """Run ``script`` (a function body) in the page; its return."""
        return self.call('POST', '/execute/sync',
                         {'script': script, 'args': list(args)})

    def wait(self, expression, *args, timeout=20, interval=0.05):
        """Poll the JavaScript ``expression`` until it is truthy: its
        value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.execute('return (%s);' % expression, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError('timed out waiting for %s (at %s)' % (
                    expression, self.execute('return location.href;')))
            time.sleep(interval)

    def element(self, css):
        return self.call('POST', '/element', {
            'using': 'css selector', 'value': css})[ELEMENT]

    def click(self, css):
        self.call('POST', '/element/%s/click' % self.element(css))

    def type(self, css, text, clear=True):
        element = self.element(css)
        if clear:
            self.call('POST', '/element/%s/clear' % element)
        self.call('POST', '/element/%s/value' % element, {'text': text})

    def keys(self, *keys):
        """Press and release each key in turn (``TAB``, ``ENTER`` ...);
        a tuple is a chord (``(SHIFT, TAB)``)."""
        actions = []
        for key in keys:
            chord = key if isinstance(key, tuple) else (key,)
            actions += [{'type': 'keyDown', 'value': k} for k in chord]
            actions += [{'type': 'keyUp', 'value': k}
                        for k in reversed(chord)]
        self.call('POST', '/actions', {'actions': [
            {'type': 'key', 'id': 'keyboard', 'actions': actions}]})

    def console(self):
        """The browser's console entries since the last call."""
        return self.call('POST', '/se/log', {'type': 'browser'})

    def screenshot(self, path):
        with open(path, 'wb') as out:
            out.write(base64.b64decode(self.call('GET', '/screenshot')))

    def quit(self):
        try:
            if self.session:
                self._call('DELETE', '/session/%s' % self.session)
        except (OSError, WebDriverError):
            pass
        finally:
            self.session = None
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self._log.close()
