"""What `compare` compares, read from one run: one value per figure (docs/compare.md).

:func:`measure` returns ``{level: {key: value}}`` for one run directory, with the
levels of its kind:

* profile runs (``commscope profile``): ``runtime`` (the largest ``wall_s`` of
  ``ranks.parquet``, MPI_Init to MPI_Finalize; the diagnosis' run time when the wall
  time was not measured), ``mpi_time`` (time in MPI, mean over ranks), ``ranks`` (time
  in MPI per rank: a rank whose several threads call MPI counts the mean over those
  threads, as every per-rank view does), ``functions`` and ``callsites`` (time per
  MPI function and per call site ``file:line``, summed over ranks and threads and
  divided by the ranks: seconds per rank), ``counters`` (the regular counters summed
  over ranks and threads, high-water marks as the largest over ranks) and
  ``findings`` (the diagnosis' lost time per finding, keyed by kind, waiting function
  and call site);
* benchmark runs: ``points``, the benchmark's main figure per measured point
  (:data:`POINT_FIGURES`), and for ``bsp`` runs ``runtime``, the sum of the interval
  maxima.

A level the run cannot give (no timers, no call sites) is left out, and
:data:`NOT_MEASURED` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


@dataclass(frozen=True)
class PointFigure:
    """A benchmark's main figure: ``value`` of ``table`` per point of ``keys``, the
    median over the point's samples (``stat``), in the unit of ``suffix``."""

    table: str
    keys: tuple
    value: str
    what: str
    suffix: str = "_s"
    stat: str = "median"


#: The benchmark kinds `compare` reads, and their main figure.
POINT_FIGURES = {
    "pingpong": PointFigure("samples", ("size_bytes",), "time_s", "one-way latency (median)"),
    "hvpingpong": PointFigure(
        "samples",
        ("n_messages", "size_bytes", "order"),
        "time_s",
        "time of a batch of messages (median)",
    ),
    "partitioned": PointFigure(
        "samples", ("method", "size_bytes"), "elapsed_s", "send time (median)"
    ),
    "mtmatch": PointFigure("trials", ("config",), "drain_time_s", "drain time (median)"),
    "multirate": PointFigure(
        "reps",
        ("mode", "threads"),
        "rate_msgs_per_s",
        "message rate (median)",
        suffix="_msgs_per_s",
    ),
    "threads": PointFigure(
        "compute", ("region",), "compute_time_s", "thread compute time (mean)", stat="mean"
    ),
    "bsp": PointFigure("maxima", (), "max_interval_s", "interval maximum (mean)", stat="mean"),
}

#: The levels of a profile comparison, in the order they are printed.
PROFILE_LEVELS = ("runtime", "mpi_time", "ranks", "functions", "callsites", "counters", "findings")

#: The unit suffix of each level's values (docs/conventions.md).
LEVEL_SUFFIX = {
    "runtime": "_s",
    "mpi_time": "_s",
    "ranks": "_s",
    "functions": "_s",
    "callsites": "_s",
    "counters": "_value",
    "findings": "_s",
    "figures": None,
    "points": None,
}


@dataclass
class Measures:
    """One run's figures: ``levels[level][key] = value``; ``missing[level]`` says why a
    level is absent; ``info`` holds per-key details (a finding's predicted saving, a
    counter's unit, a point's key columns)."""

    run: Path
    kind: str
    levels: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    #: why the run's trace fails the completeness check (collect.completeness), or None
    damaged: str | None = None


def measure(run, findings=True):
    """The :class:`Measures` of an open run (:func:`commscope.runs.open_run`)."""
    if run.kind == "profile":
        return _profile(run, findings)
    if run.kind in POINT_FIGURES:
        return _benchmark(run)
    raise InputError(
        run.path / "meta.json",
        "kind",
        f"compare does not read {run.kind!r} runs "
        f"(it reads profile runs and {', '.join(sorted(POINT_FIGURES))} runs)",
    )


# ---- profile runs ---------------------------------------------------------------------------


def _profile(run, findings):
    from ..profile.api import Profile
    from ..profile.views import rank_times, run_timed

    m = Measures(Path(run.path), "profile")
    if "ranks" not in run.tables():
        raise InputError(
            run.path / "ranks.parquet",
            None,
            "missing: the profile was not converted (is it still running?)",
        )
    times = rank_times(run)
    if not len(times):
        raise InputError(run.table_file("ranks"), None, "no rows: no rank reached MPI_Finalize")
    nranks = int(len(times))
    wall = times["wall_s"].max()
    profile = Profile(run)
    diagnosis = None
    from ..collect import completeness

    # a side whose trace fails the completeness check is damaged: its findings are not
    # compared (a finding "gone" there is a file gone, not a fix); said on stderr
    gaps = completeness.check(run, refuse=False)
    if gaps.damaged and math.isfinite(wall):
        m.damaged = gaps.summary()
        if findings:
            m.missing["findings"] = f"damaged: {run.path}: {m.damaged}"
        findings = False
    if findings or not math.isfinite(wall):
        from ..diagnose.findings import diagnose

        diagnosis = diagnose(profile)
    m.levels["runtime"] = {"runtime": float(wall) if math.isfinite(wall) else diagnosis.runtime_s}
    timed = run_timed(run) and times["mpi_time_s"].notna().any()
    if timed:
        t = times.dropna(subset=["mpi_time_s"])
        m.levels["mpi_time"] = {"mpi_time": float(t["mpi_time_s"].mean())}
        m.levels["ranks"] = {int(r): float(v) for r, v in zip(t["rank"], t["mpi_time_s"])}
        f = profile.functions
        per = f.groupby("function")["time_s"].sum(min_count=1).dropna() / nranks
        m.levels["functions"] = {str(k): float(v) for k, v in per.items()}
    else:
        for level in ("mpi_time", "ranks", "functions"):
            m.missing[level] = "not measured (profiled without the timers)"
    cs = profile.callsites
    if cs is None:
        m.missing["callsites"] = "no call sites (profile --callsites)"
    elif not timed or cs["time_s"].isna().all():
        m.missing["callsites"] = "call sites not timed (profiled without the timers)"
    else:
        site = callsite_labels(cs)
        per = cs.assign(site=site).groupby("site")
        m.levels["callsites"] = {
            str(k): float(v) for k, v in (per["time_s"].sum(min_count=1).dropna() / nranks).items()
        }
        m.info["callsites"] = {
            str(k): {"functions": sorted(set(map(str, g["function"])))} for k, g in per
        }
    m.levels["counters"], m.info["counters"] = _counters(profile.counters)
    if not m.levels["counters"]:
        del m.levels["counters"]
        m.missing["counters"] = "no counters"
    if diagnosis is not None and findings:
        m.levels["findings"], m.info["findings"] = {}, {}
        for f in diagnosis.findings:
            key = finding_key(f.kind, f.waiting_function, f.callsite)
            m.levels["findings"][key] = m.levels["findings"].get(key, 0.0) + float(f.lost_s)
            m.info["findings"][key] = {
                "kind": f.kind,
                "waiting_function": f.waiting_function,
                "callsite": f.callsite,
                "predicted_saving_s": f.predicted_saving_s,
            }
    elif not findings and "findings" not in m.missing:
        m.missing["findings"] = "not asked for (--no-findings)"
    return m


def finding_key(kind, function, callsite):
    """``kind function at callsite``: how findings are matched from run to run."""
    return kind + (f" {function}" if function else "") + (f" at {callsite}" if callsite else "")


def callsite_labels(cs):
    """``file.c:69`` per row of a callsites table (the file's name, as the diagnosis
    names call sites); an unresolved address is ``object+0xoffset``."""
    out = []
    for file, line, obj, off in zip(cs["file"], cs["line"], cs["object"], cs["offset"]):
        if isinstance(file, str) and file and line == line and line is not None:
            out.append(f"{Path(file).name}:{int(line)}")
        else:
            out.append(f"{Path(str(obj)).name}+{int(off):#x}")
    return out


def _counters(c):
    """Regular counters summed over ranks and threads; watermarks: the largest."""
    if c is None or not len(c):
        return {}, {}
    values, info = {}, {}
    for (name, kind, unit), g in c.groupby(["counter", "kind", "unit"], sort=True):
        scale = 1.0
        if unit == "ns":  # the CPU contention counters: seconds, as every time here
            name, unit, scale = f"{name}_s", "s", 1e-9
        if kind == "regular":
            values[str(name)] = float(g["value"].sum()) * scale
        elif kind == "watermark":
            values[str(name)] = float(g["value"].max()) * scale
        else:
            continue
        info[str(name)] = {"unit": str(unit), "counter_kind": str(kind)}
    return values, info


# ---- benchmark runs ------------------------------------------------------------------------


def _benchmark(run):
    fig = POINT_FIGURES[run.kind]
    m = Measures(Path(run.path), run.kind)
    df = run.table(fig.table)
    if not len(df):
        raise InputError(run.table_file(fig.table), None, "no rows: nothing was measured")
    if fig.value not in df.columns:
        raise InputError(run.table_file(fig.table), fig.value, "required column is missing")
    points, info = {}, {}
    if fig.keys:
        for key, g in df.groupby(list(fig.keys), sort=True):
            key = key if isinstance(key, tuple) else (key,)
            label = ",".join(str(_plain(k)) for k in key)
            points[label] = float(getattr(g[fig.value], fig.stat)())
            info[label] = {k: _plain(v) for k, v in zip(fig.keys, key)}
    else:
        points["all"] = float(getattr(df[fig.value], fig.stat)())
        info["all"] = {}
    m.levels["points"] = points
    m.info["points"] = info
    if run.kind == "bsp":
        m.levels["runtime"] = {"runtime": float(df["max_interval_s"].sum())}
    else:
        m.missing["runtime"] = (
            f"a {run.kind} run has no run time of a program: its figure is the {fig.what} per point"
        )
    return m


def _plain(v):
    return v.item() if hasattr(v, "item") else v
