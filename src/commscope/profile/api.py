"""``commscope.open(run)``: a profile run as pandas DataFrames, for notebooks and scripts.

In the manner of Hatchet and Thicket, one object holds the run's tables as DataFrames
and its metadata::

    import commscope
    p = commscope.open("runs/20261125T101500Z-profile")
    p.meta["parameters"]                    # meta.json, as a dict
    p.functions.groupby("function")[["calls", "bytes"]].sum()
    p.peers.pivot(index="rank", columns="peer", values="bytes_sent")
    p.trace                                 # one row per trace record (profile --trace), or None
    p.messages()                            # every send with its matching receive

Each table is read the first time it is used and kept.  A table the run does not have
is None: ``trace`` without ``--trace``, ``threads`` without ``--ompt``, ``files``
without MPI-IO, ``callsites`` without ``--callsites`` (one row per rank, MPI function
and call site: file, line, caller, calls, bytes, time_s; docs/profile.md).  The
columns are those of docs/profile.md; ``trace``'s are those of
:func:`commscope.collect.trace.read_trace`.
"""

from __future__ import annotations

from pathlib import Path

from ..runs import open_run

#: The Parquet tables of a profile run (docs/profile.md), each an attribute.
TABLES = (
    "functions",
    "peers",
    "counters",
    "snapshots",
    "communicators",
    "ranks",
    "size_bins",
    "collective_bins",
    "pvars",
    "files",
    "threads",
    "callsites",
)


class Profile:
    """An open profile run: its tables as DataFrame attributes (None when absent), ``meta``."""

    def __init__(self, run):
        from .export import require_profile

        require_profile(run)
        self.run = run
        self.path = Path(run.path)
        self.meta = run.meta
        self._cache = {}
        self._names = set(run.tables())

    def __repr__(self):
        have = [t for t in TABLES if t in self._names]
        return (
            f"commscope.Profile({str(self.path)!r}, ranks={self.meta.get('parameters', {}).get('ranks')}, "
            f"tables={have}, trace={self.has_trace})"
        )

    def tables(self):
        """Names of the tables this run has."""
        return sorted(self._names)

    def table(self, name):
        """Table ``name`` as a DataFrame, or None when the run does not have it."""
        if name not in self._cache:
            self._cache[name] = self.run.table(name) if name in self._names else None
        return self._cache[name]

    def __getattr__(self, name):
        if name in TABLES:
            return self.table(name)
        raise AttributeError(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(TABLES))

    # ---- the event trace ---------------------------------------------------------------
    @property
    def has_trace(self):
        from ..collect.trace import trace_files

        return bool(trace_files(self.run.raw_dir))

    def _trace(self):
        if "_trace" not in self._cache:
            from .export import load_trace

            self._cache["_trace"] = load_trace(self.run)
        return self._cache["_trace"]

    @property
    def trace(self):
        """Every trace record (rank, thread, event, time_begin_s, time_end_s, request,
        bytes, peer, peer_world, tag, comm, ..., and its call site: site, callsite,
        callsite_file, callsite_line, caller, callsite_reason), or None without
        ``profile --trace``.  Times are on rank 0's clock (docs/profile.md, "Clock
        alignment")."""
        t = self._trace()
        return None if t is None else t.events

    def calls(self):
        """One row per traced call (records of a thread with one entry time): call, rank,
        thread, name, time_begin_s, time_end_s, records, callsite; None without a trace."""
        t = self._trace()
        if t is None:
            return None
        from .export import calls_table

        return calls_table(t).drop(columns=["t_begin_ns", "t_end_ns"])

    def messages(self):
        """Every send with its receive (rows of ``trace``; -1: no partner), matched by
        source, destination, communicator and tag in order; None without a trace."""
        t = self._trace()
        if t is None:
            return None
        from .export import match_messages

        return match_messages(t)


def open(run_path):  # noqa: A001 - the API's name, as hatchet/thicket readers
    """Open the profile run directory ``run_path``; see :class:`Profile`."""
    return Profile(open_run(run_path))
