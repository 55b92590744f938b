"""Processes on this machine, found by their command line (tests and
benchmarks count a server's helpers and database backends this way)."""

import os


def pids_where(matches):
    """The pids of the processes whose command line, as words (NULs and
    spaces both separate them: a PostgreSQL backend writes its title as
    one string), ``matches``."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                words = handle.read().replace(b'\0', b' ').split()
        except OSError:
            continue
        if matches(words):
            found.append(int(entry))
    return found
