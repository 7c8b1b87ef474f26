"""The native benchmarks, one descriptor module each (``<name>.py`` defining ``BENCHMARK``).

Discovered, not listed: a new module here is a new benchmark for the CLI, the C build,
the docs and the run-directory checks (commscope.kinds).
"""

import importlib
import pkgutil

from .spec import Benchmark, Check, Option, Points, Table  # noqa: F401 (the descriptor API)

_NOT_BENCHMARKS = {"spec", "cgen", "docs", "schema"}


def _discover():
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in _NOT_BENCHMARKS or info.name.startswith("_"):
            continue
        bench = importlib.import_module(f"{__name__}.{info.name}").BENCHMARK
        found[bench.name] = bench
    return found


#: name -> Benchmark, in name order.
BENCHMARKS = _discover()
