"""The allocation-candidate search: where can this request be satisfied?

Read in this order; each module depends only on those above it.

- ``request``: what is asked, as plain values (request groups and the
  request-wide parameters), parsed from HTTP by the handler.
- ``filters``: the tests a provider passes or fails for a group
  (capacity, traits, aggregates, trees), over the state and its indexes.
- ``combine``: per anchoring tree, the search that picks one provider per
  slot, pruning as it goes.
- ``groups``: each request group's names resolved, and its candidate
  providers per anchoring tree, for every tree or for a page of trees.
- ``plan``: what the search, explain and capacity read the same way: the
  slots of an answer and their order, the bound on answers, the roots
  ``root_required`` permits, the request-wide constraints.
- ``summaries``: what the answer shows about each provider of its trees.
- ``search``: the order of it all, and the paging that lets ``limit``
  read no more trees than its answer needs.
- ``funnel`` and ``explain``: why a request has (no) candidates, each
  group's constraints one at a time, then the combining steps.
- ``capacity``: how many more copies of a request fit.

Everything here reads the in-memory state (``placement.state``: a
``providers.State``, kept exact by the change log) through its lookups
(a provider by id or uuid, a name's id and back, who holds a class, a
trait or an aggregate, a tree's members) and ``state.queries``, and
through its providers and sharing providers where a walk covers many.

Nothing here knows about HTTP.
"""
