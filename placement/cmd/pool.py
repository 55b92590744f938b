"""The threads of a placement-api worker, waiting where requests arrive.

gunicorn's threads wait on a queue that the worker's event loop fills:
every request on a kept-alive connection wakes the loop (epoll), which
then wakes a thread (the queue), and the two hand the GIL between them,
often across cores. Measured on ``GET /`` (one worker, one kept-alive
client, alternately), a worker spent 270-440 us of CPU per request that
way and 165-180 us without the loop and the hand-over.

Here the threads themselves wait on one epoll that holds:

- the kept-alive connections, each armed for one event
  (``EPOLLONESHOT``): the kernel wakes one waiting thread when its next
  request arrives, and that thread reads and answers it, with no event
  loop and no other thread involved;
- an eventfd counting the work the event loop hands over (a new
  connection's first request, anything gunicorn reads), also armed for
  one event and re-armed by the thread that took a unit, so each unit
  wakes one thread.

Linux wakes the threads waiting on one epoll one at a time, and a
one-shot event is reported once, so each event wakes one thread and an
idle worker's other threads sleep on.
"""

import concurrent.futures
import logging
import os
import queue
import select
import threading

LOG = logging.getLogger(__name__)

_ONE_READ = select.EPOLLIN | select.EPOLLONESHOT


class Pool:
    """``size`` threads serving what ``submit`` hands them and the
    connections ``watch`` arms; ``on_readable(conn)`` runs in a thread
    when a watched connection turns readable."""

    def __init__(self, size, on_readable):
        self._on_readable = on_readable
        self._epoll = select.epoll()
        self._work = queue.SimpleQueue()
        self._wake = os.eventfd(
            0, os.EFD_SEMAPHORE | os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake, _ONE_READ)
        # Watched connections by descriptor, until their event is taken.
        self._watched = {}
        for number in range(size):
            threading.Thread(target=self._serve, daemon=True,
                             name='placement-%d' % number).start()

    def submit(self, call, *args):
        """Run ``call(*args)`` in a thread; its future (what gunicorn's
        worker expects of an executor)."""
        future = concurrent.futures.Future()
        self._work.put((future, call, args))
        os.eventfd_write(self._wake, 1)
        return future

    def watch(self, conn):
        """Have a thread take ``conn`` when it turns readable, once.
        Raises ValueError once the pool is shut down."""
        fd = conn.sock.fileno()
        self._watched[fd] = conn
        try:
            self._epoll.modify(fd, _ONE_READ)
        except FileNotFoundError:  # not watched before
            self._epoll.register(fd, _ONE_READ)

    def forget(self, conn):
        """``conn`` is being closed: drop it if it is watched."""
        fd = conn.sock.fileno()
        if self._watched.get(fd) is conn:
            del self._watched[fd]

    def shutdown(self, wait=False):
        """Stop taking events; threads leave at their next wake-up (they
        are daemons: a worker exiting does not wait for them). The
        eventfd stays open until the process exits: a thread still
        taking work must not find its number reused by a socket."""
        self._epoll.close()

    def _serve(self):
        poll = self._epoll.poll
        while True:
            try:
                events = poll(None, 1)
            except (ValueError, OSError):  # shut down
                return
            for fd, _mask in events:
                try:
                    if fd == self._wake:
                        self._run_handed_over()
                    else:
                        conn = self._watched.pop(fd, None)
                        if conn is not None:
                            self._on_readable(conn)
                except Exception:
                    LOG.exception('Error in a worker thread')

    def _run_handed_over(self):
        try:
            os.eventfd_read(self._wake)
        except BlockingIOError:
            return
        finally:
            # Re-armed before running: another unit wakes another thread.
            self._epoll.modify(self._wake, _ONE_READ)
        future, call, args = self._work.get_nowait()
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = call(*args)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)
