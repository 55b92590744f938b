"""The dashboard behind a real keystone: its files need no token, the
API it reads still does, a keystone token's own roles decide (X-Roles,
which the page sends for noauth2, is ignored), and in Chromium a pasted
keystone token shows the summary to an admin and the refusal to a
reader."""

import http.client
import os

import pytest

from tests.keystone.test_keystone_auth import call
from tests.keystone.test_keystone_auth import keystone  # noqa: F401
from tests.keystone.test_keystone_auth import placement  # noqa: F401
from tests.ui import browser as browser_module


def test_the_files_need_no_token_and_the_api_still_does(placement,
                                                       keystone):
    port, _ = placement
    status, headers, _ = call(port, 'GET', '/ui/')
    assert status == 200
    assert headers['Content-Security-Policy'].startswith(
        "default-src 'self'")
    assert call(port, 'GET', '/ui/js/main.js')[0] == 200
    assert call(port, 'GET', '/overview')[0] == 401
    admin = keystone.token('demo-admin', 'demo')
    assert call(port, 'GET', '/overview', token=admin)[0] == 200


def test_x_roles_cannot_raise_a_keystone_token(placement, keystone):
    port, _ = placement
    reader = keystone.token('demo-reader', 'demo')
    for path in ('/overview', '/overview/providers', '/audit'):
        status, _, body = _call_with_roles(port, path, reader, 'admin')
        assert status == 403, body


def _call_with_roles(port, path, token, roles):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    try:
        conn.request('GET', path, headers={
            'X-Auth-Token': token, 'X-Roles': roles,
            'Accept': 'application/json',
            'OpenStack-API-Version': 'placement 1.39'})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.fixture(scope='module')
def chromium(tmp_path_factory):
    paths = browser_module.find()
    if paths is None:
        message = 'no browser: install chromium and chromium-driver'
        if os.environ.get('CI'):
            pytest.fail(message)
        pytest.skip(message)
    driven = browser_module.Browser(str(tmp_path_factory.mktemp('chromium')),
                                    paths)
    yield driven
    driven.quit()


def _sign_in(chromium, port, token, roles=''):
    url = 'http://127.0.0.1:%d/ui/' % port
    chromium.get('about:blank')
    chromium.get(url + '#/summary')
    chromium.execute('sessionStorage.clear();')
    chromium.get('about:blank')
    chromium.get(url + '#/summary')
    chromium.wait("document.querySelector('#token')")
    chromium.type('#token', token)
    if roles:
        chromium.type('#roles', roles)
    chromium.click('form.sign-in button[type=submit]')
    return chromium.wait(
        "(function () { var part = document.querySelector("
        "'[data-part=summary]'); return part && part.dataset.state; })()")


def test_a_pasted_keystone_token_in_the_browser(placement, keystone,
                                                chromium):
    port, _ = placement
    chromium.console()
    assert _sign_in(chromium, port,
                    keystone.token('demo-admin', 'demo')) == 'ready'
    assert chromium.execute(
        "return document.querySelector('[data-part=audit]') !== null;")
    assert [entry for entry in chromium.console()
            if entry.get('level') == 'SEVERE'] == []
    # A reader's token stays a reader's, whatever roles the form sends.
    assert _sign_in(chromium, port, keystone.token('demo-reader', 'demo'),
                    roles='admin') == 'error'
    assert '403 Forbidden' in chromium.execute(
        "return document.querySelector('[data-part=summary]').textContent;")
