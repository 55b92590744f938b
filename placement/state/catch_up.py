"""What changed since a copy was read: the one reading of the change log
every copy in memory applies.

Every write transaction logs what it changed (``storage.changes``): the
providers (their rows, inventories, usage, traits, aggregates or place
in a tree), whether resource class or trait names changed, the projects
whose usage moved; a write by anything else, or one that did not say,
as everything.  A copy remembers the ``changes.Position`` it was read
at; ``since`` reads where the log stands now and what it logged in
between, and the copy reads again what that names, or everything when
the log cannot say (another database, a log pruned past the copy, a
protocol the log is not kept by any more: see ``changes``).
"""

import typing

from placement.storage import changes

# Providers changed at once beyond which a copy kept by provider is read
# whole: one pass over each table beats thousands of id lists.
PARTIAL_LIMIT = 5000


class Changed(typing.NamedTuple):
    """What changed between two positions of the log."""
    unknown: bool           # everything may have: read it all again
    providers: frozenset    # provider ids
    names: bool             # resource classes or traits named anew
    projects: frozenset     # project ids whose consumers' usage moved

    @property
    def nothing(self):
        return not (self.unknown or self.providers or self.names
                    or self.projects)

    def too_many(self):
        """Whether a copy kept by provider should read everything
        instead of the providers named."""
        return self.unknown or len(self.providers) > PARTIAL_LIMIT


NOTHING = Changed(False, frozenset(), False, frozenset())
UNKNOWN = Changed(True, frozenset(), True, frozenset())


def since(conn, position):
    """(what changed since ``position`` (None: a copy never read), the
    log's position now): the position to remember once the copy has
    applied the changes."""
    current = changes.current(conn)
    if position is not None and position.summary() == current.summary():
        return NOTHING, current
    logged = changes.changed_between(conn, position, current)
    if logged is None:
        return UNKNOWN, current
    providers, projects = changes.split(logged)
    if changes.EVERYTHING in providers:
        return UNKNOWN, current
    names = changes.NAMES in providers
    providers.discard(changes.NAMES)
    return Changed(False, frozenset(providers), names,
                   frozenset(projects)), current


def unchanged(db, position):
    """Whether the log still stands at ``position``, asked outside any
    transaction in one round trip where the database allows it (every
    answer from memory asks first); False when that cannot tell, and a
    copy then reads ``since``."""
    if position is None:
        return False
    summary = changes.summary_outside_transaction(db)
    return summary is not None and position.summary() == summary
