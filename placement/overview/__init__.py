"""The overview: what the dashboard (``placement/ui``) shows, answered by
the ``/overview`` extensions from the in-memory candidate state, exact as
of the request (the state is refreshed from the change log first).

- ``summary``: per resource class, the whole cloud's capacity, usage,
  free units, how they are spread over providers, and what is over
  capacity;
- ``pages``: providers filtered (name or uuid prefix, traits,
  aggregates, free units) and listed a page at a time;
- ``tree``: one provider's whole tree, the sharing providers it reaches
  and the consumers holding there.

Capacity is ``(total - reserved) x allocation_ratio`` rounded down, as
the candidate search and the audit count it.  Nothing here knows about
HTTP; the state is read through its lookups and its ``providers``.
"""
