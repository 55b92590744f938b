"""``python -m placement.cmd.openapi``: print the OpenAPI document of
the route table, as ``GET /openapi.json`` serves it (api-ref/openapi.json
is a copy, which a test keeps current)."""

import json

from placement import app
from placement import openapi


def main():
    print(json.dumps(openapi.document(app.routes()), indent=1,
                     sort_keys=True))


if __name__ == '__main__':
    main()
