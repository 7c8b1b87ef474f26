"""commscope: measure, instrument and model MPI communication in multithreaded codes.

Four parts, data flowing one way (docs/architecture.md):

* measure: :mod:`commscope.bench` (drivers of the C benchmarks in native/bench);
* instrument: :mod:`commscope.profile` (the PMPI counter library in native/profiler,
  OMPT thread timings, the event trace);
* model and predict: :mod:`commscope.models`, :mod:`commscope.stats`,
  :mod:`commscope.matching`, :mod:`commscope.predict`, :mod:`commscope.machine_fit`;
* look: :mod:`commscope.report` and the CLI (:mod:`commscope.cli`, :mod:`commscope.commands`).

Every part reads and writes run directories (:mod:`commscope.runs`).

``commscope.open(run)`` opens a profile run as pandas DataFrames
(:mod:`commscope.profile.api`, docs/export.md).
"""

__version__ = "0.1.0"


def __getattr__(name):
    """``commscope.open``, imported on first use: ``import commscope`` stays cheap."""
    if name == "open":
        import importlib

        return importlib.import_module("commscope.profile.api").open
    raise AttributeError(f"module 'commscope' has no attribute {name!r}")
