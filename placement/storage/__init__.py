"""Storage: tables, the engine and one query module per resource.

The queries call the tables by the short names ``tables`` defines (``RP``,
``ALLOC``, ...), and the joins more than one module makes are written there
too.

Nothing here knows about HTTP.  Functions take a SQLAlchemy ``Connection``
(from ``engine.Database``: a transaction for a write, and for a read too
except on PostgreSQL, where a read runs outside one) and plain values, and
return plain values (dicts, lists, ints) or raise ``storage.exceptions``.
The statements every compute node or conductor runs all day are built
once per process, and on PostgreSQL prepared once per connection
(``prepared``).  What is kept in memory is ``placement.state``'s; every
write here says what it changed to the change log (``changes``) that
keeps those copies exact.
"""
