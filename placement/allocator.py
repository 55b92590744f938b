"""This process's memory: glibc's allocator, tuned for a process that
sends large answers, and what of it is the process's own."""

import ctypes
import os

# glibc's mallopt parameter, and the size from which buffers get pages of
# their own (see return_large_buffers).
_M_MMAP_THRESHOLD = -3
_LARGE_BUFFER = 1024 * 1024


def return_large_buffers():
    """Give buffers of 1 MB and more pages of their own, returned to the
    system when freed.

    glibc raises that threshold each time such a buffer is freed, so
    after a large answer (an unbounded candidates answer or a listing at
    100,000 providers, encoded in batches of a few MB) the next ones came
    from the heap, and a worker kept 60 MB it no longer used (326 MB
    instead of 266 after the 100,000-provider listing).  Answers under
    1 MB, the usual ones, still come from the heap, without page faults.
    An operator's own MALLOC_MMAP_THRESHOLD_ is left alone, as is any C
    library without mallopt.
    """
    if 'MALLOC_MMAP_THRESHOLD_' in os.environ:
        return
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, _LARGE_BUFFER)
    except (AttributeError, OSError):
        pass


def give_back_free_memory():
    """Return the heap's free pages to the system (glibc's malloc_trim).

    A large answer made of pieces (a full listing at 100,000 providers,
    74 MB received from a state reader and sent in 256 KB writes) leaves
    free chunks between what the request kept; glibc trims only the
    heap's top, so a uwsgi worker stayed 33-40 MB larger after each one.
    Costs a few milliseconds: called once a large answer is sent, never
    per request.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):
        pass


def own_memory(pid='self'):
    """Bytes of this process's (or ``pid``'s) memory no other process
    shares: the pages it wrote to (its own or copied from its parent) and
    those only it reads, from /proc (0 where there is no /proc)."""
    total = 0
    try:
        with open('/proc/%s/smaps_rollup' % pid) as handle:
            for line in handle:
                if line.startswith(('Private_Clean:', 'Private_Dirty:')):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total
