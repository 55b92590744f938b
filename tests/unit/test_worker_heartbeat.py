"""placement-api's worker touches gunicorn's heartbeat file once a second
at most, not at every turn of its event loop."""

import types

from gunicorn import config

from placement import allocator
from placement.cmd import worker


def test_heartbeat_is_touched_at_most_once_per_interval(monkeypatch):
    clock = [100.0]
    touched = []
    monkeypatch.setattr(worker.time, 'monotonic', lambda: clock[0])
    subject = worker.Worker.__new__(worker.Worker)
    subject.limits = worker.Limits(1, 1, 1, 1)
    subject.tmp = types.SimpleNamespace(
        notify=lambda: touched.append(clock[0]))
    for _turn in range(12):     # 3 s of loop turns, 4 a second
        subject.notify()
        clock[0] += worker.HEARTBEAT_EVERY / 4
    assert touched == [100.0, 101.0, 102.0]


def test_a_worker_past_its_memory_limit_stops_at_its_next_check(
        monkeypatch):
    """Checked once per MEMORY_CHECK_EVERY, with the heartbeat: over the
    limit, the worker stops taking requests (the arbiter replaces it),
    and gives those in flight as long to finish as any request has."""
    clock = [100.0]
    own = [10 * 2 ** 20]
    monkeypatch.setattr(worker.time, 'monotonic', lambda: clock[0])
    monkeypatch.setattr(allocator, 'own_memory', lambda: own[0])
    subject = worker.Worker.__new__(worker.Worker)
    subject.limits = worker.Limits(1, 1, 1, 1, own_memory=64 * 2 ** 20)
    subject.tmp = types.SimpleNamespace(notify=lambda: None)
    subject.log = types.SimpleNamespace(info=lambda *args: None)
    subject.alive = True
    subject.cfg = config.Config()
    subject.cfg.set('graceful_timeout', 10)
    subject.cfg.set('timeout', 120)
    subject.memory_checked_at = clock[0]
    for _turn in range(8):
        clock[0] += 1
        subject.notify()
    assert subject.alive     # checked, under the limit
    own[0] = 65 * 2 ** 20
    clock[0] += 1
    subject.notify()
    assert subject.alive     # not checked again yet
    for _turn in range(5):
        clock[0] += 1
        subject.notify()
    assert not subject.alive
    assert subject.cfg.graceful_timeout == 120
