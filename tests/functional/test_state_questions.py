"""The questions to the state, a declared vocabulary (``state.questions``):
only registered questions are asked, and under the tests every answer
crosses the wire format, arguments, result and error, even within one
process."""

import pytest

from placement.candidates import filters
from placement.state import questions
from placement.state import snapshot

pytestmark = pytest.mark.backends('sqlite')


def _count(state):
    return len(state.providers)


@questions.question
def _unpicklable(state):
    return lambda: len(state.providers)


@questions.question
def _raising(state, name):
    raise filters.UnknownTrait('No such trait(s): %s.' % name)


@questions.question
def _returning_state(state):
    return state


def test_the_tests_cross_the_wire():
    assert questions.CROSS_THE_WIRE


def test_an_unregistered_function_is_refused(db):
    with pytest.raises(questions.UnknownQuestion, match='_count'):
        snapshot.answer(db, _count)


def test_an_answer_that_cannot_cross_fails_in_process_too(db):
    with pytest.raises(Exception, match='pickle'):
        snapshot.answer(db, _unpicklable)


def test_an_error_crosses_as_itself(db):
    with pytest.raises(filters.UnknownTrait, match='CUSTOM_X'):
        snapshot.answer(db, _raising, 'CUSTOM_X')


def test_the_state_itself_is_no_answer(db):
    """Its own objects cannot cross a socket: a question returning them
    fails in process as it would through a reader."""
    with pytest.raises((AttributeError, TypeError)):
        snapshot.answer(db, _returning_state)


def test_a_question_is_found_by_its_name_and_nothing_else_is():
    from placement.overview import summary
    assert questions.lookup('placement.overview.summary:summary') is (
        summary.summary)
    for name in ('placement.overview.summary:bins', 'os:system',
                 'placement.nowhere:anything'):
        with pytest.raises(questions.UnknownQuestion):
            questions.lookup(name)
