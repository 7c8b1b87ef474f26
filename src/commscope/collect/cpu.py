"""CPU contention of a profile run: how long each rank's threads were runnable but not
running (waiting in the kernel's run queue for a core), and the ranks x threads each
node ran against its cores.

The library (native/profiler/cs_prof_cpu.c) reads Linux's
``/proc/self/task/<tid>/schedstat`` of every thread of a rank (its own snapshot thread
left out) at ``MPI_Init``, at every snapshot and at ``MPI_Finalize``, with the timers
set (the default); it never touches the MPI calls.  Where schedstat cannot be read, it
counts getrusage's on-CPU time and involuntary context switches, and the wait is *not
measured* (``measured`` False, ``cpu_wait_s`` NaN): contention unmeasured, not absent.
Docs: docs/profile.md, "CPU contention".

``profile`` is what ``commscope.open(run_dir)`` returns.

* :func:`rank_cpu` -> one row per rank: ``rank``, ``host``, ``threads`` (the rank's
  threads that competed for cores: those that called MPI and those that ran for at
  least :data:`BUSY_SHARE` of its wall time), ``os_threads`` (every thread it had, the
  MPI's helpers included, most at once), ``mpi_threads`` (threads that called MPI),
  ``wall_s``, ``cpu_wait_s`` and ``cpu_run_s`` (run-queue wait and on-CPU time since
  ``MPI_Init``, summed over the rank's threads, exited ones included, seconds),
  ``involuntary_switches``, ``measured`` (bool: the wait was measured) and ``source``
  (``"schedstat"`` or ``"rusage"``; None when nothing was measured, e.g. without the
  timers).  None for a run recorded before these counters existed.
* :func:`thread_cpu` -> one row per thread of every rank that reached ``MPI_Finalize``
  with schedstat: ``rank``, ``tid``, ``mpi`` (it called MPI), ``exited`` (before
  ``MPI_Finalize``), ``cpu_wait_s``, ``cpu_run_s``; None without them.
* :func:`node_load` -> one row per host: ``host``, ``cores`` (logical CPUs online: what
  the scheduler runs at once), ``ranks``, ``threads`` (the sum of the ranks'
  ``threads``: ranks x threads), ``os_threads``, ``oversubscribed`` (``threads`` >
  ``cores``); None when :func:`rank_cpu` is.
* :func:`cpu_samples` -> the trace's CPU samples (``profile --trace``), the DataFrame
  ``Trace.cpu`` of :mod:`commscope.collect.trace`: ``rank``, ``thread``, ``record``,
  ``function`` (of the call they preceded), ``time_s`` (aligned as the events'
  ``time_begin_s``), ``cpu_wait_s`` and ``cpu_run_s`` (the thread's, cumulative since it
  started); None without a trace.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: A thread that never called MPI competes for a core when it ran for at least this
#: share of its rank's wall time (an OpenMP worker does; the MPI's sleeping helpers not).
BUSY_SHARE = 0.1
SOURCES = {1: "schedstat", 2: "rusage"}  # the cpu_source counter's codes
_COUNTERS = (
    "cpu_wait",
    "cpu_run",
    "cpu_involuntary_switches",
    "cpu_threads_hwm",
    "cpu_source",
)


def read_cpu_lines(raw_dir):
    """{rank: line} of every raw/cpu.<node>.jsonl (one line per rank, at MPI_Finalize).

    A damaged line is one error naming the file, line and field; a last line cut short
    (the rank was killed while writing it) is left out."""
    out = {}
    for path in sorted(Path(raw_dir).glob("cpu.*.jsonl")):
        lines = path.read_text(errors="replace").split("\n")
        for n, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                if n == len(lines):  # cut short: no newline after it
                    continue
                raise InputError(path, f"line {n}", "malformed JSON") from None
            _check_line(path, n, line)
            out[int(line["rank"])] = line
    return out


def _check_line(path, n, line):
    def whole(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not isinstance(line, dict):
        raise InputError(path, f"line {n}", "not a JSON object")
    for key in ("rank", "pid", "cpus_online"):
        if not whole(line.get(key)):
            raise InputError(path, f"line {n}: {key}", "missing or not a whole number >= 0")
    if line.get("source") not in SOURCES.values():
        raise InputError(path, f"line {n}: source", f"expected one of {list(SOURCES.values())}")
    threads = line.get("threads")
    if not isinstance(threads, list):
        raise InputError(path, f"line {n}: threads", "missing or not a list")
    for i, t in enumerate(threads):
        if (
            not isinstance(t, dict)
            or not all(whole(t.get(k)) for k in ("tid", "run_ns", "wait_ns"))
            or not all(isinstance(t.get(k), bool) for k in ("mpi", "exited"))
        ):
            raise InputError(
                path,
                f"line {n}: threads[{i}]",
                "needs whole numbers tid, run_ns, wait_ns >= 0 and booleans mpi, exited",
            )


def _raw_dir(profile):
    return Path(profile.run.raw_dir)


def thread_cpu(profile):
    """Per thread of each rank: see the module docstring; None without per-thread lines."""
    lines = read_cpu_lines(_raw_dir(profile))
    rows = [
        dict(
            rank=rank,
            tid=t["tid"],
            mpi=t["mpi"],
            exited=t["exited"],
            cpu_wait_s=t["wait_ns"] / 1e9,
            cpu_run_s=t["run_ns"] / 1e9,
        )
        for rank, line in sorted(lines.items())
        if line["source"] == "schedstat"
        for t in line["threads"]
    ]
    return pd.DataFrame(rows) if rows else None


def rank_cpu(profile):
    """Per rank: see the module docstring; None for a run without the cpu_* counters."""
    counters, ranks = profile.table("counters"), profile.table("ranks")
    if counters is None or ranks is None or not counters["counter"].isin(_COUNTERS).any():
        return None
    c = counters[(counters["thread"] == -1) & counters["counter"].isin(_COUNTERS)]
    wide = c.pivot_table(index="rank", columns="counter", values="value", aggfunc="sum")
    wide = wide.reindex(index=ranks["rank"], columns=list(_COUNTERS)).fillna(0)
    code = wide["cpu_source"].to_numpy(np.int64)
    source = [SOURCES.get(int(x)) for x in code]
    measured = code == 1
    df = pd.DataFrame(
        {
            "rank": ranks["rank"].to_numpy(np.int64),
            "host": ranks["host"].to_numpy(object),
            "threads": 0,
            "os_threads": wide["cpu_threads_hwm"].to_numpy(np.int64),
            "mpi_threads": ranks["threads"].to_numpy(np.int64),
            "wall_s": ranks["wall_s"].to_numpy(np.float64),
            "cpu_wait_s": np.where(measured, wide["cpu_wait"].to_numpy() / 1e9, np.nan),
            "cpu_run_s": np.where(code > 0, wide["cpu_run"].to_numpy() / 1e9, np.nan),
            "involuntary_switches": wide["cpu_involuntary_switches"].to_numpy(np.int64),
            "measured": measured,
            "source": pd.Series(source, dtype=object).to_numpy(),
        }
    )
    df["threads"] = _busy_threads(profile, df)
    return df


def _busy_threads(profile, df):
    """Per rank of ``df``, the threads that competed for cores (module docstring): from
    the per-thread lines where the rank wrote one, else the threads that called MPI."""
    per = thread_cpu(profile)
    out = np.maximum(df["mpi_threads"].to_numpy(np.int64), 1)
    if per is None:
        return out
    wall = dict(zip(df["rank"], df["wall_s"]))
    busy = per["mpi"] | (per["cpu_run_s"] >= BUSY_SHARE * per["rank"].map(wall).fillna(np.inf))
    counts = busy.groupby(per["rank"]).sum()
    got = df["rank"].map(counts)
    return np.where(got.notna(), np.maximum(got.fillna(0).to_numpy(np.int64), 1), out)


def _cores(profile, hosts):
    """{host: logical CPUs online} from the node files' metadata (else meta.json's
    topology for the host commscope ran on)."""
    from .node_files import load_node_meta, node_keys

    raw = _raw_dir(profile)
    out = {}
    for key in node_keys(raw):
        meta = load_node_meta(raw / f"node.{key}.json")
        if isinstance(meta.get("cpus_online"), int) and meta["cpus_online"] > 0:
            host = meta.get("host", key)
            out[host] = max(out.get(host, 0), meta["cpus_online"])
    topo = profile.meta.get("topology") or {}
    for h in hosts:
        if h not in out and topo.get("host") == h and topo.get("hardware_threads"):
            out[h] = int(topo["hardware_threads"])
    return out


def node_load(profile):
    """Per host: see the module docstring; None when :func:`rank_cpu` is None."""
    ranks = rank_cpu(profile)
    if ranks is None:
        return None
    g = ranks.groupby("host", sort=True)
    df = pd.DataFrame(
        {
            "ranks": g["rank"].count(),
            "threads": g["threads"].sum(),
            "os_threads": g["os_threads"].sum(),
        }
    ).reset_index()
    cores = _cores(profile, df["host"].tolist())
    df.insert(1, "cores", df["host"].map(cores).astype("Int64"))
    df["oversubscribed"] = (df["threads"] > df["cores"]).fillna(False).astype(bool)
    return df


def cpu_samples(profile):
    """The trace's CPU samples (``Trace.cpu``), or None without ``profile --trace``."""
    t = profile._trace()
    return None if t is None else t.cpu


__all__ = ["rank_cpu", "thread_cpu", "node_load", "cpu_samples", "read_cpu_lines", "BUSY_SHARE"]
