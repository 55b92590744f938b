"""The allocation-candidate engine: where can this request be satisfied?

- ``request``: what is asked, as plain values (request groups and the
  request-wide parameters), parsed from HTTP by the handler.
- ``filters``: the SQL that narrows providers per request group (capacity,
  traits, aggregates, trees), set-based and index-bound.
- ``combine``: per anchoring tree, the search that picks one provider per
  resource (unsuffixed group) or per group (granular groups), pruning as
  it goes and stopping as soon as enough candidates exist.
- ``engine``: the order of it all, and the provider summaries.

Nothing here knows about HTTP.
"""
