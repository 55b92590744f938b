"""Reading what a ``/metrics`` address serves (Prometheus's text format),
for tests."""

import http.client
import re

_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def scrape(port, timeout=10):
    """The text ``127.0.0.1:port/metrics`` serves (asserting a 200)."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request('GET', '/metrics')
        response = conn.getresponse()
        assert response.status == 200
        return response.read().decode()
    finally:
        conn.close()


def series(text, name):
    """{frozenset of (label, value): value} of the samples of ``name``."""
    found = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if line.startswith('#') or not match or match.group(1) != name:
            continue
        labels = frozenset(_LABEL.findall(match.group(2) or ''))
        found[labels] = float(match.group(3))
    return found


def sample(text, name, **labels):
    """The value of the sample of ``name`` with exactly ``labels``, or
    None."""
    wanted = frozenset((key, str(value)) for key, value in labels.items())
    return series(text, name).get(wanted)
