"""The audit: allocations that should not be there, inventories that
cannot be used, and what a change of inventory would do before it is
made (an extension of this service; upstream has none).

- ``findings``: the four kinds of finding (over capacity, consumers split
  across trees, stale migrations, unusable inventory), from the
  candidate state in memory and the allocation reads of
  ``storage.audit``.
- ``what_if``: inventory changes applied to a copy of the state, and
  what would follow: capacity before and after, who would hold the
  excess, how many more copies of a request would fit.

Nothing here knows about HTTP.
"""
