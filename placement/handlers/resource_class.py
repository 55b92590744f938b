"""Handlers for /resource_classes and /resource_classes/{name} (1.2+).

PUT on a member changed meaning at 1.7: up to 1.6 it renames a custom
class from a JSON body; from 1.7 it has no body and makes sure the class
named in the URL exists (201 when it created it, 204 when it was there).
"""

import json

import falcon

from placement import errors
from placement import microversion
from placement.handlers import base
from placement.policies import resource_class as policies
from placement.schemas import resource_class as schemas
from placement.storage import exceptions as storage_exc
from placement.storage import resource_classes as storage


def _url(req, name):
    return base.url(req, 'resource_classes', name)


def _serialize(req, resource_class):
    return {
        'name': resource_class['name'],
        'links': [{'rel': 'self', 'href': _url(req, resource_class['name'])}],
    }


def _send_created(req, resp, resource_class, status):
    resp.status = status
    resp.location = base.absolute_url(
        req, 'resource_classes', resource_class['name'])


def _validate_url_name(name):
    """Check a URL name as if it had come in a ``{"name": ...}`` body.

    The name is spliced into a JSON document unescaped, exactly as
    upstream does, so a name with a quote is "Malformed JSON" there too.
    """
    try:
        data = json.loads('{"name": "%s"}' % name)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    base.validate(data, schemas.NAME_BODY)


class ResourceClasses(base.Resource):

    @base.operation('List resource classes', since='1.2',
                    responses={200: schemas.RESOURCE_CLASSES})
    def on_get(self, req, resp):
        req.context.can(policies.LIST)
        resource_classes = req.context.db.read(storage.list_all)
        base.send_json(req, resp, {'resource_classes': [
            _serialize(req, rc) for rc in resource_classes]})
        base.send_cache_headers(req, resp, base.newest_change(
            resource_classes, base.utcnow()))

    @base.operation('Create a custom resource class', since='1.2',
                    body=schemas.NAME_BODY, responses={201: None})
    @base.require_json
    def on_post(self, req, resp):
        req.context.can(policies.CREATE)
        name = base.read_body(req)['name']
        try:
            resource_class = req.context.db.write(storage.create, name)
        except storage_exc.Duplicate:
            raise errors.Conflict(
                'Conflicting resource class already exists: %s' % name)
        _send_created(req, resp, resource_class, falcon.HTTP_201)


class ResourceClass(base.Resource):

    @base.operation('Show a resource class', since='1.2',
                    responses={200: schemas.RESOURCE_CLASS})
    def on_get(self, req, resp, name):
        req.context.can(policies.SHOW)
        resource_class = req.context.db.read(storage.get_by_name, name)
        base.send_json(req, resp, _serialize(req, resource_class))
        base.send_cache_headers(req, resp, base.newest_change(
            [resource_class], base.utcnow()))

    @base.operation('Rename a custom resource class (up to 1.6); make sure '
                    'one exists (from 1.7)', since='1.2',
                    body=(((1, 7), None), ((1, 2), schemas.NAME_BODY)),
                    responses={200: schemas.RESOURCE_CLASS, 201: None,
                               204: None})
    def on_put(self, req, resp, name):
        if microversion.is_at_least(req, '1.7'):
            self._ensure(req, resp, name)
        else:
            self._rename(req, resp, name)

    @base.require_json
    def _rename(self, req, resp, name):
        req.context.can(policies.UPDATE)
        new_name = base.read_body(req)['name']
        try:
            resource_class = req.context.db.write(
                storage.rename, name, new_name)
        except storage_exc.ReadOnly:
            raise errors.BadRequest(
                'Cannot update standard resource class %s' % name)
        except storage_exc.Duplicate:
            raise errors.Conflict(
                'Resource class already exists: %s' % new_name)
        base.send_json(req, resp, _serialize(req, resource_class))

    def _ensure(self, req, resp, name):
        req.context.can(policies.UPDATE)
        _validate_url_name(name)
        resource_class, created = req.context.db.write(storage.ensure, name)
        _send_created(req, resp, resource_class,
                      falcon.HTTP_201 if created else falcon.HTTP_204)

    @base.operation('Delete a custom resource class', since='1.2',
                    responses={204: None})
    def on_delete(self, req, resp, name):
        req.context.can(policies.DELETE)
        try:
            req.context.db.write(storage.delete, name)
        except storage_exc.ReadOnly as exc:
            raise errors.BadRequest(
                'Error in delete resource class: %s' % exc.message)
        except storage_exc.Conflict as exc:
            raise errors.Conflict(
                'Error in delete resource class: %s' % exc.message)
        resp.status = falcon.HTTP_204
