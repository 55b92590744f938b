"""glibc's allocator, as placement-api and the state process tune it."""

import ctypes

from placement import allocator


class _Libc:
    def __init__(self):
        self.calls = []

    def mallopt(self, parameter, value):
        self.calls.append((parameter, value))
        return 1


def test_large_buffers_get_pages_of_their_own(monkeypatch):
    """A fixed mmap threshold: glibc's moving one left a worker holding
    60 MB after a large answer."""
    libc = _Libc()
    monkeypatch.delenv('MALLOC_MMAP_THRESHOLD_', raising=False)
    monkeypatch.setattr(ctypes, 'CDLL', lambda name: libc)
    allocator.return_large_buffers()
    assert libc.calls == [(-3, 1024 * 1024)]


def test_an_operators_threshold_is_left_alone(monkeypatch):
    libc = _Libc()
    monkeypatch.setenv('MALLOC_MMAP_THRESHOLD_', '65536')
    monkeypatch.setattr(ctypes, 'CDLL', lambda name: libc)
    allocator.return_large_buffers()
    assert libc.calls == []


def test_a_c_library_without_mallopt_is_fine(monkeypatch):
    monkeypatch.delenv('MALLOC_MMAP_THRESHOLD_', raising=False)
    monkeypatch.setattr(ctypes, 'CDLL', lambda name: object())
    allocator.return_large_buffers()


def test_the_real_c_library_accepts_it():
    assert ctypes.CDLL(None).mallopt(-3, 1024 * 1024) == 1
