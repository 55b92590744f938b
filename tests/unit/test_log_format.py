"""The request log's formatter (``placement.log_format``) writes exactly
what oslo.log's ContextFormatter writes, for every record, whatever the
format strings say."""

import itertools
import logging
import logging.handlers
import sys

from oslo_config import cfg
from oslo_context import context as context_utils
from oslo_log import formatters
from oslo_log import log as oslo_log
import pytest

from placement import log_format

FORMATS = [
    None,   # oslo.log's defaults
    '%(asctime)s %(isotime)s %(color)s%(levelname)s %(name)s '
    '[%(request_id)s %(user_name)s %(project_name)s] %(resource)s'
    '%(instance)s%(message)s %(error_summary)s',
    '%(process)d %(user_identity)s %(global_request_id)s %(message)s '
    '%(project)s %(version)s %(funcName)s:%(lineno)d',
]
CONTEXTS = [
    None,
    dict(request_id='req-1', user_id='u', project_id='p'),
    dict(request_id='req-2', global_request_id='req-g', user_id='u',
         project_id='p', domain_id='d', user_domain_id='ud',
         project_domain_id='pd', user_name='un', project_name='pn',
         roles=['admin']),
    dict(request_id='req-3', system_scope='all', user_id='u'),
    dict(request_id='req-4', resource_uuid='r'),
]
LEVELS = [logging.DEBUG, logging.INFO, logging.WARNING]


def _conf(fmt):
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([], project='placement-test')
    if fmt:
        conf.set_override('logging_context_format_string', fmt)
        conf.set_override('logging_default_format_string', fmt)
    return conf


def _record(level, context, extra):
    record = logging.LogRecord('placement.requestlog', level, __file__, 7,
                               '%(method)s %(status)s', ({
                                   'method': 'GET', 'status': 200},),
                               None, func='close')
    record.created = 1700000000.25
    record.msecs = 250.0
    if context is not None:
        record.context = context
    record.__dict__.update(extra)
    return record


def _ours_and_theirs(fmt):
    conf = _conf(fmt)
    theirs = formatters.ContextFormatter(project='placement', version='1',
                                         datefmt=conf.log_date_format,
                                         config=conf)
    ours = formatters.ContextFormatter(project='placement', version='1',
                                       datefmt=conf.log_date_format,
                                       config=conf)
    log_format.speed_up(_Holding(ours))
    return ours, theirs


@pytest.mark.parametrize('fmt', FORMATS)
def test_the_same_line_as_oslo_log(fmt):
    ours, theirs = _ours_and_theirs(fmt)
    assert type(ours) is log_format.ContextFormatter
    for level, values, extra in itertools.product(
            LEVELS, CONTEXTS, [{}, {'instance': {'uuid': 'i'}}]):
        context = (None if values is None
                   else context_utils.RequestContext(**values))
        for _ in range(2):  # the time once worked out, and kept
            assert ours.format(_record(level, context, extra)) == (
                theirs.format(_record(level, context, extra)))


def test_an_exception_is_left_to_oslo_log():
    conf = _conf(None)
    ours = formatters.ContextFormatter(project='placement', config=conf)
    log_format.speed_up(_Holding(ours))
    try:
        raise ValueError('boom')
    except ValueError:
        record = _record(logging.INFO, None, {})
        record.exc_info = sys.exc_info()
    assert 'ValueError: boom' in ours.format(record)


class _Holding:
    """A logger's handlers, as speed_up reads them."""

    def __init__(self, formatter):
        handler = logging.NullHandler()
        handler.setFormatter(formatter)
        self.handlers = [handler]


# Formats a line can be written in without its record, and formats that
# show what only a record has (its source, its thread, an ISO time).
DIRECT_FORMATS = [
    None,
    '%(asctime)s %(color)s%(levelname)s %(name)s [%(request_id)s '
    '%(user_name)s %(project_name)s] %(resource)s%(instance)s%(message)s '
    '%(error_summary)s %(process)d %(user_identity)s %(global_request_id)s '
    '%(project)s %(version)s %(levelno)s',
]
RECORD_FORMATS = [FORMATS[1], FORMATS[2], '%(threadName)s %(message)s']
_CREATED_NS = 1700000000250000000     # _record's time


def _line(formatter, context, monkeypatch):
    """``formatter``'s line in ``context`` as the current one."""
    monkeypatch.setattr(context_utils, 'get_current', lambda: context)
    return formatter.line('placement.requestlog', logging.INFO,
                          '%(method)s %(status)s',
                          {'method': 'GET', 'status': 200}, _CREATED_NS)


@pytest.mark.parametrize('fmt', DIRECT_FORMATS)
def test_a_line_made_without_its_record_is_oslo_logs_line(fmt,
                                                         monkeypatch):
    ours, theirs = _ours_and_theirs(fmt)
    for values in CONTEXTS:
        context = (None if values is None
                   else context_utils.RequestContext(**values))
        made = _line(ours, context, monkeypatch)
        if values and values.get('resource_uuid'):
            assert made is None     # oslo.log shows the resource
            continue
        try:
            written = theirs.format(_record(logging.INFO, context, {}))
        except ValueError:      # a field no value of the line has
            assert made is None
            continue
        assert made == written


@pytest.mark.parametrize('fmt', RECORD_FORMATS)
def test_a_format_that_shows_the_record_needs_the_record(fmt,
                                                        monkeypatch):
    ours, _theirs = _ours_and_theirs(fmt)
    assert _line(ours, context_utils.RequestContext(request_id='req-1'),
                 monkeypatch) is None


@pytest.fixture
def logged(tmp_path):
    """A logger of its own writing to a watched file in our format; its
    file's path."""
    ours, _theirs = _ours_and_theirs(None)
    path = tmp_path / 'placement.log'
    handler = logging.handlers.WatchedFileHandler(str(path))
    handler.setFormatter(ours)
    logger = logging.Logger('placement.test')   # outside logging's tree
    logger.addHandler(handler)
    yield logger, path
    logger.removeHandler(handler)
    handler.close()


def _write(logger, path):
    """Write a line directly, and the same as a record; the two lines
    with their times left out."""
    values = {'method': 'GET', 'status': 200}
    assert log_format.write_directly(logger, logging.INFO,
                                     '%(method)s %(status)s', values)
    logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 1,
                                    '%(method)s %(status)s', (values,),
                                    None))
    return [line[24:] for line in path.read_text().splitlines()]


def test_a_line_written_directly_is_the_line_logging_writes(logged):
    logger, path = logged
    direct, through_logging = _write(logger, path)
    assert direct == through_logging
    assert ' INFO placement.test [' in direct and direct.endswith('GET 200')


def test_a_line_written_directly_follows_a_rotated_file(logged):
    logger, path = logged
    _write(logger, path)
    path.rename(path.with_suffix('.1'))
    assert len(_write(logger, path)) == 2   # the file opened anew
    assert len(path.with_suffix('.1').read_text().splitlines()) == 2


class _Refusing(logging.Filter):
    def filter(self, record):
        return False


@pytest.mark.parametrize('change', [
    'logger filter', 'handler filter', 'other handler', 'other formatter',
    'record format', 'no handler'])
def test_a_line_is_left_to_logging_where_a_record_may_differ(logged,
                                                             change):
    logger, path = logged
    handler = logger.handlers[0]
    if change == 'logger filter':
        logger.addFilter(_Refusing())
    elif change == 'handler filter':
        handler.addFilter(_Refusing())
    elif change == 'other handler':
        logger.addHandler(logging.NullHandler())
    elif change == 'other formatter':
        handler.setFormatter(logging.Formatter('%(message)s'))
    elif change == 'record format':
        for name in ('logging_default_format_string',
                     'logging_context_format_string'):
            handler.formatter.conf.set_override(name,
                                                '%(lineno)d %(message)s')
        handler.formatter._formats = None
    else:
        logger.removeHandler(handler)
    assert not log_format.write_directly(logger, logging.INFO, '%(x)s',
                                         {'x': 1})
    assert path.read_text() == ''
    if change == 'no handler':
        logger.addHandler(handler)
