"""The request's microversion, parsed once per header value."""

import microversion_parse
import pytest

from placement import microversion

VALUES = [
    None, 'placement 1.39', 'placement 1.0', 'PLACEMENT 1.14',
    'placement latest', 'compute 2.1, placement 1.26',
    'placement 1.26, compute 2.1', 'placement 1.2, placement 1.7',
    'compute 2.1', '', 'placement  1.15 ']
REFUSED = ['placement 1.40', 'placement 2.0', 'placement 0.9',
           'placement one.two', 'placement 1', 'placement 1.x']


def _library(value):
    environ = {} if value is None else {'HTTP_OPENSTACK_API_VERSION': value}
    environ['HTTP_X_OTHER'] = 'placement 1.3'
    return microversion_parse.extract_version(
        environ, microversion.SERVICE_TYPE, microversion.VERSIONS)


def _environ(value):
    environ = {'HTTP_X_OTHER': 'placement 1.3', 'PATH_INFO': '/'}
    if value is not None:
        environ['HTTP_OPENSTACK_API_VERSION'] = value
    return environ


@pytest.mark.parametrize('value', VALUES)
def test_parse_answers_as_the_library_does_each_time(value):
    expected = _library(value)
    for _ in range(2):
        version = microversion.parse(_environ(value))
        assert tuple(version) == tuple(expected)
        assert tuple(version.max_version) == tuple(expected.max_version)
        assert tuple(version.min_version) == tuple(expected.min_version)


@pytest.mark.parametrize('value', REFUSED)
def test_a_refused_value_is_refused_each_time_as_the_library_does(value):
    with pytest.raises((TypeError, ValueError)) as expected:
        _library(value)
    for _ in range(2):
        with pytest.raises(expected.type) as raised:
            microversion.parse(_environ(value))
        assert str(raised.value) == str(expected.value)


def test_the_values_kept_are_bounded():
    for minor in range(1000):
        microversion.parse(_environ('placement 1.%d, x %d' % (minor % 40,
                                                             minor)))
    assert microversion._parse_header.cache_info().currsize <= 256
