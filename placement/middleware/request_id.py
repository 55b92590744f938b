"""WSGI middleware giving every request an id, echoed on every response.

Outermost in the pipeline, so that even a 401 from keystonemiddleware or a
CORS preflight carries the id.  The id goes into the environ under
oslo.middleware's key, where oslo.context and our error bodies find it.
An inbound ``X-OpenStack-Request-ID`` of the right shape is kept as the
global request id, as OpenStack services do for cross-service tracing.
"""

import re
import uuid

ENV_REQUEST_ID = 'openstack.request_id'
ENV_GLOBAL_REQUEST_ID = 'openstack.global_request_id'
HEADERS = ('x-openstack-request-id', 'openstack-request-id')
_GLOBAL_ID = re.compile(r'^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-'
                        r'[a-f0-9]{4}-[a-f0-9]{12}$')


class RequestId:

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        request_id = 'req-%s' % uuid.uuid4()
        environ[ENV_REQUEST_ID] = request_id
        inbound = environ.get('HTTP_X_OPENSTACK_REQUEST_ID')
        if inbound and _GLOBAL_ID.match(inbound):
            environ[ENV_GLOBAL_REQUEST_ID] = inbound

        def add_id(status, headers, exc_info=None):
            present = {name.lower() for name, _value in headers}
            headers = list(headers) + [(name, request_id) for name in HEADERS
                                       if name not in present]
            return start_response(status, headers, exc_info)

        return self.application(environ, add_id)
