"""The host's store of kept answers (``placement.state.answer_store``):
what it keeps, what it refuses, and what several processes see of it."""

import fcntl
import multiprocessing
import os

import pytest

from placement.state import answer_store


def test_a_record_is_found_by_its_key_only():
    store = answer_store.private(size=1 << 20)
    store.put(b'one', b'first')
    store.put(b'two', b'second')
    assert store.get(b'one') == b'first'
    assert store.get(b'two') == b'second'
    assert store.get(b'three') is None
    store.put(b'one', b'again')
    assert store.get(b'one') == b'again'


def test_a_full_store_keeps_what_it_has_then_starts_a_new_round(
        monkeypatch):
    store = answer_store.private(size=1 << 16)
    used, room = store.used()
    store.put(b'big', b'x' * (room - used - 100))
    store.put(b'late', b'y' * 200)
    assert store.get(b'big') is not None
    assert store.get(b'late') is None      # no room: not kept
    monkeypatch.setattr(answer_store, 'FULL_SECONDS', 0.0)
    store.put(b'late', b'y' * 200)
    assert store.get(b'late') == b'y' * 200
    assert store.get(b'big') is None       # a new round emptied it


def test_a_record_too_large_is_not_kept():
    store = answer_store.private(size=1 << 24)
    store.put(b'huge', b'x' * answer_store.LARGEST)
    assert store.get(b'huge') is None
    assert store.used()[0] == 0


def test_a_torn_record_is_a_miss():
    """A record changed under its slot (a writer killed halfway, or a new
    round writing over it) fails its CRC, and is not given."""
    store = answer_store.private(size=1 << 20)
    store.put(b'key', b'answer')
    layout = store._layout
    store._map[layout.arena_at + 20] ^= 0xff
    assert store.get(b'key') is None


def test_a_torn_slot_is_a_miss():
    store = answer_store.private(size=1 << 20)
    store.put(b'key', b'answer')
    slot = next(slot for slot in store._probes(answer_store._hashed(
        answer_store._digest(b'key')))
        if answer_store._SLOT.unpack_from(
            store._map, store._layout.slots_at
            + slot * answer_store._SLOT.size)[1] == store._round())
    at = store._layout.slots_at + slot * answer_store._SLOT.size
    hashed, round_, offset, length, crc = answer_store._SLOT.unpack_from(
        store._map, at)
    answer_store._SLOT.pack_into(store._map, at, hashed, round_, offset,
                                 length + 1, crc)
    assert store.get(b'key') is None
    answer_store._SLOT.pack_into(store._map, at, hashed, round_,
                                 store._layout.arena, length, crc)
    assert store.get(b'key') is None


def _put_in_child(directory, key, record, done):
    store = answer_store.for_host('test', size=1 << 20, directory=directory)
    assert store.shared
    store.put(key, record)
    done.set()


def test_processes_of_one_name_share_one_store(tmp_path):
    directory = str(tmp_path)
    store = answer_store.for_host('test', size=1 << 20, directory=directory)
    assert store.shared
    done = multiprocessing.get_context('spawn').Event()
    child = multiprocessing.get_context('spawn').Process(
        target=_put_in_child, args=(directory, b'key', b'from a child', done))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert store.get(b'key') == b'from a child'
    assert os.listdir(directory) == [answer_store._PREFIX + 'test']


def test_a_writer_holding_the_lock_stops_only_new_records(tmp_path):
    directory = str(tmp_path)
    store = answer_store.for_host('test', size=1 << 20, directory=directory)
    store.put(b'kept', b'before')
    path = os.path.join(directory, answer_store._PREFIX + 'test')
    locked, locked_told = os.pipe()
    release, release_told = os.pipe()
    pid = os.fork()
    if pid == 0:    # another process, holding the writers' lock
        fd = os.open(path, os.O_RDWR)
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
        os.write(locked_told, b'x')
        os.read(release, 1)
        os._exit(0)
    try:
        assert os.read(locked, 1) == b'x'
        store.put(b'new', b'while locked')
        assert store.get(b'new') is None
        assert store.get(b'kept') == b'before'
    finally:
        os.write(release_told, b'x')
        os.waitpid(pid, 0)
    store.put(b'new', b'after')
    assert store.get(b'new') == b'after'


def test_stores_no_process_maps_are_removed(tmp_path):
    directory = str(tmp_path)
    old = answer_store.for_host('old', size=1 << 20, directory=directory)
    held = answer_store.for_host('held', size=1 << 20, directory=directory)
    old.close()
    answer_store.for_host('new', size=1 << 20, directory=directory)
    assert sorted(os.listdir(directory)) == [
        answer_store._PREFIX + 'held', answer_store._PREFIX + 'new']
    held.close()


def test_the_last_process_to_close_a_store_removes_it(tmp_path):
    directory = str(tmp_path)
    first = answer_store.for_host('test', size=1 << 20, directory=directory)
    second = answer_store.for_host('test', size=1 << 20, directory=directory)
    first.close()
    assert os.listdir(directory) == [answer_store._PREFIX + 'test']
    second.close()
    assert os.listdir(directory) == []


def test_a_store_of_another_layout_is_not_shared(tmp_path):
    directory = str(tmp_path)
    answer_store.for_host('test', size=1 << 20, directory=directory)
    other = answer_store.for_host('test', size=1 << 21, directory=directory)
    assert not other.shared
    other.put(b'key', b'answer')
    assert other.get(b'key') == b'answer'


def test_no_shared_memory_filesystem_gives_a_private_store(tmp_path):
    store = answer_store.for_host('test', size=1 << 20,
                                  directory=str(tmp_path / 'missing'))
    assert not store.shared
    store.put(b'key', b'answer')
    assert store.get(b'key') == b'answer'


@pytest.mark.parametrize('size', [1 << 20, answer_store.SIZE])
def test_the_store_is_its_size_whatever_it_keeps(tmp_path, size):
    directory = str(tmp_path)
    store = answer_store.for_host('test', size=size, directory=directory)
    for number in range(2000):
        store.put(b'%d' % number, b'x' * 3000)
    path = os.path.join(directory, answer_store._PREFIX + 'test')
    assert os.stat(path).st_size == size
    used, room = store.used()
    assert used <= room < size
