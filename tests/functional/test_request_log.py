"""The request log line: its values, and that it is written only when the
server closes the answer's iterable (after sending it), not before."""

import logging
import re
import wsgiref.util

import pytest

from placement import app as placement_app
from placement.middleware import request_log

_LINE = re.compile(r'^10\.1\.2\.3 "(\w+) (\S+)" status: (\d+) len: (\d+) '
                   r'microversion: (\S+) time: \d+\.\d{6}$')


@pytest.fixture
def wsgi_app(conf, db):
    return placement_app.build_app(conf, db, prepare=False)


def _call(wsgi_app, path, version='1.39'):
    """The app's iterable for a GET of ``path``, read but not closed, and
    the answer's body."""
    environ = {'PATH_INFO': path, 'REMOTE_ADDR': '10.1.2.3',
               'HTTP_X_AUTH_TOKEN': 'admin',
               'HTTP_ACCEPT': 'application/json'}
    if '?' in path:
        environ['PATH_INFO'], environ['QUERY_STRING'] = path.split('?')
    if version:
        environ['HTTP_OPENSTACK_API_VERSION'] = 'placement ' + version
    wsgiref.util.setup_testing_defaults(environ)
    result = wsgi_app(environ, lambda status, headers, exc_info=None: None)
    return result, b''.join(result)


def _lines(caplog):
    return [_LINE.match(record.getMessage()).groups()
            for record in caplog.records
            if record.name == 'placement.requestlog']


@pytest.mark.parametrize('path,version,status,shown', [
    ('/resource_providers?name=x', '1.39', '200', '1.39'),
    ('/resource_providers/nothing', '1.14', '404', '1.14'),
    ('/', None, '200', '1.0'),
], ids=['listing', 'not-found', 'root'])
def test_the_line_is_written_when_the_answer_is_closed(
        wsgi_app, caplog, path, version, status, shown):
    caplog.set_level(logging.INFO, logger='placement.requestlog')
    result, body = _call(wsgi_app, path, version)
    assert _lines(caplog) == []
    result.close()
    assert _lines(caplog) == [
        ('GET', path, status, str(len(body)), shown)]


def test_the_line_is_written_even_when_closing_the_answer_fails(caplog):
    caplog.set_level(logging.INFO, logger='placement.requestlog')

    class Failing(list):
        def close(self):
            raise OSError('gone')

    def app(environ, start_response):
        environ['placement.request_log'] = {
            'remote': '10.1.2.3', 'method': 'GET', 'uri': '/', 'status': 200,
            'length': 2, 'version': '1.0', 'elapsed': 0.5}
        return Failing([b'{}'])
    result = request_log.WriteAfterAnswer(app)({}, None)
    assert list(result) == [b'{}']
    with pytest.raises(OSError):
        result.close()
    assert _lines(caplog) == [('GET', '/', '200', '2', '1.0')]
