#!/usr/bin/env python
"""Instructions of the counter library per MPI call, in total and per hook (callgrind).

There are no hardware counters on this VM and times move with the load; instruction
counts do not.  This runs a fixed program (tests/programs/hotpath.c, 2 ranks: a
ping-pong of 8 B and of 1 KiB with MPI_Send / MPI_Recv, and an 8 B exchange with
MPI_Irecv, MPI_Isend and MPI_Waitall) under valgrind's callgrind with
libcommscope.so preloaded, and counts the instructions executed in the library's
own code (libcommscope.so, and what it calls in libc) per wrapped MPI call, after
each phase's warm-up, so only the steady state is counted: the program zeroes
callgrind's counts after the warm-up and dumps them after ITERS iterations
(CALLGRIND_ZERO_STATS / CALLGRIND_DUMP_STATS_AT), instrumentation runs only between
MPI_Init and MPI_Finalize (--instr-atstart=no) and the MPI's own instructions are
left out.  Snapshots are off (COMMSCOPE_SNAPSHOT_MS=0).

Per hook, by source line: the library is the one `commscope profile` preloads,
built -O2 -g, with its hooks inlined; callgrind records the file and line of every
instruction, inlined ones included (DWARF line table), and each line belongs to the
function whose body holds it in that file (HOOKS below maps function names to the
hooks; the generated wrappers, CS_ENTER / CS_LEAVE and what is not listed count as
"wrapper").  So the total is exactly what the shipped library executes; the split
is as good as the compiler's line table, which at -O2 may give an instruction that
serves two lines to either (a few instructions per call).  Hooks:

  wrapper        the generated wrapper, CS_ENTER / CS_LEAVE, the slab pointer, the
                 status of a receive given MPI_STATUS_IGNORE, the PLT stub to PMPI_*
  message count  messages and bytes (thread counters, bytes per function), type sizes
  size bin       the power-of-two bin's count and its tick word
  peer entry     (communicator, rank) -> world rank -> the peer table's entry
  request table  the request table and ledger (nonblocking calls, Wait/Test)
  clock          rdtsc at entry and exit, the function's ticks
  call site      --callsites: the call-site table
  trace record   --trace: the record and the call's site for it

    .venv/bin/python scripts/hotpath_instructions.py [--mpi openmpi,mpich]
        [--configs default,no_timers,callsites,trace] [--iters 2000] [--lib PATH]
        [--cache] [--json FILE] [--record FILE] [--quick]

--lib PATH measures another build of the library (PATH may hold {mpi}: openmpi,
mpich), e.g. one built from an earlier commit.  --cache adds callgrind's cache
simulation (the host's L1/LL geometry): data-cache misses per call (D1mr + D1mw,
DLmr + DLmw) beside the instructions.  --record FILE writes the default path's
figures (the regression guard's reference, tests/data/hotpath_instructions.json).
--clock also times a clock read on this machine (tests/programs/clock_cost.c, no MPI,
best of 9): what one rdtsc adds after a memcpy of 8 B, 1 KiB and 4 KiB (a receive's
copy) and what a pair around it adds (a wrapper's timer), and clock_gettime; times,
not instructions, so they move with the load (the best of 9 moves least).
--quick (what `make bench QUICK=1` and tests/test_scripts_quick.py run): Open MPI,
the default counters, 200 iterations.  Exits 3 ("skipped: ...") without valgrind
or its callgrind.h.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "programs" / "hotpath.c"
CLOCK_PROGRAM = ROOT / "tests" / "programs" / "clock_cost.c"
SKIPPED = 3

HOOK_ORDER = (
    "wrapper",
    "message count",
    "size bin",
    "peer entry",
    "request table",
    "clock",
    "call site",
    "trace record",
)

#: Functions of native/profiler/ by hook (inlined or not); any other line of the
#: library is the wrapper's.
HOOKS = {
    "message count": """cs_on_send cs_on_isend cs_on_recv cs_on_irecv cs_count_message
        cs_count_sent cs_count_received cs_count_wildcards cs_count_bytes cs_bytes
        cs_type_size_slow cs_status_bytes cs_on_isendrecv cs_on_mprobe""",
    "size bin": "cs_count_bin cs_bin cs_bin_row cs_bin_row_new cs_bin_time cs_bin_cell",
    "peer entry": """cs_count_peer cs_world_of cs_world_in cs_peer cs_peer_new cs_peer_of
        cs_peer_slow cs_comm_lookup group_find peer_slot cs_peer_cache_fill""",
    "request table": """cs_track cs_req_put put cs_req_get cs_req_take cs_req_restore with_entry
        find bucket_lock bucket_unlock cs_ledger_started cs_ledger_ended cs_sentinel_add
        cs_save cs_release cs_complete_saved complete cs_settle cs_ended_saved
        cs_next_request_id cs_thread_index was_cancelled sendrecv_status_usable statuses
        statuses_release cs_tracking_requests cs_posts_receive cs_on_start cs_on_cancel
        cs_freed cs_on_request_started handle_key slot_of""",
    "clock": "cs_ticks cs_leave_time cs_now_ns",
    "call site": """cs_site_enter cs_site_leave cs_site_slow cs_site_passthrough
        cs_site_credit cs_site_note cs_site_program""",
    "trace record": """cs_trace cs_trace_coll cs_comm_id trace_flush flush append site_insert
        cs_trace_site_begin buffer_of new_buffer""",
}
FUNCTION_HOOK = {name: hook for hook, names in HOOKS.items() for name in names.split()}
#: Lines of a function that belong to another hook (the library before the hooks
#: were split into functions of their own: cs_count_message counted bytes, the bin
#: and the peer in one body).
LINE_HOOKS = {
    "cs_count_message": (
        ("cs_count_bin", "size bin"),
        ("cs_world_of", "peer entry"),
        ("cs_peer(", "peer entry"),
        ("p[", "peer entry"),
        ("w >= 0", "peer entry"),
        ("CS_SET_PEERS", "peer entry"),
    ),
    "cs_leave_time": (("cs_tl_bin", "size bin"), ("*bt", "size bin"), ("if (bt)", "size bin")),
}

CONFIGS = {
    "default": ("default", False),
    "no_timers": ("bytes,peers,bins,requests,pvars", False),
    "callsites": ("default", True),
    "trace": ("default,trace", False),
}
PHASES = {"blocking_8": 2, "blocking_1k": 2, "nonblocking_8": 3}  # wrapped calls per iteration
SYSTEM_OBJECTS = re.compile(r"(^|/)(libc[.-]|ld-linux|libpthread|libdl|librt|linux-vdso|\[vdso\])")


# ---- which hook a source line belongs to --------------------------------------------

_FUNC_START = re.compile(r"^(?!\s|#|/|\*|}|typedef|struct|enum|union)[^;=]*?\b([A-Za-z_]\w*)\s*\(")


def source_functions(path):
    """[(first line, last line, name)] of the function bodies of a C file: a definition
    starts at column 0 and its body ends with '}' at column 0."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []
    out, i = [], 0
    while i < len(lines):
        m = _FUNC_START.match(lines[i])
        if m and not lines[i].rstrip().endswith(";"):
            j = i
            while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and "{" in lines[j] and not lines[j].rstrip().endswith("};"):
                k = j
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                out.append((i + 1, k + 1, m.group(1)))
                i = k + 1
                continue
        i += 1
    return out


class HookMap:
    """(file, line) -> hook, from the sources the debug information names."""

    def __init__(self):
        self.files = {}

    def hook(self, path, line):
        if path not in self.files:
            try:
                text = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                text = []
            self.files[path] = (source_functions(path), text)
        funcs, text = self.files[path]
        for first, last, name in funcs:
            if first <= line <= last:
                for needle, hook in LINE_HOOKS.get(name, ()):
                    if 0 < line <= len(text) and needle in text[line - 1]:
                        return hook
                return FUNCTION_HOOK.get(name, "wrapper")
        return "wrapper"


# ---- callgrind's output format --------------------------------------------------------


def _compressed(table, value):
    """callgrind's name compression: "(12) name" defines id 12, "(12)" refers to it."""
    m = re.match(r"\((\d+)\)\s*(.*)", value)
    if not m:
        return value
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), "?")


def parse_dump(path, hooks):
    """(trigger, events, {hook: [counts per event]}, {(file, line, hook): first event})
    of one callgrind dump: the library's
    own instructions by hook, plus what its code spent in libc (calls into the MPI and
    everything else left out)."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    trigger, events, per_hook, per_line = None, [], {}, {}
    ob = fl = fi = cob = None
    last_line = 0
    pending_call = False
    ours = False
    for raw in Path(path).read_text(errors="replace").splitlines():
        if not raw or raw.startswith("#"):
            continue
        if raw.startswith("desc: Trigger:"):
            trigger = (
                raw.split("Client Request:", 1)[-1].strip() if "Client Request" in raw else raw
            )
            continue
        if raw.startswith("events:"):
            events = raw.split()[1:]
            continue
        key, eq, value = raw.partition("=")
        if eq and key in ("ob", "fl", "fi", "fe", "fn", "cob", "cfi", "cfl", "cfn", "calls"):
            if key == "ob":
                ob = _compressed(names["ob"], value)
                ours = "libcommscope" in Path(ob).name
            elif key == "fl":
                fl = fi = _compressed(names["fl"], value)
            elif key in ("fi", "fe"):
                fi = _compressed(names["fl"], value)
            elif key == "fn":
                _compressed(names["fn"], value)
                fi = fl
            elif key == "cob":
                cob = _compressed(names["ob"], value)
            elif key in ("cfi", "cfl"):
                _compressed(names["fl"], value)
            elif key == "cfn":
                _compressed(names["fn"], value)
            elif key == "calls":
                pending_call = True
            continue
        if not (raw[0].isdigit() or raw[0] in "+-*"):
            continue  # summary:, totals:, positions:, ...
        parts = raw.split()
        pos = parts[0]
        if pos == "*":
            line = last_line
        elif pos[0] in "+-":
            line = last_line + int(pos)
        else:
            line = int(pos, 0)
        last_line = line
        costs = [int(x) for x in parts[1:]]
        if pending_call:  # the inclusive cost of the call just named
            pending_call = False
            callee = cob if cob is not None else ob
            cob = None
            if not (ours and callee and SYSTEM_OBJECTS.search(callee)):
                continue
        elif not ours:
            continue
        hook = hooks.hook(fi, line) if fi and fi != "???" else "wrapper"
        acc = per_hook.setdefault(hook, [0] * len(events))
        for i, c in enumerate(costs):
            acc[i] += c
        where = (fi, line, hook)
        per_line[where] = per_line.get(where, 0) + (costs[0] if costs else 0)
    return trigger, events, per_hook, per_line


# ---- running the program -----------------------------------------------------------


def skip(reason):
    print(f"skipped: {reason}", file=sys.stderr)
    sys.exit(SKIPPED)


def valgrind_ready(mpicc):
    """None when valgrind and its callgrind.h are there, else why not."""
    if not shutil.which("valgrind"):
        return "valgrind is not installed"
    probe = subprocess.run(
        [mpicc, "-E", "-x", "c", "-"],
        input="#include <valgrind/callgrind.h>\n",
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return "valgrind/callgrind.h is missing (valgrind's headers)"
    return None


def compile_program(m, out_dir):
    exe = Path(out_dir) / f"hotpath-{m.name}"
    subprocess.run([m.mpicc, "-O2", "-g", str(PROGRAM), "-o", str(exe)], check=True)
    return exe


def measure(m, lib, exe, config, iters, phases, cache=False, tmp=None):
    """{phase: {"events": [...], "calls": n, "hooks": {hook: [per event]}}} of one job."""
    from commscope import launch

    counters, sites = CONFIGS[config]
    out = Path(tempfile.mkdtemp(prefix=f"hp-{config}-", dir=tmp))
    env = [
        f"LD_PRELOAD={lib}",
        f"COMMSCOPE_COUNTERS={counters}",
        f"COMMSCOPE_PROFILE_DIR={out}/profile",
        "COMMSCOPE_SNAPSHOT_MS=0",
        *(["COMMSCOPE_CALLSITES=1"] if sites else []),
    ]
    vg = [
        "--tool=callgrind",
        "--instr-atstart=no",
        "--trace-children=yes",
        f"--callgrind-out-file={out}/cg.%p",
        *(["--cache-sim=yes"] if cache else []),
        shutil.which("env"),
        *env,
        str(exe),
        str(iters),
        *phases,
    ]
    plan = launch.plan_launch(m, 2, shutil.which("valgrind"), vg, bind="none")
    res = launch.run_job(plan, echo=False, progress=False, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(
            f"hotpath under callgrind failed ({m.name}, {config}):\n{res.stderr[-3000:]}"
        )
    hooks = HookMap()
    result = {}
    for dump in sorted(out.glob("cg.*.*")):
        trigger, events, per_hook, per_line = parse_dump(dump, hooks)
        if trigger not in phases:
            continue
        r = result.setdefault(trigger, {"events": events, "calls": 0, "hooks": {}, "lines": {}})
        r["calls"] += PHASES[trigger] * iters
        for where, c in per_line.items():
            r["lines"][where] = r["lines"].get(where, 0) + c
        for hook, costs in per_hook.items():
            acc = r["hooks"].setdefault(hook, [0] * len(events))
            for i, c in enumerate(costs):
                acc[i] += c
    missing = [p for p in phases if p not in result or result[p]["calls"] != 2 * PHASES[p] * iters]
    if missing:
        raise RuntimeError(
            f"hotpath under callgrind: no dump of both ranks for {', '.join(missing)} in {out}"
        )
    shutil.rmtree(out, ignore_errors=True)
    return result


def per_call(r, event="Ir"):
    """{hook: count per call} and the total, for one event."""
    i = r["events"].index(event)
    hooks = {h: r["hooks"].get(h, [0] * len(r["events"]))[i] / r["calls"] for h in HOOK_ORDER}
    others = set(r["hooks"]) - set(HOOK_ORDER)
    assert not others, others
    return hooks, sum(hooks.values())


def clock_cost(out_dir):
    """{name: ns} from tests/programs/clock_cost.c (compiled with the system's cc)."""
    exe = Path(out_dir) / "clock_cost"
    subprocess.run(
        [shutil.which("cc") or "gcc", "-O2", str(CLOCK_PROGRAM), "-o", str(exe)], check=True
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {
        name: float(v) for name, v in (line.split() for line in out.splitlines() if line.strip())
    }


def rows_of(mpi_name, config, result, cache):
    rows = []
    for phase, r in result.items():
        hooks, total = per_call(r)
        row = {
            "mpi": mpi_name,
            "config": config,
            "phase": phase,
            "calls": r["calls"],
            "Ir_per_call": round(total, 1),
        }
        row.update({h: round(v, 1) for h, v in hooks.items()})
        if cache:
            for name, evs in (
                ("D1_miss_per_call", ("D1mr", "D1mw")),
                ("LL_miss_per_call", ("DLmr", "DLmw")),
            ):
                row[name] = round(sum(per_call(r, e)[1] for e in evs), 3)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mpi", default="openmpi,mpich", help="comma list (default %(default)s)")
    ap.add_argument(
        "--configs",
        default="default,no_timers,callsites,trace",
        help=f"comma list of {', '.join(CONFIGS)} (default %(default)s)",
    )
    ap.add_argument("--phases", default=",".join(PHASES), help="comma list (default %(default)s)")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--lib", default=None, help="another libcommscope.so ({mpi}: the MPI's name)")
    ap.add_argument(
        "--cache", action="store_true", help="simulate the caches: data misses per call"
    )
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    ap.add_argument(
        "--record",
        default=None,
        help="write the default path's instructions per call here (regression guard)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="Open MPI, default counters, 200 iterations"
    )
    ap.add_argument(
        "--clock",
        action="store_true",
        help="also time a clock read on this machine (rdtsc beside a memcpy; clock_gettime)",
    )
    ap.add_argument(
        "--lines",
        type=int,
        default=0,
        metavar="N",
        help="also print the N source lines with the most instructions per call, per phase",
    )
    a = ap.parse_args()
    if a.quick:
        a.mpi, a.configs, a.iters = "openmpi", "default", 200
    configs = [c for c in a.configs.split(",") if c]
    phases = [p for p in a.phases.split(",") if p]
    bad = [c for c in configs if c not in CONFIGS] + [p for p in phases if p not in PHASES]
    if bad:
        ap.error(f"unknown configuration or phase: {', '.join(bad)}")
    from commscope import mpi as mpimod
    from commscope.output import format_table

    rows = []
    with tempfile.TemporaryDirectory(prefix="cs-hotpath-") as tmp:
        for spec in (x for x in a.mpi.split(",") if x):
            m = mpimod.select_mpi(spec)
            reason = valgrind_ready(m.mpicc)
            if reason:
                skip(reason)
            lib = (
                Path(a.lib.replace("{mpi}", m.name))
                if a.lib
                else mpimod.build(m, target="commscope") / "libcommscope.so"
            )
            if not lib.is_file():
                sys.exit(f"--lib: {lib}: no such library")
            exe = compile_program(m, tmp)
            for config in configs:
                try:
                    result = measure(m, lib, exe, config, a.iters, phases, a.cache, tmp)
                except RuntimeError as e:
                    sys.exit(str(e))
                rows += rows_of(m.name, config, result, a.cache)
                for phase, r in result.items() if a.lines else ():
                    print(
                        f"# {m.name} {config} {phase}: the {a.lines} costliest lines, instructions per call"
                    )
                    top = sorted(r["lines"].items(), key=lambda kv: -kv[1])[: a.lines]
                    for (f, line, hook), c in top:
                        print(f"#   {c / r['calls']:7.2f}  {Path(f or '?').name}:{line}  ({hook})")
                print(f"{m.name}: {config} done", file=sys.stderr)
    cols = ["mpi", "config", "phase", "Ir_per_call", *HOOK_ORDER]
    if a.cache:
        cols += ["D1_miss_per_call", "LL_miss_per_call"]
    print(
        format_table(
            [{c: r[c] for c in cols} for r in rows],
            title=f"libcommscope instructions per wrapped MPI call (callgrind, 2 ranks, "
            f"{a.iters} iterations per phase, steady state)",
        )
    )
    clock = None
    if a.clock:
        with tempfile.TemporaryDirectory(prefix="cs-clock-") as tmp:
            clock = clock_cost(tmp)
        print()
        print("# a clock read on this machine, ns (best of 9 x 2,000,000; times, not instructions)")
        for name, ns in clock.items():
            print(f"{name:32s} {ns:7.2f}")
    if a.json:
        Path(a.json).write_text(
            json.dumps({"rows": rows, "clock_ns": clock} if clock else rows, indent=1) + "\n"
        )
    if a.record:
        ref = {
            "what": "libcommscope instructions per wrapped MPI call, default counters "
            "(timers included), steady state, scripts/hotpath_instructions.py",
            "iters": a.iters,
            "figures": {
                f"{r['mpi']}/{r['phase']}": r["Ir_per_call"]
                for r in rows
                if r["config"] == "default"
            },
        }
        Path(a.record).write_text(json.dumps(ref, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
