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
    return sorted(found)


def parent_of(pid):
    """The pid of ``pid``'s parent (None once it is gone)."""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as handle:
            stat = handle.read()
    except OSError:
        return None
    # The fields after the command name, which may hold spaces and
    # parentheses: state, then the parent's pid.
    return int(stat[stat.rindex(b')') + 2:].split()[1])


def children_of(pid):
    """The pids of ``pid``'s child processes."""
    return sorted(int(entry) for entry in os.listdir('/proc')
                  if entry.isdigit() and parent_of(int(entry)) == pid)
