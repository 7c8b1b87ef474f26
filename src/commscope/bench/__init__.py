"""Drivers for the native benchmarks: build, launch, and land results in a run directory.

Importing the package imports every driver, so each registers its table schemas
(``commscope.runs.register_table``) before any run directory is read.
"""

from . import bsp, hvpingpong, mtmatch, multirate, partitioned, pingpong, threads  # noqa: F401
