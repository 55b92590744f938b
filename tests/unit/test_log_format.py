"""The request log's formatter (``placement.log_format``) writes exactly
what oslo.log's ContextFormatter writes, for every record, whatever the
format strings say."""

import itertools
import logging
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


@pytest.mark.parametrize('fmt', FORMATS)
def test_the_same_line_as_oslo_log(fmt):
    conf = _conf(fmt)
    theirs = formatters.ContextFormatter(project='placement', version='1',
                                         datefmt=conf.log_date_format,
                                         config=conf)
    ours = formatters.ContextFormatter(project='placement', version='1',
                                       datefmt=conf.log_date_format,
                                       config=conf)
    log_format.speed_up(_Holding(ours))
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
