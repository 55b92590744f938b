"""A worker's questions to the host's state readers (``state.shared``),
against readers played by this test: each question has a deadline, and
what a reader does (busy, silent, stuck halfway, slow but beating, of
other code, gone) decides where the worker asks next, never how long it
waits past the deadline."""

import socket
import threading
import time
import uuid

import pytest

from placement.state import questions
from placement.state import shared
from placement.state import wire


class FakeReader:
    """A reader in slot ``slot`` of ``name`` that does ``behaviour``
    with every question: 'answer', 'busy' (unless asked to wait),
    'silent', 'stall' (beats once, then nothing), 'slow' (beats for
    ``seconds``, then answers), 'busy long' (busy, and asked to wait,
    beats for ``seconds`` first) or 'other code'."""

    def __init__(self, name, slot, behaviour, seconds=0.0):
        self.behaviour = behaviour
        self.seconds = seconds
        self.asked = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(wire.address(wire.slot_name(name, slot)))
        self._listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._listener.close()

    def _accept(self):
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,),
                             daemon=True).start()

    def _serve(self, sock):
        incoming = wire.Incoming(sock)
        with sock:
            try:
                while True:
                    _kind, name, args, wait, _trace = incoming.value()
                    self.asked += 1
                    self._answer(sock, name, args, wait)
            except (EOFError, OSError):
                pass

    def _answer(self, sock, name, args, wait):
        if self.behaviour == 'silent':
            time.sleep(30)
        elif self.behaviour in ('busy', 'busy long') and not wait:
            sock.sendall(wire.BUSY)
            return
        sock.sendall(wire.BEAT)
        if self.behaviour == 'stall':
            time.sleep(30)
        elif self.behaviour in ('slow', 'busy long'):
            until = time.monotonic() + self.seconds
            while time.monotonic() < until:
                time.sleep(wire.BEAT_SECONDS)
                sock.sendall(wire.BEAT)
        if self.behaviour == 'other code':
            wire.send_answer(sock, False, questions.UnknownQuestion(name))
        else:
            wire.send_answer(sock, True, (self.behaviour, args))


@pytest.fixture
def readers():
    """``readers(*behaviours)``: a Client whose readers (slot 0 its
    own) do those."""
    made = []

    def make(*behaviours):
        name = 'placement-test-%s' % uuid.uuid4().hex
        for slot, behaviour in enumerate(behaviours):
            if behaviour is not None:
                made.append(FakeReader(name, slot, *(
                    behaviour if isinstance(behaviour, tuple)
                    else (behaviour,))))
        client = shared.Client(name, [], readers=len(behaviours))
        client.fakes = made[-len(behaviours):]
        return client

    yield make
    for fake in made:
        fake.close()


def _timed(client, *args):
    began = time.monotonic()
    try:
        answer = client.call('q', args)
    except shared.Unreachable as error:
        answer = error
    return answer, time.monotonic() - began


def test_a_busy_reader_sends_the_question_to_the_next_at_once(readers):
    client = readers('busy', 'answer')
    answer, seconds = _timed(client, 1)
    assert answer == ('answer', (1,))
    assert seconds < 0.2


def test_every_reader_busy_the_worker_s_own_takes_it_next(readers):
    client = readers('busy', 'busy')
    answer, _seconds = _timed(client, 2)
    assert answer == ('busy', (2,))
    assert [fake.asked for fake in client.fakes] == [2, 1]


def test_readers_busy_at_length_are_waited_for_while_they_beat(readers):
    """Every reader at work (full listings, on a host with no core to
    spare): the question waits its turn past the deadline rather than
    have the worker read a state of its own."""
    client = readers(('busy long', shared.DEADLINE + 0.5), 'busy')
    answer, seconds = _timed(client, 12)
    assert answer == ('busy long', (12,))
    assert seconds >= shared.DEADLINE + 0.5


def test_a_silent_reader_is_left_for_the_next_and_then_left_alone(
        readers):
    client = readers('silent', 'answer')
    answer, seconds = _timed(client, 3)
    assert answer == ('answer', (3,))
    assert wire.SILENT_SECONDS <= seconds < wire.SILENT_SECONDS + 0.3
    # Left alone for a while: the next question goes straight on.
    answer, seconds = _timed(client, 4)
    assert answer == ('answer', (4,))
    assert seconds < 0.2
    assert client.fakes[0].asked == 1


def test_a_reader_stuck_halfway_is_left_for_the_next(readers):
    client = readers('stall', 'answer')
    answer, seconds = _timed(client, 5)
    assert answer == ('answer', (5,))
    assert seconds < wire.SILENT_SECONDS + 0.3


def test_a_slow_answer_that_beats_is_waited_for_past_the_deadline(
        readers):
    """The deadline is for a reader to start: one that works and says so
    is not interrupted (a listing of every provider takes seconds)."""
    client = readers(('slow', shared.DEADLINE + 0.5), 'answer')
    answer, seconds = _timed(client, 6)
    assert answer == ('slow', (6,))
    assert seconds >= shared.DEADLINE + 0.5
    assert client.fakes[1].asked == 0


def test_every_reader_silent_gives_up_at_the_deadline(readers):
    client = readers('silent', 'silent')
    answer, seconds = _timed(client, 7)
    assert isinstance(answer, shared.Unreachable)
    assert answer.reason == 'unanswered'
    assert seconds < shared.DEADLINE + 0.3
    # Both left alone: the next gives up at once.
    answer, seconds = _timed(client, 8)
    assert isinstance(answer, shared.Unreachable)
    assert seconds < 0.1


def test_readers_of_other_code_are_not_answers(readers):
    client = readers('other code', 'answer')
    answer, _seconds = _timed(client, 9)
    assert isinstance(answer, shared.Unreachable)
    assert answer.reason == 'other_code'


def test_an_empty_slot_is_skipped_and_the_keeper_looked_at(
        readers, monkeypatch):
    started = []
    monkeypatch.setattr(shared.Client, '_start',
                        lambda client: started.append(client.name))
    client = readers(None, 'answer')
    answer, seconds = _timed(client, 10)
    assert answer == ('answer', (10,))
    assert seconds < 0.3
    # No keeper listens: one is started.
    assert started == [client.name]


def test_a_keeper_silent_too_long_is_replaced(readers, monkeypatch):
    killed, started = [], []
    monkeypatch.setattr(shared, '_kill', killed.append)
    monkeypatch.setattr(shared.Client, '_start',
                        lambda client: started.append(client.name))
    monkeypatch.setattr(shared, '_KEEPER_SILENT_SECONDS', 0.5)
    monkeypatch.setattr(shared, '_KEEPER_CHECK_EVERY', 0.0)
    client = readers(None, 'answer')
    keeper = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    keeper.bind(wire.address(client.name))
    keeper.listen(16)   # accepts, and never answers a ping
    try:
        deadline = time.monotonic() + 5
        while not started and time.monotonic() < deadline:
            assert _timed(client, 11)[0] == ('answer', (11,))
    finally:
        keeper.close()
    assert started == [client.name]
    assert killed and killed[0] > 0


def test_the_socket_name_changes_with_the_code(monkeypatch, conf):
    before = shared.socket_name(conf)
    monkeypatch.setattr(shared, 'code_digest', lambda: 'changed in place')
    assert shared.socket_name(conf) != before
