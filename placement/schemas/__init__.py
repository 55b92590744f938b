"""JSON schemas for request bodies, query strings and answers, one module
per resource."""


def for_version(table, version):
    """The schema of ``table`` (``((first version), schema)`` pairs, newest
    first) for ``version``; a ``None`` schema means nothing is accepted."""
    for first, schema in table:
        if tuple(version) >= first:
            return schema
    raise LookupError(version)
