"""Large JSON answers: encoded a batch at a time as they are produced,
and sent in pieces.

An answer of 100,000 providers or of thousands of allocation candidates
is tens of MB of JSON, and several times that as Python objects.  The
handlers that send such answers make them lazily; here each batch is
encoded once made (so the whole answer never exists as Python objects),
and a large body is handed to the WSGI server piece by piece (so its
bytes are never copied whole once more).
"""

import itertools
import json

import falcon
import orjson

# The media type of every answer with a body.
JSON = 'application/json'


def encode_json(body):
    """``body`` as JSON bytes: by orjson, in C (an answer of thousands of
    allocation candidates took the standard library 15 ms to encode,
    orjson 1), or by the standard library for what orjson refuses:
    integers past 64 bits, such as the capacity a huge allocation ratio
    gives."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body).encode()


# Items encoded together by json_array and json_object: about 1 MB of
# allocation requests, so that a usual answer (nova asks for 1,000) is one
# call to the encoder and a huge one never exists whole as Python objects.
ENCODE_BATCH = 2000
# A body of pieces up to this size is sent joined; a larger one is sent
# piece by piece, so that it is never copied whole once more.
_JOINED_AT_MOST = 4 * 1024 * 1024


def json_array(items):
    """The JSON array of ``items`` (an iterable, consumed lazily) as a
    list of bytes-like pieces, each batch of items encoded once made."""
    return _batched(items, b'[', b']', list)


def json_object(pairs):
    """The JSON object of ``pairs`` ((key, value), consumed lazily) as a
    list of bytes-like pieces, as ``json_array``."""
    return _batched(pairs, b'{', b'}', dict)


def _batched(items, opening, closing, container):
    pieces = [opening]
    items = iter(items)
    while True:
        batch = container(itertools.islice(items, ENCODE_BATCH))
        if not batch:
            break
        if len(pieces) > 1:
            pieces.append(b',')
        # The batch without its own brackets, which continues the one
        # value: a view, not a copy.
        pieces.append(memoryview(encode_json(batch))[1:-1])
    pieces.append(closing)
    return pieces


def send_json_pieces(req, resp, pieces, status=falcon.HTTP_200):
    """Send the JSON body made of ``pieces`` (bytes-like, in order)."""
    resp.status = status
    resp.content_type = JSON
    length = sum(len(piece) for piece in pieces)
    if length <= _JOINED_AT_MOST:
        resp.data = b''.join(pieces)
        return
    resp.content_length = length
    resp.stream = _chunks(pieces)


def _chunks(pieces, size=256 * 1024):
    """``pieces`` as writes of about ``size`` bytes (bytes, as the WSGI
    server wants them); each piece is let go once sent."""
    pieces.reverse()
    waiting = []
    waiting_size = 0
    while pieces:
        piece = memoryview(pieces.pop())
        while piece:
            part = piece[:size - waiting_size]
            piece = piece[len(part):]
            waiting.append(part)
            waiting_size += len(part)
            if waiting_size >= size:
                yield b''.join(waiting)
                waiting = []
                waiting_size = 0
    if waiting:
        yield b''.join(waiting)
