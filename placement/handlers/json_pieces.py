"""Large JSON answers sent in pieces: a body made of the pieces
``placement.json_encoding`` encodes is handed to the WSGI server piece by
piece, so that its bytes are never copied whole once more.
"""

import falcon

from placement import allocator

# The media type of every answer with a body.
JSON = 'application/json'
# A body of pieces up to this size is sent joined; a larger one is sent
# piece by piece, so that it is never copied whole once more.
_JOINED_AT_MOST = 4 * 1024 * 1024


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
    server wants them); each piece is let go once sent, and the heap's
    free pages go back to the system once all are."""
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
    allocator.give_back_free_memory()
