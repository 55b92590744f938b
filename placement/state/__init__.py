"""The in-memory state: exact copies of the database each process keeps.

Each API process keeps copies of what it answers most from memory, and
the change log (``storage.changes``) keeps them true: before a copy is
read, the process asks where the log stands (one statement), and reads
again what was logged since (``catch_up``), so that every answer equals
what a fresh read of the database would give at that moment, whichever
process or host wrote last.  Read in this order; each module depends
only on those above it (and on ``storage``, which does the SQL).

- ``per_process``: one object per database per process, started afresh
  in a forked worker.
- ``catch_up``: what changed since a copy's position, the one reading of
  the log every copy applies.
- ``providers``: the providers, their trees, inventories and usage,
  traits and aggregates, and the class and trait names, with the
  lookups everything reads them by (``State``).
- ``queries``: what the state answers about many providers at once.
- ``registration``: this process's record among those reading the log.
- ``questions``: the questions the state answers, each registered
  where it is defined; ``wire``: how they and their answers cross a
  local socket.
- ``shared``: the host's state readers, which workers loading the
  application after the fork ask instead of keeping a state each;
  ``reader``: one of them, forked by the keeper
  (``cmd/state_process.py``).
- ``snapshot``: a process's ``State`` of a database, refreshed under a
  lock before each read (``Snapshot.fresh``); ``answer`` asks it a
  question, or asks the readers.
- ``answer_store``: the host's store of kept answers, one for every
  worker of a service; ``kept_answers``: what of it a process may give,
  by the change log.
- ``listing`` and ``provider_reads``: ``GET /resource_providers`` and a
  provider's usages, traits and aggregates from the state, else SQL; the
  latter kept as ``kept_answers`` keeps them.
- ``project_usages`` and ``provider_allocations``: the answers ``GET
  /usages?project_id=`` and ``GET /resource_providers/{uuid}/allocations``
  gave, kept until the change log says they moved (``kept_answers``: one
  position in the log per process for every kind of answer kept).
- ``consumer_spans``: the consumers holding in two or more trees (the
  audit's split consumers are among them).

Nothing here knows about HTTP.
"""
