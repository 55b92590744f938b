"""Large JSON answers encoded a batch at a time as they are produced.

An answer of 100,000 providers or of thousands of allocation candidates
is tens of MB of JSON, and several times that as Python objects.  The
questions to the state that make such answers make them lazily; here
each batch is encoded once made, so the whole answer never exists as
Python objects, and the answer is a list of pieces of JSON (sent as they
are by ``handlers.json_pieces``, and across a socket by ``state.wire``).
"""

import itertools
import json

import orjson

# Items encoded together by json_array and json_object: about 1 MB of
# allocation requests, so that a usual answer (nova asks for 1,000) is one
# call to the encoder and a huge one never exists whole as Python objects.
ENCODE_BATCH = 2000


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
