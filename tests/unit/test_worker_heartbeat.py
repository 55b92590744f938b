"""placement-api's worker touches gunicorn's heartbeat file once a second
at most, not at every turn of its event loop."""

import types

from placement.cmd import worker


def test_heartbeat_is_touched_at_most_once_per_interval(monkeypatch):
    clock = [100.0]
    touched = []
    monkeypatch.setattr(worker.time, 'monotonic', lambda: clock[0])
    subject = worker.Worker.__new__(worker.Worker)
    subject.tmp = types.SimpleNamespace(
        notify=lambda: touched.append(clock[0]))
    for _turn in range(12):     # 3 s of loop turns, 4 a second
        subject.notify()
        clock[0] += worker.HEARTBEAT_EVERY / 4
    assert touched == [100.0, 101.0, 102.0]
