"""``placement.tests.functional.fixtures.capture``: what consumers'
base test cases (osc-placement's) get from it."""

import logging
import warnings

import pytest
from sqlalchemy import exc as sqla_exc

from placement.tests.functional.fixtures import capture


def _within(fixture, work):
    """Run ``work()`` with ``fixture`` set up, then clean it up."""
    fixture.setUp()
    try:
        return work()
    finally:
        fixture.cleanUp()


def test_logging_formats_debug_records_nobody_shows(monkeypatch):
    """A debug line whose arguments do not fit its format fails the test
    that logs it, though INFO is the level shown."""
    monkeypatch.delenv('OS_DEBUG', raising=False)
    monkeypatch.delenv('OS_LOG_CAPTURE', raising=False)
    log = logging.getLogger('placement.test_capture')
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        fixture = capture.Logging()
        assert fixture.level == logging.INFO
        with pytest.raises(TypeError):
            _within(fixture, lambda: log.debug('%s and %s', 'one'))
    finally:
        root.setLevel(level)


def test_logging_captures_when_asked(monkeypatch):
    monkeypatch.setenv('OS_LOG_CAPTURE', '1')
    monkeypatch.delenv('OS_DEBUG', raising=False)
    fixture = capture.Logging()

    def log_and_read():
        logging.getLogger('placement.test_capture').info('hello %s', 'you')
        return fixture.logger.output
    assert 'hello you' in _within(fixture, log_and_read)


def test_warnings_fixture_escalates_and_restores():
    before = warnings.filters[:]

    def warn():
        with pytest.raises(sqla_exc.SAWarning):
            warnings.warn('unmapped column', sqla_exc.SAWarning)
        with pytest.raises(UserWarning):
            warnings.warn('got an invalid UUID value', UserWarning)
        # Hidden, so this raises nothing.
        warnings.warn('Policy placement:x failed scope check', UserWarning)
    _within(capture.WarningsFixture(), warn)
    assert warnings.filters == before

