"""The WSGI application: middleware order and the one route table.

Request flow, outermost first:

  HTTPProxyToWSGI   only when [oslo_middleware]
                    enable_proxy_headers_parsing is set: X-Forwarded-*
  RequestId (WSGI)  every response gets x-openstack-request-id
  /healthcheck      oslo.middleware's health check, before any auth
  /ui/              the dashboard's static files (placement/ui), before
                    any auth (its pages call the API with a token); only
                    when [api] ui_enabled
  CORS (WSGI)       only when [cors] allowed_origin is set
  KeystoneAuth      (WSGI, auth_strategy=keystone) validates the token
  WriteAfterAnswer  (WSGI) writes RequestLog's line once the answer is sent
  falcon.App
    RequestMetrics    only with [metrics] enabled: count and time answers
    RequestLog        one log line per request, composed here
    NoAuth            (auth_strategy=noauth2) identity from X-Auth-Token
    RequestContext    credentials, config, database, policy on req.context
    Microversion      OpenStack-API-Version negotiation
    RequestChecks     content-type/length and Accept checks
    -> handler (parse, validate, authorize) -> storage -> handler
"""

import logging

import falcon
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi

from placement import context
from placement import health
from placement import errors
from placement import metrics
from placement import openapi
from placement import policy
from placement import tracing
from placement import ui
from placement.handlers import aggregate
from placement.handlers import allocation
from placement.handlers import allocation_candidate
from placement.handlers import allocation_candidate_extras
from placement.handlers import audit
from placement.handlers import base
from placement.handlers import inventory
from placement.handlers import openapi_document
from placement.handlers import overview
from placement.handlers import resource_class
from placement.handlers import reshaper
from placement.handlers import resource_provider
from placement.handlers import root
from placement.handlers import trait
from placement.handlers import usage
from placement.middleware import auth
from placement.middleware import context as context_middleware
from placement.middleware import metrics as metrics_middleware
from placement.middleware import microversion as microversion_middleware
from placement.middleware import request_checks
from placement.middleware import request_id
from placement.middleware import request_log
from placement.storage import engine
from placement.storage import exceptions as storage_exc
from placement.storage import standard_sync

LOG = logging.getLogger(__name__)


def routes():
    """Every endpoint: (URI template, resource). Read this to find one."""
    api = [
        ('/', root.Root()),
        ('/resource_providers', resource_provider.ResourceProviders()),
        ('/resource_providers/{uuid}', resource_provider.ResourceProvider()),
        ('/resource_providers/{uuid}/inventories', inventory.Inventories()),
        ('/resource_providers/{uuid}/inventories/{resource_class}',
         inventory.Inventory()),
        ('/resource_providers/{uuid}/traits', trait.ProviderTraits()),
        ('/resource_providers/{uuid}/aggregates',
         aggregate.ProviderAggregates()),
        ('/resource_providers/{uuid}/allocations',
         allocation.ProviderAllocations()),
        ('/resource_providers/{uuid}/usages', usage.ProviderUsages()),
        ('/resource_classes', resource_class.ResourceClasses()),
        ('/resource_classes/{name}', resource_class.ResourceClass()),
        ('/traits', trait.Traits()),
        ('/traits/{name}', trait.Trait()),
        ('/allocations', allocation.Allocations()),
        ('/allocations/{consumer_uuid}', allocation.ConsumerAllocations()),
        ('/usages', usage.Usages()),
        ('/reshaper', reshaper.Reshaper()),
        ('/allocation_candidates',
         allocation_candidate.AllocationCandidates()),
        ('/allocation_candidates/explain',
         allocation_candidate_extras.Explain()),
        ('/allocation_candidates/capacity',
         allocation_candidate_extras.Capacity()),
        ('/audit', audit.Audit()),
        ('/audit/what_if', audit.WhatIf()),
        ('/overview', overview.Summary()),
        ('/overview/providers', overview.Providers()),
        ('/overview/providers/{uuid}', overview.Provider()),
    ]
    return api + [(openapi.PATH, openapi_document.OpenAPIDocument(api))]


class _Request(falcon.Request):
    context_type = context.RequestContext


def _unknown_method(req, resp, **params):
    raise falcon.HTTPMethodNotAllowed([])


class _App(falcon.App):
    """falcon.App answering a method it does not know (neither HTTP's nor
    WebDAV's: ``FOO``) on a route 405 with the route's Allow, as any
    method the route does not serve and as upstream answers it, where
    falcon answers 400."""
    _default_responder_bad_request = _unknown_method


def _unexpected_error(req, resp, exc, params):
    LOG.exception('Unexpected error handling %s %s', req.method, req.path)
    raise errors.PlacementError(str(exc), status=falcon.HTTP_500)


def _method_not_allowed_handler(resources):
    """Falcon answers a method a route has no responder for; its Allow
    names OPTIONS (never served) and our extensions at every version.
    Name what the route's resource serves at the request's version."""
    def handle(req, resp, exc, params):
        raise errors.MethodNotAllowed(
            req, resources[req.uri_template].allowed_methods(
                req.context.microversion))
    return handle


def build_falcon_app(conf, db, enforcer):
    middleware = []
    if metrics.enabled():
        middleware.append(metrics_middleware.RequestMetrics())
    middleware.append(request_log.RequestLog())
    if conf.api.auth_strategy == 'noauth2':
        middleware.append(auth.NoAuth())
    middleware += [
        context_middleware.RequestContextMiddleware(conf, db, enforcer),
        microversion_middleware.MicroversionMiddleware(),
        request_checks.RequestChecks(),
    ]
    app = _App(request_type=_Request, middleware=middleware)
    # Upstream sends no Content-Type on a bodiless 201; falcon would.
    app.resp_options.default_media_type = None
    app.req_options.keep_blank_qs_values = True
    app.req_options.auto_parse_qs_csv = False
    app.req_options.strip_url_path_trailing_slash = False
    app.resp_options.secure_cookies_by_default = False
    app.add_error_handler(Exception, _unexpected_error)
    resources = dict(routes())
    app.add_error_handler(falcon.HTTPMethodNotAllowed,
                          _method_not_allowed_handler(resources))
    app.add_error_handler(storage_exc.StorageError,
                          base.storage_error_handler)
    app.set_error_serializer(errors.serialize_error)
    for template, resource in resources.items():
        app.add_route(template, resource)
    return app


def prepare_database(conf, db):
    """Migrate (when configured or embedded) and sync standard names,
    once the database answers (``max_retries``, ``retry_interval``)."""
    group = conf.placement_database
    db.wait_until_reachable(group.max_retries, group.retry_interval)
    if conf.placement_database.sync_on_startup or not (
            conf.placement_database.connection):
        # Imported only to migrate: alembic and its templates are 11 MB
        # in each worker of a server that loads the application in each.
        from placement.storage import migration
        migration.upgrade(db.engine)
    db.write(standard_sync.sync_all)


def build_app(conf, db=None, prepare=True):
    """The complete WSGI application for ``conf``.

    ``prepare=False`` when a parent process has already prepared the
    database (placement-api does, once, before forking its workers).
    """
    db = db or engine.Database.from_conf(conf)
    if prepare:
        prepare_database(conf, db)
    if conf.metrics.enabled:
        if metrics.samples_directory():
            metrics.enable()
            metrics.watch_pool(db.engine)
        else:
            # Only an application built without a server (embedded in
            # another program's tests, say): nothing would serve them.
            LOG.warning('[metrics] enabled, but no server serves this '
                        'application\'s metrics: it records none.')
    application = request_log.WriteAfterAnswer(
        build_falcon_app(conf, db, policy.build_enforcer(conf)))
    if conf.api.auth_strategy == 'keystone':
        from placement.middleware import keystone
        application = keystone.KeystoneAuth(application, conf)
    if conf.cors.allowed_origin:
        application = cors.CORS(application, conf)
    application = health.HealthcheckRouter(application, conf)
    if conf.api.ui_enabled:
        application = ui.Dashboard(application)
    application = request_id.RequestId(application)
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        # Only when asked for: it costs a webob request on every call.
        application = http_proxy_to_wsgi.HTTPProxyToWSGI(application, conf)
    # Outermost, as upstream has it: the trace holds the whole request.
    tracing.init(conf, db)
    return tracing.wrap(application, conf)
