"""The allocation-candidate engine: where can this request be satisfied?

- ``request``: what is asked, as plain values (request groups and the
  request-wide parameters), parsed from HTTP by the handler.
- ``filters``: the SQL that narrows providers per request group (capacity,
  traits, aggregates, trees), set-based and index-bound.
- ``groups``: each request group's names resolved, and its candidate
  providers per anchoring tree, for every tree or for a page of trees.
- ``combine``: per anchoring tree, the search that picks one provider per
  resource (unsuffixed group) or per group (granular groups), pruning as
  it goes and stopping as soon as enough candidates exist.
- ``summaries``: what the answer shows about each provider of its trees.
- ``engine``: the order of it all, and the paging that lets ``limit``
  read no more trees than its answer needs.

The in-memory state the search reads (``snapshot``) answers more than
candidates: ``listing`` lists providers from it, and ``provider_reads``
gives one provider's usages, traits and aggregates, the reads every
nova-compute makes of its own provider every few minutes.

Nothing here knows about HTTP.
"""
