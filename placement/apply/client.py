"""The REST calls placement-apply makes, through a keystoneauth session.

Only what upstream Placement has (microversion 1.38), so the same file
applies to this service and to upstream's alike; the one exception,
this service's what-if (``--dry-run``), is asked for only where served.
"""

import urllib.parse

MICROVERSION = '1.38'


class Failed(Exception):
    """A request was refused; ``status``, ``code`` and ``detail`` say
    why (``code`` is the Placement error code)."""

    def __init__(self, method, url, status, code, detail):
        super().__init__('%s %s: %d %s' % (method, url, status, detail))
        self.status = status
        self.code = code
        self.detail = detail


class Conflict(Failed):
    """409: a generation moved (or the change does not fit)."""


def _error(method, url, response):
    try:
        entry = response.json()['errors'][0]
        code, detail = entry.get('code'), entry.get('detail', '')
    except (ValueError, KeyError, IndexError, TypeError):
        code, detail = None, response.text[:500]
    kind = Conflict if response.status_code == 409 else Failed
    return kind(method, url, response.status_code, code,
                ' '.join(detail.split()))


class Placement:
    """Placement's API at ``MICROVERSION`` over a keystoneauth adapter
    (whose session may be shared by threads)."""

    def __init__(self, adapter):
        self.adapter = adapter

    def _call(self, method, url, body=None, ok=(200,)):
        response = self.adapter.request(
            url, method, json=body, raise_exc=False,
            headers={'OpenStack-API-Version': 'placement ' + MICROVERSION,
                     'Accept': 'application/json'})
        if response.status_code not in ok:
            raise _error(method, url, response)
        return response.json() if response.content else None

    def providers(self, **filters):
        query = urllib.parse.urlencode(filters)
        return self._call('GET', '/resource_providers' + (
            '?' + query if query else ''))['resource_providers']

    def provider(self, uuid):
        """(generation, inventories, traits, aggregates), current; the
        generation is the one the inventories came with (a write since
        makes the next write a 409, and the provider is read again)."""
        base = '/resource_providers/' + uuid
        inventories = self._call('GET', base + '/inventories')
        traits = self._call('GET', base + '/traits')['traits']
        aggregates = self._call('GET', base + '/aggregates')['aggregates']
        return (inventories['resource_provider_generation'],
                inventories['inventories'], traits, aggregates)

    def create_provider(self, name, uuid=None, parent=None):
        body = {'name': name}
        if uuid:
            body['uuid'] = uuid
        if parent:
            body['parent_provider_uuid'] = parent
        return self._call('POST', '/resource_providers', body)

    def delete_provider(self, uuid):
        self._call('DELETE', '/resource_providers/' + uuid, ok=(204,))

    def set_inventories(self, uuid, generation, inventories):
        return self._call(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': generation,
             'inventories': inventories})['resource_provider_generation']

    def set_traits(self, uuid, generation, traits):
        return self._call(
            'PUT', '/resource_providers/%s/traits' % uuid,
            {'resource_provider_generation': generation,
             'traits': sorted(traits)})['resource_provider_generation']

    def set_aggregates(self, uuid, generation, aggregates):
        return self._call(
            'PUT', '/resource_providers/%s/aggregates' % uuid,
            {'resource_provider_generation': generation,
             'aggregates': sorted(aggregates)})['resource_provider_generation']

    def ensure_resource_class(self, name):
        self._call('PUT', '/resource_classes/' + name, ok=(201, 204))

    def ensure_trait(self, name):
        self._call('PUT', '/traits/' + name, ok=(201, 204))

    def what_if(self, inventories):
        """POST /audit/what_if of ``inventories`` ({uuid: {class: record
        or None}}): its answer, or None where the service has no such
        route (upstream Placement)."""
        try:
            return self._call('POST', '/audit/what_if',
                              {'inventories': inventories})
        except Failed as exc:
            if exc.status in (404, 405):
                return None
            raise
