"""Large JSON bodies encoded a batch at a time
(``placement.json_encoding``) and sent in pieces
(``placement.handlers.json_pieces``)."""

import json

import pytest

from placement import json_encoding
from placement.handlers import json_pieces


@pytest.fixture(autouse=True)
def batches_of_two(monkeypatch):
    monkeypatch.setattr(json_encoding, 'ENCODE_BATCH', 2)


@pytest.mark.parametrize('count', [0, 1, 2, 3, 7])
def test_an_array_and_an_object_in_batches_are_the_whole(count):
    items = [{'n': n, 'big': 2 ** 70 if n == 1 else n} for n in range(count)]
    assert json.loads(b''.join(json_encoding.json_array(iter(items)))) == items
    pairs = {str(n): item for n, item in enumerate(items)}
    assert json.loads(b''.join(json_encoding.json_object(pairs.items()))) == pairs


def test_items_are_consumed_a_batch_at_a_time():
    """The next batch is not asked for before the last one is encoded:
    an answer is never whole as Python objects."""
    made = []

    def items():
        for n in range(5):
            made.append(n)
            yield {'n': n, 'made_before_me': len(made)}

    body = json.loads(b''.join(json_encoding.json_array(items())))
    assert [item['made_before_me'] for item in body] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize('size', [1, 5, 64])
def test_chunks_are_bytes_of_the_size_asked_and_the_same_body(size):
    pieces = json_encoding.json_array({'n': n} for n in range(9))
    whole = b''.join(pieces)
    chunks = list(json_pieces._chunks(list(pieces), size))
    assert all(type(chunk) is bytes for chunk in chunks)
    assert all(len(chunk) == size for chunk in chunks[:-1])
    assert 0 < len(chunks[-1]) <= size
    assert b''.join(chunks) == whole


def test_the_heap_is_given_back_once_a_body_in_pieces_is_sent(monkeypatch):
    """A large answer's free heap pages go back to the system once its
    last chunk is taken (glibc keeps them otherwise: a uwsgi worker
    stayed 33-40 MB larger after a full listing at 100,000 providers)."""
    given_back = []
    monkeypatch.setattr(json_pieces.allocator, 'give_back_free_memory',
                        lambda: given_back.append(True))
    chunks = json_pieces._chunks(list(json_encoding.json_array(
        {'n': n} for n in range(9))), 8)
    for _ in range(3):
        next(chunks)
    assert not given_back
    list(chunks)
    assert given_back == [True]
