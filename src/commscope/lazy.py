"""Heavy libraries (numpy, pandas, scipy, matplotlib) imported on first use.

``commscope --help`` and the analytic models must answer at once; importing numpy,
pandas, scipy and matplotlib costs seconds on a busy node.  Modules write
``pd = lazy("pandas")`` instead of ``import pandas as pd``: the name is bound at once
and the library is imported the first time one of its attributes is used.
``scripts/bench_startup.py`` prints what this saves and ``tests/test_startup.py``
checks that building the command line imports none of them.
"""

import importlib
import types


class _LazyModule(types.ModuleType):
    """Stands for a module until an attribute is read; then imports it and caches."""

    def __getattr__(self, attr):
        module = importlib.import_module(self.__name__)
        value = getattr(module, attr)
        setattr(self, attr, value)  # later reads of this name skip __getattr__
        return value

    def __repr__(self):
        return f"<lazy module {self.__name__!r}>"


def lazy(name):
    """A stand-in for module ``name`` that imports it on first attribute access."""
    return _LazyModule(name)
