"""Before and after: did a change help? (`commscope compare`, docs/compare.md)

* :mod:`.core`: two sides, each one run or repeats of one configuration, compared on
  what they share: run time, time in MPI per rank, per function, per call site,
  counters, the diagnosis' findings (profile runs), or a benchmark's main figure per
  point; the difference, the ratio and whether it is beyond the run-to-run noise
  (:mod:`.noise`);
* :mod:`.gate`: ``--fail-if 'runtime > +5%'``, the CI gate;
* :mod:`.figures`: the figures `make bench` keeps (scripts/bench.py), compared with
  the previous pass's (``compare --bench``);
* :mod:`.text`: the terminal view; the HTML view is ``report.sections.comparison``.

It reads runs and diagnoses them, so it sits above :mod:`commscope.diagnose` and below
the report (.importlinter).
"""
