"""Drivers for the native benchmarks: build, launch, and land results in a run directory.

Importing the package imports every driver, so each registers how it resumes
(``driver.register_resume``).  What their run directories hold is in commscope.kinds.
"""

from . import bsp, hvpingpong, mtmatch, multirate, partitioned, pingpong, threads  # noqa: F401
