"""The dashboard's files at /ui/: served without a token (under noauth2
and keystone alike), from the package, with a strict
Content-Security-Policy and cache validators (304s); the option that
turns them off; nothing in them that the policy would refuse or that
comes from elsewhere."""

import configparser
import fnmatch
import html.parser
import pathlib
import re

import pytest
import webtest

from placement import app as placement_app
from placement import ui

ROOT = pathlib.Path(__file__).parents[2]
STATIC = ROOT / 'placement' / 'ui' / 'static'
FILES = sorted(path.relative_to(STATIC).as_posix()
               for path in STATIC.rglob('*') if path.is_file())


@pytest.fixture
def web(conf, db):
    return webtest.TestApp(placement_app.build_app(conf, db, prepare=False))


def test_the_page_is_served_without_a_token(web):
    resp = web.get('/ui/')
    assert resp.status_int == 200
    assert resp.content_type == 'text/html'
    assert resp.body == (STATIC / 'index.html').read_bytes()
    assert resp.headers['x-openstack-request-id'].startswith('req-')
    # The API itself still wants one.
    assert web.get('/overview', status=401).status_int == 401


@pytest.mark.parametrize('name', FILES)
def test_every_file_with_its_type_and_headers(web, name):
    resp = web.get('/ui/' + name)
    assert resp.body == (STATIC / name).read_bytes()
    expected = {'.html': 'text/html', '.css': 'text/css',
                '.js': 'text/javascript', '.svg': 'image/svg+xml'}
    assert resp.content_type == expected[pathlib.Path(name).suffix]
    assert resp.headers['Content-Security-Policy'] == (
        "default-src 'self'; script-src 'self'; style-src 'self'; "
        "img-src 'self'; connect-src 'self'; font-src 'none'; "
        "object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'")
    assert resp.headers['X-Content-Type-Options'] == 'nosniff'
    assert resp.headers['X-Frame-Options'] == 'DENY'
    assert resp.headers['Referrer-Policy'] == 'no-referrer'
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert re.match(r'^"[0-9a-f]{32}"$', resp.headers['ETag'])
    assert resp.headers['Last-Modified'].endswith(' GMT')


def test_validators_answer_304(web):
    first = web.get('/ui/js/main.js')
    etag, modified = first.headers['ETag'], first.headers['Last-Modified']
    for headers in ({'If-None-Match': etag},
                    {'If-None-Match': '"other", W/%s' % etag},
                    {'If-None-Match': '*'},
                    {'If-Modified-Since': modified},
                    {'If-Modified-Since': 'Fri, 01 Jan 2100 00:00:00 GMT'}):
        resp = web.get('/ui/js/main.js', headers=headers, status=304)
        assert resp.body == b''
        assert resp.headers['ETag'] == etag
    for headers in ({'If-None-Match': '"other"'},
                    # If-None-Match decides when both are sent.
                    {'If-None-Match': '"other"',
                     'If-Modified-Since': modified},
                    {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
                    {'If-Modified-Since': 'not a date'}):
        assert web.get('/ui/js/main.js', headers=headers).body == first.body


def test_head_has_the_headers_and_no_body(web):
    resp = web.head('/ui/style.css')
    assert resp.body == b''
    assert int(resp.headers['Content-Length']) == len(
        (STATIC / 'style.css').read_bytes())


def test_ui_without_its_slash_is_redirected(web):
    resp = web.get('/ui', status=301)
    assert resp.headers['Location'].endswith('/ui/')


def test_unknown_files_and_methods_are_errors_in_the_api_format(web):
    resp = web.get('/ui/nothing.js', status=404)
    error = resp.json['errors'][0]
    assert error['status'] == 404 and error['title'] == 'Not Found'
    assert error['request_id'] == resp.headers['x-openstack-request-id']
    assert web.get('/ui/../setup.cfg', status=404, expect_errors=True)
    resp = web.post('/ui/', status=405)
    assert resp.headers['Allow'] == 'GET, HEAD'
    assert resp.json['errors'][0]['status'] == 405


def test_the_option_turns_it_off(conf, db):
    conf.set_override('ui_enabled', False, group='api')
    web = webtest.TestApp(placement_app.build_app(conf, db, prepare=False))
    resp = web.get('/ui/', status=404, headers={'X-Auth-Token': 'admin'})
    assert resp.json['errors'][0]['status'] == 404
    assert 'Content-Security-Policy' not in resp.headers
    # The extensions it reads stay.
    web.get('/overview', headers={'X-Auth-Token': 'admin'}, status=200)


def test_served_before_keystone_which_still_guards_the_api(conf, db):
    from keystonemiddleware.auth_token import _opts
    conf.register_opts(_opts._OPTS, group='keystone_authtoken')
    conf.set_override('www_authenticate_uri', 'http://127.0.0.1:9/identity',
                      group='keystone_authtoken')
    conf.set_override('auth_strategy', 'keystone', group='api')
    web = webtest.TestApp(placement_app.build_app(conf, db, prepare=False))
    assert web.get('/ui/').status_int == 200
    assert web.get('/ui/js/api.js').status_int == 200
    assert web.get('/overview', status=401).status_int == 401


def test_mounted_under_a_prefix(conf, db):
    web = webtest.TestApp(placement_app.build_app(conf, db, prepare=False),
                          extra_environ={'SCRIPT_NAME': '/placement'})
    assert web.get('/ui', status=301).headers['Location'].endswith(
        '/placement/ui/')


class _Markup(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.problems = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == 'script' and 'src' not in attrs:
            self.problems.append('inline script')
        if tag == 'style':
            self.problems.append('style element')
        if 'style' in attrs:
            self.problems.append('style attribute on %s' % tag)
        for name, value in attrs.items():
            if name.startswith('on'):
                self.problems.append('inline handler %s' % name)
            if name in ('src', 'href') and re.match(r'^(https?:)?//', value
                                                     or ''):
                self.problems.append('%s from elsewhere: %s' % (name, value))


def test_nothing_inline_and_nothing_from_elsewhere():
    markup = _Markup()
    markup.feed((STATIC / 'index.html').read_text())
    assert markup.problems == []
    for path in STATIC.rglob('*.js'):
        text = path.read_text()
        assert not re.search(
            r'innerHTML|outerHTML|insertAdjacentHTML|document\.write|'
            r'\beval\(|new Function', text), path
        assert not re.search(r"\.style\b|'style'", text), path
        urls = set(re.findall(r'https?://[^\s\'"`]+', text))
        assert urls <= {'http://www.w3.org/2000/svg'}, (path, urls)
        # Only modules of its own, by relative path.
        for source in re.findall(r"from '([^']+)'", text):
            assert source.startswith('./') and (path.parent / source).exists()
    assert not re.search(r'url\(|@import', (STATIC / 'style.css').read_text())


def test_the_token_is_kept_in_session_storage_only():
    text = '\n'.join(path.read_text() for path in STATIC.rglob('*.js'))
    assert 'sessionStorage' in text
    assert 'localStorage' not in text and 'document.cookie' not in text


def test_every_file_is_package_data():
    """An installed (not editable) package has every file it serves."""
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    patterns = config['options.package_data']['placement.ui'].split()
    assert FILES and all(any(fnmatch.fnmatch('static/' + name, pattern)
                             for pattern in patterns) for name in FILES)
    assert sorted(ui.load()) == FILES
