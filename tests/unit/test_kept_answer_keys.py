"""Keys of kept answers are the same bytes in every process
(``kept_answers._key``): the host's store finds an answer by them."""

import subprocess
import sys

import pytest

from placement.state import kept_answers
from placement.state import listing

SHELF = kept_answers.Shelf('test')


def test_a_set_is_named_by_its_sorted_members():
    one = kept_answers._key(SHELF, (frozenset(['b', 'a', 'c']),))
    other = kept_answers._key(SHELF, (frozenset(['c', 'b', 'a']),))
    assert one == other
    assert kept_answers._key(SHELF, (frozenset(['a']),)) != one


def test_a_key_is_the_same_in_another_process():
    """Another interpreter (another string hash seed, other addresses)
    makes the same bytes of a listing's key."""
    program = (
        'from placement.state import kept_answers, listing\n'
        'key = (("u", (frozenset({"x", "y", "z"}),)), listing.listing_body,'
        ' 1.5, None, True, b"b")\n'
        'print(kept_answers._key(kept_answers.Shelf("test"), key).hex())\n')
    made = {subprocess.run([sys.executable, '-c', program], check=True,
                           capture_output=True, text=True).stdout.strip()
            for _ in range(3)}
    key = (('u', (frozenset({'z', 'y', 'x'}),)), listing.listing_body, 1.5,
           None, True, b'b')
    assert made == {kept_answers._key(SHELF, key).hex()}


def test_a_closure_cannot_be_part_of_a_key():
    def shape():
        return None
    with pytest.raises(TypeError):
        kept_answers._key(SHELF, ('uuid', shape))


def test_an_object_of_no_plain_kind_cannot_be_part_of_a_key():
    with pytest.raises(TypeError):
        kept_answers._key(SHELF, (object(),))


def test_a_large_answer_is_kept_compressed_and_given_whole():
    body = b'{"allocations":{%s}}' % b','.join(
        b'"%032d":{"resources":{"VCPU":2,"MEMORY_MB":4096}}' % number
        for number in range(20))
    value = ((7, 'epoch'), (('provider', 1),), (body, None))
    record = kept_answers._record(value)
    assert record[:1] == b'z' and len(record) < len(body) / 2
    assert kept_answers._value(record) == value
    small = ((7, 'epoch'), (('provider', 1),), (b'{}', None))
    assert kept_answers._record(small)[:1] == b'p'
    assert kept_answers._value(kept_answers._record(small)) == small
