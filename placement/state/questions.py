"""The questions the in-memory state answers: a declared vocabulary.

A read of the state is ``snapshot.answer(db, fn, *args)``: ``fn(state,
*args)`` runs on this process's own state, or in the host's state
processes (``shared``), which are told the question's name and run it
on theirs.  Only a function registered here may be asked, with
``@questions.question`` where it is defined, beside the domain code it
reads (the search, the listing, the overview, the audit), never in a
handler: the state processes import the module a name points to, and
nothing of HTTP.

A question takes the state and plain values (no state objects, no
functions) and returns plain values or raises an exception that can be
pickled: either way crosses a socket.  Under the tests every answer
crosses the wire format even within one process (arguments, result and
error pickled and read back: ``wire.round_trip``), so a question that
breaks these rules fails in every test that asks it, not only where a
state process answers.
"""

import importlib
import os

_REGISTERED = {}

# Set by the test suite (tests/conftest.py), and inherited by the
# servers its tests start.
CROSS_THE_WIRE = bool(os.environ.get('PLACEMENT_TEST_CROSS_THE_WIRE'))


class UnknownQuestion(Exception):
    """A question that is not registered: asked by mistake here, or by
    a process of other code than the one answering."""

    def __init__(self, name):
        super().__init__('%s is not a registered question to the state'
                         % name)
        self.name = name

    def __reduce__(self):
        return UnknownQuestion, (self.name,)


def question(fn):
    """Register ``fn`` (a module-level function of the state and plain
    values) as a question to the state."""
    _REGISTERED[name_of(fn)] = fn
    return fn


def name_of(fn):
    """The name a question is asked by across processes."""
    return '%s:%s' % (fn.__module__, fn.__qualname__)


def checked(fn):
    """``fn``'s name, once sure it is a registered question."""
    name = name_of(fn)
    if _REGISTERED.get(name) is not fn:
        raise UnknownQuestion(name)
    return name


def lookup(name):
    """The question called ``name``, its module imported first;
    UnknownQuestion for anything else."""
    module, _sep, _qualname = name.partition(':')
    if name not in _REGISTERED and module.startswith('placement.'):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    found = _REGISTERED.get(name)
    if found is None:
        raise UnknownQuestion(name)
    return found
