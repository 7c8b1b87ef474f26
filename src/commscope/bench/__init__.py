"""Drivers for the native benchmarks: build, launch, and land results in a run directory.

A benchmark is declared by its descriptor (commscope.benchspec); a driver module here
(``<name>.py`` with ``run_<name>``) adds what the descriptor cannot say (post-processing,
checks that need the machine).  Importing the package imports every driver, so each
registers how it resumes (``driver.register_resume``); ``RUNNERS`` maps every benchmark to
its run function.
"""

import importlib
import pkgutil
from functools import partial

from ..benchspec import BENCHMARKS
from .driver import run_described

_DRIVERS = {m.name for m in pkgutil.iter_modules(__path__)}

#: benchmark name -> run function(**parameters, **launch options)
RUNNERS = {
    name: getattr(importlib.import_module(f"{__name__}.{name}"), f"run_{name}")
    if name in _DRIVERS
    else partial(run_described, name)
    for name in BENCHMARKS
}
#: benchmark name -> its driver's ``show_<name>(run, quiet, **output options)``: what
#: ``commscope bench <name>`` prints when it is more than the run directory
SHOWERS = {
    name: show
    for name in BENCHMARKS
    if name in _DRIVERS
    for show in [getattr(importlib.import_module(f"{__name__}.{name}"), f"show_{name}", None)]
    if show is not None
}
for _name in _DRIVERS - {"driver"} - set(BENCHMARKS):  # drivers not yet described
    importlib.import_module(f"{__name__}.{_name}")
