"""oslo.log's line format, in less of the time.

Every request writes one INFO line (``middleware.request_log``), and
oslo.log's ContextFormatter made it a quarter of a cheap request's server
CPU under uwsgi (80 us of 320, measured): it asks the request context for
its logging values twice, sets twenty attributes, works out an ISO time
the line does not show, parses its format string and formats the time
anew for every line.  ``ContextFormatter`` below does the same for an
INFO line with a request context, writing the same text (a test compares
them over format strings and contexts), and leaves every other record to
oslo.log's own.  ``speed_up`` puts it in place of the formatters
oslo.log set up, once logging is configured.  ``write_directly`` writes
such a line without making a record at all, where the handlers are
plain streams.
"""

import logging
import logging.handlers
import os
import time

from oslo_context import context as context_utils
from oslo_log import formatters


class _FalseAsDash(dict):
    """A context's logging values as oslo.log's user identity reads
    them: a missing or false value is ``-``."""

    def __getitem__(self, key):
        return dict.get(self, key, None) or '-'


_FIELDS_WITH_DEFAULTS = ('instance', 'color', 'user_identity', 'resource',
                         'user_name', 'project_name', 'global_request_id')


class ContextFormatter(formatters.ContextFormatter):
    """oslo.log's ContextFormatter, faster for the common line."""

    _styles = {}
    _second = None   # (second, date format, its text)

    def format(self, record):
        context = record.__dict__.get('context', context_utils.get_current())
        if not self._common(record, context):
            return super().format(record)
        fmt = self._filled(record.__dict__, context)
        if 'isotime' in fmt:
            self._compute_iso_time(record)
        self._style = self._styles.get(fmt)
        if self._style is None:
            self._style = self._styles[fmt] = logging.PercentStyle(fmt)
        self._fmt = self._style._fmt
        return logging.Formatter.format(self, record)

    def line(self, name, levelno, message, args, created_ns):
        """The text ``format`` gives a record of ``name`` at ``levelno``
        with ``message % args``, made at ``created_ns`` (``time.time_ns``)
        in the current context, without the record: None when the format
        shows what only a record has (its thread, its source line, an ISO
        time), or when the line is not a common one."""
        context = context_utils.get_current()
        if not (self.datefmt and logging.DEBUG < levelno < logging.WARNING
                and self._plain(context)):
            return None
        created = created_ns / 1e9
        found = {'name': name, 'levelno': levelno,
                 'levelname': logging.getLevelName(levelno),
                 'created': created,
                 'msecs': created_ns % 1000000000 // 1000000 + 0.0,
                 'process': os.getpid() if logging.logProcesses else None}
        fmt = self._filled(found, context)
        if 'isotime' in fmt:
            return None
        try:
            found['message'] = message % args
            if '%(asctime)' in fmt:
                found['asctime'] = self._second_text(created, self.datefmt)
            return fmt % found
        except (KeyError, TypeError, ValueError):
            return None

    def _filled(self, found, context):
        """Set in ``found`` (a record's attributes) what oslo.log's
        formatter sets for a common line in ``context``; the format string
        the line is written in."""
        found['project'] = self.project
        found['version'] = self.version
        values = None
        if context:
            values = context.get_logging_values()
            found.update(values)
        found['instance'] = ''
        for key in _FIELDS_WITH_DEFAULTS:
            if key not in found:
                found[key] = ''
        formats = self._formats or self._read_formats()
        if context:
            found['user_identity'] = formats[2] % _FalseAsDash(values)
        fmt = formats[0 if found.get('request_id') else 1]
        found['error_summary'] = '-' if '%(error_summary)s' in fmt else ''
        return fmt

    _formats = None

    def _read_formats(self):
        """(context, default, user identity) format strings, read from
        the configuration once: an option is a dozen attribute lookups
        away, and these cannot change while the process runs (oslo.log
        does not mark them mutable)."""
        conf = self.conf
        self._formats = (conf.logging_context_format_string,
                         conf.logging_default_format_string,
                         conf.logging_user_identity_format)
        return self._formats

    @classmethod
    def _common(cls, record, context):
        """Whether ``record`` is a line the fast path writes as oslo.log
        would: above DEBUG and below WARNING (no debug suffix, no error
        summary), no exception or stack, no instance named, a context of
        oslo.context's or none (``_plain``)."""
        if not logging.DEBUG < record.levelno < logging.WARNING or (
                record.exc_info or record.exc_text or record.stack_info):
            return False
        found = record.__dict__
        if found.get('instance') or found.get('instance_uuid'):
            return False
        return cls._plain(context)

    @staticmethod
    def _plain(context):
        """Whether ``context`` is none, or oslo.context's naming no
        instance or resource."""
        if context is None:
            return True
        return isinstance(context, context_utils.RequestContext) and not (
            getattr(context, 'instance', None)
            or getattr(context, 'instance_uuid', None)
            or getattr(context, 'resource_uuid', None))

    def formatTime(self, record, datefmt=None):
        """The time as logging formats it, worked out once a second when
        there is a date format (without one, the text shows
        milliseconds)."""
        if not datefmt:
            return super().formatTime(record, datefmt)
        return self._second_text(record.created, datefmt)

    def _second_text(self, created, datefmt):
        second = int(created)
        kept = self._second
        if kept is None or kept[0] != second or kept[1] != datefmt:
            kept = self._second = (second, datefmt, time.strftime(
                datefmt, self.converter(created)))
        return kept[2]


def speed_up(logger=None):
    """Give every handler of ``logger`` (the root logger) that formats
    with oslo.log's ContextFormatter this one: the same lines."""
    for handler in (logger or logging.getLogger()).handlers:
        if type(handler.formatter) is formatters.ContextFormatter:
            handler.formatter.__class__ = ContextFormatter


# Handlers whose emit is only a write of the formatted line to a stream
# (``_emit`` does what theirs do).
_STREAM_HANDLERS = (logging.StreamHandler, logging.FileHandler,
                    logging.handlers.WatchedFileHandler)


def write_directly(logger, levelno, message, values):
    """Write what ``logger.log(levelno, message, values)`` would write
    (``values`` a mapping the message's ``%(name)s`` take),
    without a LogRecord: True; False, having written nothing, where the
    record's way is needed (a filter, a handler other than a stream's, a
    formatter other than ours, a format that shows what only a record
    has).

    Every request writes one line (``middleware.request_log``), and
    logging's way to a file cost 26 us of a request's 49 us floor in one
    process (0.06 ms a request under uwsgi): building the record (its
    source file's name, its thread's, its process's), four calls before
    the handler, and formatting through the record's attributes.  This
    way the floor is 42 us.  The line's text is the same
    (``ContextFormatter.line``).
    """
    handlers = _stream_handlers(logger, levelno)
    if not handlers:
        return False
    created_ns = time.time_ns()
    texts = []
    for handler in handlers:
        text = handler.formatter.line(logger.name, levelno, message, values,
                                      created_ns)
        if text is None:
            return False
        texts.append(text)
    for handler, text in zip(handlers, texts):
        _emit(handler, text, logger, levelno, message, values)
    return True


def _stream_handlers(logger, levelno):
    """The handlers a record of ``logger`` at ``levelno`` reaches (as
    ``Logger.callHandlers`` finds them), when every one writes an open
    stream with our formatter and none filters; else None."""
    if logger.disabled or logger.filters:
        return None
    found = []
    current = logger
    while current:
        for handler in current.handlers:
            if levelno < handler.level:
                continue
            if (type(handler) not in _STREAM_HANDLERS or handler.filters
                    or type(handler.formatter) is not ContextFormatter
                    or handler.stream is None):
                return None
            found.append(handler)
        current = current.parent if current.propagate else None
    return found or None


def _emit(handler, text, logger, levelno, message, values):
    """``handler.handle(record)`` for a stream handler, given the
    record's text: a record is made only for ``handleError``."""
    handler.acquire()
    try:
        if type(handler) is logging.handlers.WatchedFileHandler:
            handler.reopenIfNeeded()
        handler.stream.write(text + handler.terminator)
        handler.flush()
    except RecursionError:
        raise
    except Exception:
        handler.handleError(logger.makeRecord(
            logger.name, levelno, __file__, 0, message, (values,), None))
    finally:
        handler.release()
