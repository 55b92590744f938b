"""Storage: tables, the engine and one query module per resource.

Nothing here knows about HTTP.  Functions take a SQLAlchemy ``Connection``
(inside a transaction opened by ``engine.Database``) and plain values, and
return plain values (dicts, lists, ints) or raise ``storage.exceptions``.
"""
