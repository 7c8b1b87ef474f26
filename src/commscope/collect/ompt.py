"""Per-thread timing of OpenMP regions without source changes, through OMPT.

The C side is ``native/ompt/cs_ompt.c`` (``libcommscope_ompt.so``): loaded by an
OMPT-capable OpenMP runtime through ``OMP_TOOL_LIBRARIES``, it writes every
parallel-region, implicit-task and barrier event of every thread to
``raw/ompt.<rank>.<n>.bin``.  GCC's libgomp has no OMPT, so a GCC-built program
runs on Intel's ``libiomp5.so`` (the ``intel-openmp`` wheel, installed by
scripts/setup.sh), which implements GCC's ``GOMP_*`` entry points, by preloading it.

This module: finding the runtime and the tool, checking a binary can use them
(:func:`inspect_binary`, :func:`probe`), the collector that ``commscope profile
--threads`` and ``bench threads --ompt`` plug in, and the reader that turns the raw
events into per-thread arrivals.

Arrivals.  Within one region instance, each thread's timeline is cut at every
barrier it enters: a *segment* starts when the thread begins its implicit task
or leaves the previous barrier, and ends when it arrives at the next one.  The
segment's ``compute_time_s`` = arrival - start, the thread's own busy time, as
Listing 1 of Marts et al. measures it (start after a barrier, end before the
next).  The segment that ends at the region's closing barrier carries the
region's name (its code location); earlier segments (worksharing or explicit
barriers) are named ``<location> #<k>``.  The ``threads`` table has the
columns ``stats arrivals`` reads, plus ``region``, ``instance`` and absolute
times; ``iteration`` counts the instances of that region on that rank; ``start_s``,
``arrival_s`` and ``leave_s`` are seconds after ``rank_t0_ns`` (CLOCK_MONOTONIC ns,
the clock of the MPI counters and trace).
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


from ..errors import EnvironmentProblem, InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


HEADER_BYTES = 64
MAGIC = b"CSOMPT01"
#: One event record of the native collector (numpy dtype spec; built on use, so that
#: importing this module for doctor's checks needs no numpy).
EVENT_FIELDS = [
    ("t_ns", "<u8"),
    ("instance", "<u8"),
    ("codeptr", "<u8"),
    ("event", "<u2"),
    ("kind", "<u2"),
    ("thread", "<u2"),
    ("team", "<u2"),
]
EV = dict(
    parallel_begin=1,
    parallel_end=2,
    task_begin=3,
    task_end=4,
    sync_begin=5,
    sync_end=6,
    work_begin=7,
    work_end=8,
)
#: ompt_sync_region_t values that are barriers, and how the table names them.
BARRIER_KINDS = {
    1: "barrier",
    2: "closing",
    3: "explicit",
    4: "implementation",
    8: "workshare",
    9: "closing",
}
CLOSING = {2, 9}


# ----------------------------------------------------------------------------- runtime


def runtime_library():
    """libiomp5.so of this environment (intel-openmp wheel), else None."""
    for base in (Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"):
        lib = base / "libiomp5.so"
        if lib.exists():
            return lib
    return None


def tool_library(mpi):
    """Build (if needed) and return libcommscope_ompt.so in ``mpi``'s build tree."""
    from .. import mpi as mpimod

    bdir = mpimod.build(mpi, target="commscope_ompt")
    lib = bdir / "libcommscope_ompt.so"
    if not lib.exists():
        raise EnvironmentProblem(
            f"the OMPT tool was not built: no omp-tools.h found (run scripts/setup.sh, which "
            f"installs the intel-openmp wheel; see {bdir}/CMakeCache.txt)"
        )
    return lib


_OPENMP_LIBS = (("libgomp", "gomp"), ("libiomp5", "iomp5"), ("libomp", "omp"))


def inspect_binary(path):
    """Which OpenMP runtime ``path`` uses: ``{"runtime": gomp|omp|iomp5|static-gomp|none,
    "library": resolved path or None, "detail": why}``.

    From ``ldd`` (dynamic dependencies) and, when none is linked, the binary's own
    symbols (a statically linked libgomp defines ``GOMP_parallel``; its OpenMP
    library cannot be replaced).
    """
    path = Path(path)
    try:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return {"runtime": "unknown", "library": None, "detail": f"ldd failed ({exc})"}
    for prefix, name in _OPENMP_LIBS:
        m = re.search(rf"^\s*{prefix}\.so[.\d]*\s*=>\s*(\S+)", out, re.MULTILINE)
        if m:
            return {
                "runtime": name,
                "library": m.group(1),
                "detail": f"links {prefix} ({m.group(1)})",
            }
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run(
            [nm, "-D", "--defined-only", str(path)], capture_output=True, text=True
        ).stdout
        syms += subprocess.run(
            [nm, "--defined-only", str(path)], capture_output=True, text=True
        ).stdout
        if re.search(r"\bGOMP_parallel\b|\b__kmpc_fork_call\b", syms):
            return {
                "runtime": "static",
                "library": None,
                "detail": "the OpenMP runtime is linked statically into the binary",
            }
    return {
        "runtime": "none",
        "library": None,
        "detail": "links no OpenMP runtime (libgomp, libomp or libiomp5)",
    }


def plan_for_binary(program, tool):
    """Preload list and environment that make ``program`` report to ``tool``.

    Raises InputError (exit 2) saying what was tried when it cannot work.
    """
    info = inspect_binary(program)
    rt = info["runtime"]
    env = {"OMP_TOOL_LIBRARIES": str(tool), "OMP_TOOL": "enabled"}
    if rt == "gomp":
        lib = runtime_library()
        if lib is None:
            raise InputError(
                program,
                None,
                "uses GCC's libgomp, which has no OMPT; the replacement runtime "
                "libiomp5.so (intel-openmp wheel) is not installed in "
                f"{sys.prefix} (run scripts/setup.sh)",
            )
        return [str(lib)], env, f"OpenMP: {info['detail']}; replaced by {lib} (OMPT)"
    if rt in ("omp", "iomp5"):
        return [], env, f"OpenMP: {info['detail']} (OMPT built in)"
    if rt == "static":
        raise InputError(
            program,
            None,
            f"{info['detail']}: it cannot be replaced by an OMPT "
            "runtime (tried: LD_PRELOAD of libiomp5.so needs a dynamic libgomp); "
            "rebuild without -static or with clang -fopenmp",
        )
    raise InputError(
        program,
        None,
        f"{info['detail']}: no OpenMP regions to time (tried: ldd and the binary's symbols)",
    )


@dataclass
class OmptCollector:
    """Collector of ``commscope profile --ompt`` (see PROFILE-INTERFACE.md)."""

    program: str
    tool: str
    name: str = "ompt"
    preload: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @classmethod
    def for_program(cls, program, mpi):
        tool = tool_library(mpi)
        preload, env, note = plan_for_binary(program, tool)
        return cls(
            str(program), str(tool), preload=preload, env=env, notes=[note, f"OMPT tool: {tool}"]
        )

    def recorded(self, run):
        """Whether the tool wrote any event (see run_profile)."""
        return tool_status(run.raw_dir)["event_files"] > 0

    def finalize(self, run):
        """Write the ``threads`` table; record what the tool saw (or why nothing)."""
        status = tool_status(run.raw_dir)
        run.meta.setdefault("profile", {})["ompt"] = status
        if status["event_files"]:
            table = arrivals_table(run.raw_dir)
            run.write_table("threads", table)
            status["samples"] = int(len(table))
            status["regions"] = sorted(table["region"].unique().tolist()) if len(table) else []
        return status


def probe(mpi, binary=None, regions=3, threads=2):
    """Does OMPT thread timing work here (and for ``binary``)?  Runs the small
    OpenMP probe program (native/ompt/probe.c) under the tool, the way
    ``profile --ompt`` runs a program, and checks every thread of every region
    reported its closing barrier.  Returns a dict (``available``, ``hint``, ...)."""
    import tempfile
    from .. import launch, mpi as mpimod

    out = {"available": False, "runtime": None, "tool": None, "probe": None, "hint": None}
    rt = runtime_library()
    out["runtime"] = str(rt) if rt else None
    try:
        tool = tool_library(mpi)
        prog = mpimod.binary(mpi, "ompt_probe")
        out["tool"] = str(tool)
        preload, env, note = plan_for_binary(prog, tool)
    except (EnvironmentProblem, InputError) as exc:
        out["hint"] = str(exc)
        return out
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            **env,
            "COMMSCOPE_PROFILE_DIR": tmp,
            "OMP_NUM_THREADS": str(threads),
            "LD_PRELOAD": ":".join(preload + [launch.user_preload()]).rstrip(":"),
        }
        try:
            subprocess.run(
                [str(prog), str(regions), str(threads)],
                env=env,
                check=True,
                capture_output=True,
                timeout=60,
            )
            table = arrivals_table(tmp, resolve=False)
        except (OSError, subprocess.SubprocessError, InputError) as exc:
            out["hint"] = f"the probe failed under the tool ({note}): {exc}"
            return out
        st = tool_status(tmp)
    closing = table[table["barrier"] == "closing"]
    out["probe"] = {
        "regions": regions,
        "threads": threads,
        "closing_arrivals": int(len(closing)),
        "runtime_version": st["runtime"],
        "barrier_kinds": sorted(table["barrier"].unique().tolist()),
    }
    # The untimed first region of the probe counts too.
    out["available"] = len(closing) == (regions + 1) * threads
    if not out["available"]:
        out["hint"] = (
            f"the probe saw {len(closing)} closing-barrier arrivals, expected "
            f"{(regions + 1) * threads} ({note})"
        )
    if binary is not None:
        try:
            out["binary"] = {
                "path": str(binary),
                "ok": True,
                "how": plan_for_binary(binary, tool)[2],
            }
        except InputError as exc:
            out["binary"] = {"path": str(binary), "ok": False, "how": exc.message}
    return out


def bench_collector(mpi, binary):
    """The collector a benchmark run gets with ``--ompt`` (see collect.lifecycle)."""
    return OmptCollector.for_program(binary, mpi)


def tool_status(raw_dir):
    """What the tool wrote in ``raw_dir``: per-rank metadata and event file counts."""
    raw_dir = Path(raw_dir)
    ranks = []
    for p in sorted(raw_dir.glob("ompt.*.json")):
        try:
            ranks.append(json.loads(p.read_text()))
        except json.JSONDecodeError:
            ranks.append({"file": p.name, "state": "unreadable"})
    files = sorted(raw_dir.glob("ompt.*.*.bin"))
    return {
        "ranks_started": len(ranks),
        "event_files": len(files),
        "runtime": ranks[0].get("runtime") if ranks else None,
        "events_dropped": int(sum(r.get("events_dropped", 0) for r in ranks)),
        "finalized": sum(r.get("state") == "finalized" for r in ranks),
    }


def failure_reason(raw_dir, collector):
    """One sentence on why the tool recorded nothing (None when it recorded events)."""
    st = tool_status(raw_dir)
    if st["event_files"]:
        return None
    tried = f"tried OMP_TOOL_LIBRARIES={collector.tool}" + (
        f" with LD_PRELOAD={':'.join(collector.preload)}" if collector.preload else ""
    )
    if not st["ranks_started"]:
        return (
            f"the OpenMP runtime never loaded the OMPT tool ({tried}): the program's "
            "runtime does not support OMPT, or it never started OpenMP"
        )
    return (
        f"the OMPT tool started ({st['runtime']}) but saw no parallel region ({tried}): "
        "the program ran no OpenMP parallel region"
    )


# ----------------------------------------------------------------------------- reading


def read_events(path):
    """One ``ompt.<rank>.<n>.bin`` file -> structured array (a partial last record of a
    killed run is dropped)."""
    data = Path(path).read_bytes()
    if len(data) < HEADER_BYTES or data[:8] != MAGIC:
        raise InputError(path, "magic", f"not a commscope OMPT event file (expected {MAGIC!r})")
    version, rsize = struct.unpack_from("<II", data, 8)
    if version != 1 or rsize != np.dtype(EVENT_FIELDS).itemsize:
        raise InputError(path, "version", f"unknown version {version} / record size {rsize}")
    n = (len(data) - HEADER_BYTES) // rsize
    return np.frombuffer(data, np.dtype(EVENT_FIELDS), count=n, offset=HEADER_BYTES)


def _rank_files(raw_dir):
    """{rank label: [event files]}."""
    out = defaultdict(list)
    for p in sorted(Path(raw_dir).glob("ompt.*.*.bin")):
        m = re.fullmatch(r"ompt\.(.+)\.(\d+)\.bin", p.name)
        if m:
            out[m.group(1)].append(p)
    return out


def _rank_number(label):
    """Rank labels are numbers, or p<pid> outside MPI (-> -pid, still unique)."""
    return int(label) if label.isdigit() else -int(label.lstrip("p") or 0)


def segments(events):
    """Per-thread segments (start -> barrier arrival -> leave) of one rank's events.

    Returns a DataFrame: instance, thread, segment, barrier kind, start_ns,
    arrival_ns, leave_ns.
    """
    ev = np.sort(events, order=["t_ns"])
    rows = []
    # Sequential over events, but only O(events) with dict look-ups; per thread of
    # each instance: the time its current segment started and the segment count.
    open_seg = {}
    for t, inst, code, e, kind, th in zip(
        ev["t_ns"].tolist(),
        ev["instance"].tolist(),
        ev["codeptr"].tolist(),
        ev["event"].tolist(),
        ev["kind"].tolist(),
        ev["thread"].tolist(),
    ):
        key = (inst, th)
        if e == EV["task_begin"]:
            open_seg[key] = [t, 0, None]
        elif e == EV["sync_begin"] and kind in BARRIER_KINDS:
            s = open_seg.get(key)
            if s is None or s[2] is not None:
                continue
            s[2] = len(rows)
            rows.append([inst, th, s[1], kind, s[0], t, np.nan])
        elif e == EV["sync_end"] and kind in BARRIER_KINDS:
            s = open_seg.get(key)
            if s is None or s[2] is None:
                continue
            rows[s[2]][6] = t
            s[0], s[1], s[2] = t, s[1] + 1, None
        elif e == EV["task_end"]:
            open_seg.pop(key, None)
    return pd.DataFrame(
        rows,
        columns=["instance", "thread", "segment", "kind", "start_ns", "arrival_ns", "leave_ns"],
    )


def region_addresses(events):
    """{instance: code address of its parallel-begin} for one rank."""
    pb = events[events["event"] == EV["parallel_begin"]]
    return dict(zip(pb["instance"].tolist(), pb["codeptr"].tolist()))


def arrivals_table(raw_dir, resolve=True):
    """All ranks' segments as the ``threads`` table (see the module docstring)."""
    raw_dir = Path(raw_dir)
    frames = []
    for label, files in sorted(_rank_files(raw_dir).items()):
        events = np.concatenate([read_events(f) for f in files])
        seg = segments(events)
        if seg.empty:
            continue
        addr = region_addresses(events)
        seg["codeptr"] = seg["instance"].map(addr).fillna(0).astype(np.uint64)
        names = (
            resolve_addresses(raw_dir / f"ompt.{label}.maps", seg["codeptr"].unique())
            if resolve
            else {}
        )
        seg["location"] = [names.get(int(a)) or f"0x{int(a):x}" for a in seg["codeptr"]]
        seg["rank"] = _rank_number(label)
        frames.append(seg)
    cols = [
        "trial",
        "rank",
        "iteration",
        "region",
        "thread",
        "compute_time_s",
        "instance",
        "segment",
        "barrier",
        "start_s",
        "arrival_s",
        "leave_s",
        "rank_t0_ns",
    ]
    if not frames:
        return pd.DataFrame(
            {
                c: pd.Series(
                    dtype="int64"
                    if c
                    in ("trial", "rank", "iteration", "thread", "instance", "segment", "rank_t0_ns")
                    else ("object" if c in ("region", "barrier") else "float64")
                )
                for c in cols
            }
        )
    df = pd.concat(frames, ignore_index=True)
    # The closing barrier's segment is the region itself; earlier ones get "#k".
    closing = df["kind"].isin(list(CLOSING))
    df["region"] = np.where(
        closing, df["location"], df["location"] + " #" + (df["segment"] + 1).astype(str)
    )
    df["barrier"] = df["kind"].map(BARRIER_KINDS)
    df = df.sort_values(["rank", "instance", "segment", "thread"], kind="stable")
    # iteration: the how-many-th instance of this region on this rank.
    inst_order = df.drop_duplicates(["rank", "region", "instance"])[["rank", "region", "instance"]]
    inst_order["iteration"] = inst_order.groupby(["rank", "region"]).cumcount()
    df = df.merge(inst_order, on=["rank", "region", "instance"])
    t0 = df.groupby("rank")["start_ns"].transform("min")
    out = pd.DataFrame(
        {
            "trial": 0,
            "rank": df["rank"].astype(np.int64),
            "iteration": df["iteration"].astype(np.int64),
            "region": df["region"].astype(str),
            "thread": df["thread"].astype(np.int64),
            "compute_time_s": (df["arrival_ns"] - df["start_ns"]) * 1e-9,
            "instance": df["instance"].astype(np.int64),
            "segment": df["segment"].astype(np.int64),
            "barrier": df["barrier"].astype(str),
            "start_s": (df["start_ns"] - t0) * 1e-9,
            "arrival_s": (df["arrival_ns"] - t0) * 1e-9,
            "leave_s": (df["leave_ns"] - t0) * 1e-9,
            "rank_t0_ns": t0.astype(np.int64),
        }
    )
    return out.sort_values(["rank", "instance", "segment", "thread"]).reset_index(drop=True)


# ----------------------------------------------------------------------------- addresses


def _read_maps(path):
    """/proc/<pid>/maps copy -> list of (start, end, file offset, path) of file mappings."""
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, int(parts[2], 16), parts[5]))
    return out


def _load_segments(path):
    """PT_LOAD (p_offset, p_vaddr, p_filesz) of a 64-bit little-endian ELF file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return []
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
    except OSError:
        return []
    segs = []
    for i in range(phnum):
        ptype, _flags, off, vaddr, _paddr, filesz = struct.unpack_from(
            "<IIQQQQ", table, i * phentsize
        )
        if ptype == 1:
            segs.append((off, vaddr, filesz))
    return segs


def resolve_addresses(maps_path, addresses):
    """{address: "file.c:line (function)" or "function (library)"} via the process's
    maps and addr2line; addresses that cannot be resolved are left out."""
    maps = _read_maps(maps_path)
    by_file = defaultdict(list)
    for a in (int(x) for x in addresses):
        if not a:
            continue
        for lo, hi, off, path in maps:
            if lo <= a < hi:
                fo = a - lo + off
                vaddr = next(
                    (fo - so + sv for so, sv, sz in _load_segments(path) if so <= fo < so + sz), fo
                )
                by_file[path].append((a, vaddr - 1))  # a return address: the call is before
                break
    out = {}
    tool = shutil.which("addr2line")
    for path, pairs in by_file.items():
        lib = os.path.basename(path)
        names = [None] * len(pairs)
        if tool:
            try:
                res = subprocess.run(
                    [tool, "-f", "-C", "-e", path, *(hex(v) for _, v in pairs)],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                lines = res.stdout.splitlines()
                for i in range(min(len(pairs), len(lines) // 2)):
                    func, loc = lines[2 * i], lines[2 * i + 1]
                    loc = re.sub(r" \(discriminator \d+\)$", "", loc)
                    if not loc.startswith("??"):
                        names[i] = (
                            f"{os.path.basename(loc)} ({func})"
                            if func != "??"
                            else os.path.basename(loc)
                        )
                    elif func != "??":
                        names[i] = f"{func} ({lib})"
            except (OSError, subprocess.SubprocessError):
                pass
        for (a, v), name in zip(pairs, names):
            out[a] = name or f"{lib}+0x{v + 1:x}"
    return out
