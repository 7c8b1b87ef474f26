"""Is a profile's trace whole?  The check every reader of the trace makes first
(docs/robustness.md, "A whole trace, or a word").

What the run says it wrote, against what is there:

* every (rank, thread) whose ``trace_records`` counter (counters.parquet) is above 0 has
  its ``raw/trace.<rank>.<thread>.bin`` when the run was traced (``parameters.trace``);
* each file holds exactly that many records (CPU records count, as the profiler counts
  them: cs_prof_trace.c), no record cut short;
* every rank that reached MPI_Finalize is listed in its node's
  ``raw/callsites.<node>.jsonl``, whose last line is whole;
* (once the trace is read and matched, :func:`partners`) every send has its receive in the trace,
  or the ones without are counted;
* ``threads.parquet`` of ``profile --ompt`` holds the thread arrivals its conversion
  wrote (meta.json ``profile.ompt.samples``): without them the thread imbalance of every
  rank would be lost without a word.

A run whose ranks all reached MPI_Finalize and whose status is complete has no reason
for a gap: one is damage, an :class:`~commscope.errors.InputError` naming the file, the
rank and what is missing (exit 2).  In a run that was interrupted, or whose ranks did
not all finalize, the readers go on: :class:`Completeness` says which ranks and how
much is missing, one ``commscope: warning:`` line says it, and the diagnosis puts it in
its headline and marks every finding the gap touches (:mod:`commscope.diagnose.damage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, warn
from ..lazy import lazy

np = lazy("numpy")

HEADER_BYTES = 64
RECORD_BYTES = {1: 48, 2: 48, 3: 56, 4: 56}


@dataclass
class Gap:
    """One thing missing: ``rank`` (and ``thread``), the ``file``, what, and how many
    records (None: not known).  A table of every rank has ``rank`` None and the ranks
    it leaves without data in ``touches``."""

    rank: int | None
    file: str
    what: str
    thread: int | None = None
    records: int | None = None
    touches: list = field(default_factory=list)

    def who(self):
        """``rank 1 thread 2``, or None for a table of every rank."""
        if self.rank is None:
            return None
        return f"rank {self.rank}" + (f" thread {self.thread}" if self.thread is not None else "")

    def text(self):
        return f"{self.file}: " + (f"{self.who()}: " if self.rank is not None else "") + self.what


@dataclass
class Completeness:
    run: str
    traced: bool
    whole_run: bool  # status complete and every rank finalized
    gaps: list = field(default_factory=list)
    counted: int | None = None  # records the counters count over every rank
    #: sends and receives without a partner in the trace, and their ranks
    unmatched: int = 0
    unmatched_ranks: list = field(default_factory=list)
    not_finalized: list = field(default_factory=list)
    refused: bool = False  # checked with refuse=True (a whole run with a gap raised)

    @property
    def ranks(self):
        """Ranks the gaps (missing records, call sites, partners, an end, a table) touch."""
        return sorted(set(self._trace_ranks) | {r for g in self.gaps for r in g.touches})

    @property
    def _trace_ranks(self):
        return sorted(
            {g.rank for g in self._trace_gaps} | set(self.unmatched_ranks) | set(self.not_finalized)
        )

    @property
    def _trace_gaps(self):
        return [g for g in self.gaps if g.rank is not None]

    @property
    def _table_gaps(self):
        return [g for g in self.gaps if g.rank is None]

    @property
    def missing_records(self):
        known = [g.records for g in self.gaps if g.records]
        return sum(known) if known else 0

    @property
    def damaged(self):
        return bool(self.gaps or self.unmatched)

    def summary(self):
        """One sentence: which ranks, how much of the trace is missing, and where (and
        each table whose rows are gone)."""
        parts = []
        gaps = self._trace_gaps
        if gaps:
            n = self.missing_records
            how = (
                f"{n} of {self.counted} trace records missing"
                if n and self.counted
                else "records missing"
            )
            first = "; ".join(g.text() for g in gaps[:3])
            more = f"; and {len(gaps) - 3} more" if len(gaps) > 3 else ""
            parts.append(f"{how} ({first}{more})")
        if self.unmatched:
            parts.append(
                f"{self.unmatched} sends or receives of {_ranks(self.unmatched_ranks)} have no "
                "partner in the trace"
            )
        if self.not_finalized:
            parts.append(
                f"{_ranks(self.not_finalized)} did not reach MPI_Finalize (their traces end early)"
            )
        return self._join(parts, "; ", lambda g: g.text())

    def _join(self, parts, sep, table_text):
        """The trace's sentence of ``parts``, then each table gap's ``table_text``."""
        out = (
            [f"the trace of {_ranks(self._trace_ranks)} is incomplete: " + sep.join(parts)]
            if parts
            else []
        )
        return "; ".join(out + [table_text(g) for g in self._table_gaps])

    def short(self):
        """The headline's words: which ranks, how much is missing."""
        parts = []
        n = self.missing_records
        gaps = self._trace_gaps
        if gaps:
            files = len({g.file for g in gaps})
            parts.append(
                (f"{n} of its {self.counted} records missing" if n and self.counted else "gaps")
                + f" ({files} file{'s' if files > 1 else ''}, see the notes)"
            )
        if self.unmatched:
            parts.append(f"{self.unmatched} sends or receives without a partner")
        if self.not_finalized:
            parts.append(f"{_ranks(self.not_finalized)} stopped before MPI_Finalize")
        return self._join(parts, ", ", lambda g: f"{g.file} {g.what.split(':')[0]}")

    def to_dict(self):
        return {
            "ranks": self.ranks,
            "missing_records": self.missing_records or None,
            "counted_records": self.counted,
            "unmatched_messages": self.unmatched,
            "gaps": [
                {"file": g.file, "rank": g.rank, "thread": g.thread, "what": g.what}
                for g in self.gaps
            ],
            "summary": self.summary(),
            "headline": self.short(),
        }


def _ranks(ranks):
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 6:
        return f"{len(ranks)} ranks ({ranks[0]}, {ranks[1]}, ... {ranks[-1]})"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _profile_ranks(meta):
    p = meta.get("profile") if isinstance(meta.get("profile"), dict) else {}
    r = p.get("ranks") if isinstance(p.get("ranks"), dict) else {}
    return r


def whole_run(run):
    """The run is complete and every rank reached MPI_Finalize (meta.json)."""
    r = _profile_ranks(run.meta)
    return (
        run.status == "complete"
        and not r.get("not_finalized")
        and not r.get("not_finalized_count")
        and not r.get("lost_ranks")
        and not r.get("missing_count")
    )


def _counts(run):
    """{(rank, thread): (records, dropped)} of the trace_records counters, or None
    when the run has no counters table with them."""
    if "counters" not in run.tables():
        return None
    c = run.table("counters")
    c = c[c["counter"].isin(["trace_records", "trace_records_dropped"])]
    if not len(c):
        return None
    source = run.table_file("counters")
    values = c["value"].to_numpy(np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.floor(values)) | (values > 2**62)
    if bad.any():
        row = c.iloc[int(np.argmax(bad))]
        raise InputError(
            source,
            "value",
            f"{row['counter']} of rank {row['rank']} thread {row['thread']} is "
            f"{row['value']}: a count of records is a whole number >= 0",
        )
    out = {}
    for (rank, thread, name), v in zip(
        zip(c["rank"].astype(int), c["thread"].astype(int), c["counter"]), values
    ):
        rec, drop = out.get((rank, thread), (0, 0))
        if name == "trace_records":
            rec += int(v)
        else:
            drop += int(v)
        out[(rank, thread)] = (rec, drop)
    return out


def _records_in(path):
    """(whole records, bytes of a cut last record) of a trace file, or None when its
    header cannot say (the reader names that)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return None
    if len(head) < 16 or head[:8] != b"CSTRACE1" or size < HEADER_BYTES:
        return None
    version = int.from_bytes(head[8:12], "little")
    rec = RECORD_BYTES.get(version)
    if rec is None:
        return None
    return divmod(size - HEADER_BYTES, rec)


#: The files every rank appends its line to at MPI_Finalize (a whole run's list each
#: of its ranks, one whole line each): what they hold, for an error.
FINALIZE_FILES = {
    "callsites": "call sites",
    "clocks": "clock offsets",
    "cpu": "CPU times",
}


def _ranks_of(path, data):
    """Ranks named by the whole lines of a JSON-lines file; None when a line is not a
    JSON object with a rank (the file's own reader names that)."""
    import json

    out = set()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            return None
        if not isinstance(rec, dict) or not _whole(rec.get("rank")):
            return None
        out.add(rec["rank"])
    return out


def _finalize_file_gaps(run, gaps, traced):
    """Every finalized rank listed in its node's callsites, clocks and cpu files (each
    family the run has; callsites whenever it was traced), whose last line is whole."""
    if "ranks" not in run.tables():
        return
    ranks = run.table("ranks")
    if not {"rank", "node"} <= set(ranks.columns):
        return
    for family, what in FINALIZE_FILES.items():
        files = {
            p.name[len(family) + 1 : -len(".jsonl")]: p
            for p in sorted(run.raw_dir.glob(f"{family}.*.jsonl"))
        }
        if not files and not (family == "callsites" and traced):
            continue  # not measured in this run
        for node, g in ranks.groupby("node"):
            want = sorted(int(r) for r in g["rank"])
            path = files.get(str(node))
            name = f"raw/{family}.{node}.jsonl"
            if path is None:
                gaps += [Gap(r, name, f"missing: the rank's {what} are not listed") for r in want]
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue  # the reader names it
            if data and not data.endswith(b"\n"):
                cut = len(data) - data.rfind(b"\n") - 1
                gaps.append(
                    Gap(
                        want[0] if want else 0,
                        name,
                        f"cut short: its last line ({cut} bytes) has no end",
                    )
                )
                data = data[: data.rfind(b"\n") + 1]
            listed = _ranks_of(path, data)
            if listed is None:
                continue
            gaps += [
                Gap(r, name, f"not listed: the rank reached MPI_Finalize, its {what} are gone")
                for r in want
                if r not in listed
            ]


def _thread_timing_gaps(run, gaps):
    """``threads.parquet`` of ``profile --ompt`` holds the rows its conversion wrote
    (meta.json ``profile.ompt.samples``); fewer: every rank's thread timings are gone."""
    prof = run.meta.get("profile") if isinstance(run.meta.get("profile"), dict) else {}
    ompt = prof.get("ompt") if isinstance(prof.get("ompt"), dict) else {}
    samples = ompt.get("samples")
    if not _whole(samples) or samples <= 0 or "threads" not in run.tables():
        return
    have = len(run.table("threads"))
    if have >= samples:
        return
    ranks = run.table("ranks") if "ranks" in run.tables() else None
    gaps.append(
        Gap(
            None,
            "threads.parquet",
            f"holds {have} of the {samples} thread arrivals the OMPT tool recorded "
            "(meta.json profile.ompt.samples): the thread imbalance of every rank cannot be judged",
            touches=sorted(int(r) for r in ranks["rank"]) if ranks is not None else [],
        )
    )


def check(run, refuse=True, quiet=False):
    """The :class:`Completeness` of a profile run's trace (module docstring); with
    ``refuse``, an InputError for a gap in a whole run.  Said once per run on stderr."""
    from .trace import trace_files

    done = getattr(run, "_completeness", None)
    if done is not None and (done.refused or not refuse):
        return done
    params = run.meta.get("parameters") or {}
    traced = bool(params.get("trace"))
    whole = whole_run(run)
    files = trace_files(run.raw_dir)
    r = _profile_ranks(run.meta)
    c = Completeness(
        str(run.path),
        traced or bool(files),
        whole,
        not_finalized=sorted(int(x) for x in (r.get("not_finalized") or []) if _whole(x)),
    )
    counts = _counts(run) if c.traced else None
    gaps = c.gaps
    if counts is not None:
        c.counted = sum(n for n, _ in counts.values())
        for (rank, thread), (n, _) in sorted(counts.items()):
            name = f"raw/trace.{rank}.{thread}.bin"
            path = files.get((rank, thread))
            if path is None:
                if n:
                    gaps.append(
                        Gap(
                            rank,
                            name,
                            f"missing: {n} records written (counters.parquet trace_records)",
                            thread,
                            n,
                        )
                    )
                continue
            got = _records_in(path)
            if got is None:
                continue  # a bad header: the reader names it
            have, cut = got
            if have < n:
                gaps.append(
                    Gap(
                        rank,
                        name,
                        f"holds {have} of the {n} records written (counters.parquet "
                        f"trace_records): {n - have} missing"
                        + (f", and {cut} bytes of a record cut short" if cut else ""),
                        thread,
                        n - have,
                    )
                )
            elif have > n or (cut and whole):
                gaps.append(
                    Gap(
                        rank,
                        name,
                        f"holds {have} records"
                        + (f" and {cut} bytes more" if cut else "")
                        + f", but counters.parquet counts {n} written (trace_records)",
                        thread,
                    )
                )
            elif cut:
                from .trace import _warn_once

                _warn_once(f"{path}: last record cut short ({cut} bytes) and left out")
        for (rank, thread), path in files.items():
            if (rank, thread) not in counts and rank in {r for r, _ in counts}:
                gaps.append(
                    Gap(
                        rank,
                        f"raw/trace.{rank}.{thread}.bin",
                        "a trace file of a thread the counters do not know "
                        "(counters.parquet has no trace_records for it)",
                        thread,
                    )
                )
    elif c.traced and not files and whole:
        gaps.append(Gap(0, "raw/trace.*.bin", "missing: the run was traced (--trace)"))
    if whole:
        _finalize_file_gaps(run, gaps, c.traced)
    _thread_timing_gaps(run, gaps)
    if gaps and whole and refuse:
        g = gaps[0]
        more = f" (and {len(gaps) - 1} more: {gaps[1].text()}...)" if len(gaps) > 1 else ""
        raise InputError(
            Path(run.path) / g.file,
            g.who(),
            f"{g.what}, though every rank reached MPI_Finalize: the run is damaged{more}",
        )
    if gaps and not quiet and done is None:
        warn(f"{run.path}: {c.summary()}")
    c.refused = refuse
    run._completeness = c
    return c


def partners(c, matched):
    """Count the sends and receives without a partner into ``c`` (once), and say so;
    ``matched``: the trace's messages (profile.export.match_messages), or None."""
    if c is None or getattr(c, "_partners_done", False):
        return c
    c._partners_done = True
    if matched is None or not len(matched):
        return c
    m = matched
    alone = m[(m["send"] < 0) | (m["recv"] < 0)]
    if len(alone):
        c.unmatched = int(len(alone))
        c.unmatched_ranks = sorted(
            {int(x) for x in alone["src"].tolist()} | {int(x) for x in alone["dst"].tolist()}
        )
        warn(
            f"{c.run}: {c.unmatched} sends or receives of {_ranks(c.unmatched_ranks)} have no "
            "partner in the trace (records missing or damaged); findings of those ranks "
            "are marked"
        )
    return c


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool)
