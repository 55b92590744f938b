"""What every handler module shares: the resource base class, version
gates, JSON bodies (large ones in ``json_pieces``), and the mapping of
storage failures to HTTP errors."""

import datetime
import functools

import falcon

from placement import errors
from placement import input_checks
from placement import microversion
from placement import schemas
from placement import json_encoding
from placement.handlers import json_pieces
from placement import query_params
from placement.schemas import validation
from placement.storage import exceptions as storage_exc

JSON = json_pieces.JSON


class Resource:
    """Base for falcon resources: unsupported methods (OPTIONS included)
    answer 405 with an Allow header naming only the supported ones, in
    ``allow_order`` (upstream's order for the route, as clients see it)."""

    allow_order = ('GET', 'POST', 'PUT', 'DELETE', 'PATCH')

    def allowed_methods(self, version=None):
        """The methods served; with ``version``, as a client of it sees
        them. Upstream's Allow names a route's methods whatever the
        version, so only our extensions are left out where not served."""
        return [m for m in self.allow_order
                if _visible(getattr(self, 'on_%s' % m.lower(), None),
                            version)]

    def on_options(self, req, resp, **params):
        raise errors.MethodNotAllowed(
            req, self.allowed_methods(req.context.microversion))


def _visible(responder, version):
    if responder is None:
        return False
    spec = getattr(responder, 'operation', None)
    return (version is None or spec is None or not spec.extension
            or spec.serves(version))


class Operation:
    """One responder's contract, by microversion: the range it is served
    in, the JSON schemas of its body and query string, and its answers.

    Handlers read their input through it (``read_body``, ``read_query``)
    and ``placement.openapi`` publishes it, so the OpenAPI document states
    exactly what the service enforces.

    ``body`` and ``query`` are each a schema or a table of
    ``((since), schema)`` pairs newest first (a ``None`` schema: nothing
    accepted from then on).  ``responses``
    maps each success status to the schema of its body (``None``: none).
    ``media_types`` are the body's; ``extension`` marks an operation
    upstream Placement does not have.
    """

    def __init__(self, summary, since=None, until=None, outside=404,
                 body=None, query=None, responses=None, media_types=(JSON,),
                 extension=False):
        self.summary = summary
        self.versions = (
            microversion.as_tuple(since) or microversion.MIN_VERSION,
            microversion.as_tuple(until) or microversion.MAX_VERSION)
        self.outside = outside
        self.body_schema = _by_version(body)
        self.query_schema = _by_version(query)
        self.responses = responses or {}
        self.media_types = media_types
        self.extension = extension

    def serves(self, version):
        return self.versions[0] <= tuple(version) <= self.versions[1]


def _by_version(spec):
    if isinstance(spec, tuple):
        return functools.partial(schemas.for_version, spec)
    return lambda version: spec


def operation(summary, **contract):
    """Declare a responder's contract (see ``Operation``) and serve it only
    for microversions in its range.

    Outside the range the request is answered as upstream answers it: a
    404, or (``outside=405``) a 405 that names no methods.
    """
    spec = Operation(summary, **contract)

    def decorator(responder):
        @functools.wraps(responder)
        def wrapper(resource, req, resp, *args, **kwargs):
            if not spec.serves(req.context.microversion):
                if spec.outside == 405:
                    # Upstream names no methods when a version lacks one
                    # of its own; our extensions answer as if absent.
                    raise errors.MethodNotAllowed(
                        req, resource.allowed_methods(
                            req.context.microversion)
                        if spec.extension else None)
                raise errors.NotFound()
            req.context.operation = spec
            return responder(resource, req, resp, *args, **kwargs)
        wrapper.operation = spec
        return wrapper
    return decorator


def require_media(*media_types):
    """415 unless the request body is declared as one of ``media_types``."""
    def decorator(responder):
        @functools.wraps(responder)
        def wrapper(resource, req, resp, *args, **kwargs):
            content_type = (req.content_type or '').split(';')[0].strip()
            if content_type not in media_types:
                raise errors.UnsupportedMediaType(
                    'The media type %s is not supported, use %s'
                    % (content_type or None, ' or '.join(media_types)))
            return responder(resource, req, resp, *args, **kwargs)
        return wrapper
    return decorator


require_json = require_media(JSON)


def validate(data, schema):
    """400 with jsonschema's message unless ``data`` matches ``schema``."""
    try:
        validation.check(data, schema, validation.BODY_FORMATS)
    except validation.Invalid as exc:
        raise errors.BadRequest('JSON does not validate: %s' % exc)


def read_json(req, schema=None):
    """The request body parsed (and validated against ``schema``).

    A body without a declared length (chunked) is read only up to the
    size limit; a declared length over it was refused before any read.
    """
    limit = req.context.conf.oslo_middleware.max_request_body_size
    raw = _body_stream(req).read(limit + 1)
    if len(raw) > limit:
        raise errors.PayloadTooLarge(errors.PayloadTooLarge.detail(limit))
    try:
        data = input_checks.load_json(raw)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    if schema is not None:
        validate(data, schema)
    return data


def _body_stream(req):
    """Where the body is read from. falcon bounds its stream by the
    declared length and so would see a chunked body (which declares none)
    as empty; the server's own input stream ends where the chunks do."""
    if req.content_length is None and 'chunked' in (
            req.get_header('Transfer-Encoding') or '').lower():
        return req.stream
    return req.bounded_stream


def read_body(req):
    """The body, validated against the operation's schema for the
    request's microversion."""
    return read_json(req, req.context.operation.body_schema(
        req.context.microversion))


def read_query(req):
    """The query string (a ``query_params.Query``), validated against the
    operation's schema for the request's microversion."""
    query = query_params.Query.from_request(req)
    validate_query(req, query)
    return query


def validate_query(req, query):
    """400 unless ``query`` matches the operation's schema."""
    query_params.validate(query, req.context.operation.query_schema(
        req.context.microversion))


def send_json(req, resp, body, status=falcon.HTTP_200):
    resp.status = status
    resp.content_type = JSON
    resp.data = json_encoding.encode_json(body)


def url(req, *parts):
    """An absolute path within the service, honouring its mount point."""
    return '/'.join((req.root_path or '',) + parts)


_DEFAULT_PORTS = {'http': ':80', 'https': ':443'}


def absolute_url(req, *parts):
    """``url()`` as an absolute URL, the form upstream's Location takes
    (host as the client named it, less the scheme's default port)."""
    netloc = req.netloc
    default_port = _DEFAULT_PORTS.get(req.scheme)
    if default_port and netloc.endswith(default_port):
        netloc = netloc[:-len(default_port)]
    return '%s://%s%s' % (req.scheme, netloc, url(req, *parts))


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def newest_change(rows, when_empty=None):
    """The latest ``updated_at`` (else ``created_at``) among ``rows``: the
    Last-Modified of a listing; ``when_empty`` if no row has one."""
    return latest((row['updated_at'] or row['created_at'] for row in rows),
                  when_empty)


def latest(stamps, when_empty=None):
    """The latest of ``stamps``, those that are None left out;
    ``when_empty`` if none is left."""
    return max((stamp for stamp in stamps if stamp is not None),
               default=when_empty)


def send_cache_headers(req, resp, last_modified):
    """From 1.15, ``Last-Modified`` and ``Cache-Control: no-cache``."""
    if microversion.is_at_least(req, '1.15'):
        resp.cache_control = ['no-cache']
        resp.last_modified = last_modified


_STATUS_FOR_STORAGE_ERROR = (
    (storage_exc.NotFound, errors.NotFound),
    (storage_exc.Conflict, errors.Conflict),
    (storage_exc.InvalidInput, errors.BadRequest),
    (storage_exc.ReadOnly, errors.BadRequest),
    (storage_exc.DatabaseUnavailable, errors.ServiceUnavailable),
)


def storage_error_handler(req, resp, exc, params):
    """Falcon error handler: a storage failure becomes its HTTP error."""
    for storage_class, http_class in _STATUS_FOR_STORAGE_ERROR:
        if isinstance(exc, storage_class):
            raise http_class(exc.message, code=exc.code)
    raise errors.PlacementError(exc.message, code=exc.code,
                                status=falcon.HTTP_500)
