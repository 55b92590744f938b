"""Library packages whose ``__init__`` runs only when something needs it.

oslo.middleware's package ``__init__`` imports every middleware it ships
(its tracing pulls OpenTelemetry and psutil, its basic auth bcrypt), and
its ``healthcheck`` package imports jinja2 for its detailed page.
An API process uses the modules holding the options it reads and, for
``/healthcheck``, the health check: the rest was 4.5 MB of each
process's own memory, paid once per worker when uwsgi loads the
application in every worker (kolla's ``lazy-apps``).

A deferred package sits in ``sys.modules`` with its ``__init__`` not yet
run.  Its submodules import as usual (their imports of the package find
it there).  The first read of any other name (one its ``__init__``
defines) runs the ``__init__`` in place, so code that uses the package
whole still gets it whole, only later.
"""

import importlib
import importlib.util
import sys
import threading
import types

# The packages deferred when ``placement`` is imported, parents first.
DEFERRED = ('oslo_middleware', 'oslo_middleware.healthcheck')

_lock = threading.RLock()


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs at the first read of a name it
    has not set: a submodule's name imports that submodule, anything
    else runs the ``__init__`` (``__getattr__`` is asked only for names
    not set)."""

    def __getattr__(self, name):
        with _lock:
            if type(self) is _DeferredPackage:
                if _is_submodule(self.__name__, name):
                    return importlib.import_module(self.__name__ + '.' + name)
                self.__class__ = types.ModuleType
                try:
                    self.__spec__.loader.exec_module(self)
                except BaseException:
                    # As a failed import would: the next read tries again.
                    self.__class__ = _DeferredPackage
                    raise
        return getattr(self, name)


def _is_submodule(package, name):
    if name.startswith('__'):
        return False
    return importlib.util.find_spec(package + '.' + name) is not None


def defer(name):
    """Put package ``name`` in ``sys.modules`` with its ``__init__``
    deferred, unless it is imported already or is not installed (a
    client's venv has none of the server's libraries); a subpackage only
    once its parent is there."""
    parent, _, child = name.rpartition('.')
    if name in sys.modules or (parent and parent not in sys.modules):
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    package.__class__ = _DeferredPackage
    sys.modules[name] = package
    if parent:
        setattr(sys.modules[parent], child, package)


def defer_all():
    """Defer every package of ``DEFERRED`` not imported yet."""
    for name in DEFERRED:
        defer(name)
