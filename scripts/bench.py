#!/usr/bin/env python3
"""Run every benchmark and figure script in scripts/ (what `make bench` does).

    .venv/bin/python scripts/bench.py [--quick] [--out DIR] [--timeout S] [SCRIPT ...]

Runs the scripts of SCRIPTS below one after the other (never two MPI jobs at once), each
as its own process with this interpreter, with ``--quick`` (and QUICK_EXTRA) under
--quick.  A script's stdout (its table) goes to OUT/<script>.txt and its stderr to
OUT/<script>.log; OUT is build/bench/ for the quick pass (`make bench QUICK=1`) and
build/bench/full/ for the full pass (`make bench`), whose outputs are the figures the
docs cite.  Prints one line per script (status and wall time) and the total; a script
that exits 3 with a line "skipped: <reason>" on stderr lacks something it needs (LAMMPS,
PyPI, the OpenMP runtime, ...) and is reported as skipped.  Exits 1 naming the scripts
that failed, after running all the others; 0 when none failed.

The figures of a pass are kept and checked against the pass before (docs/compare.md,
"commscope itself"): each script runs with COMMSCOPE_BENCH_FIGURES set, the figures it
records (commscope.compare.figures.record, every repetition a sample) and its wall time
go to OUT/<script>.figures.json, and the outputs of its previous run move to
OUT/previous/ first.  At the end the figures of the scripts just run are compared with
those of the previous pass (`commscope compare --bench OUT/previous OUT`, written to
OUT/compare.txt) and the figures that moved beyond their noise are named.  A figure
that moved does not fail the pass: the machine is shared.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from commscope.compare import figures as bench_figures  # noqa: E402

#: Exit status of a script that cannot run here (its stderr says "skipped: <reason>").
SKIPPED = 3

#: The scripts `make bench` runs, in this order: name -> (uses MPI, what its quick mode
#: runs).  The quick pass runs each as `scripts/<name>.py --quick` plus QUICK_EXTRA.
#: Every scripts/*.py is one of these or in NOT_BENCHMARKS (tests/test_scripts_quick.py).
SCRIPTS = {
    "paper_examples": (False, "the same tables (no measurement: paper value vs model)"),
    "gen_counter_docs": (
        False,
        "checks that the counter and settings tables of docs/counters.md and docs/profile.md are current (writes nothing)",
    ),
    "bench_bootstrap": (False, "200 replicas at 256 ranks, 20 intervals; the paper tables"),
    "bench_arrivals": (False, "1 trial (76,800 samples) once; paper table, 200 replicas"),
    "matchsim_throughput": (False, "2,000 messages, once per engine and stream"),
    "bench_startup": (False, "each command once, this tree only"),
    "house_figures": (False, "the same figures (reads git, measures nothing)"),
    "ompt_overhead": (
        True,
        "2,000 regions, 1 repeat, a short bench threads under the tool "
        "(skips without the OMPT runtime)",
    ),
    "compare_mpi4py": (True, "1 B .. 64 KiB, 50 iterations, plain and huge pages, mpi4py"),
    "profile_overhead": (True, "Open MPI, 1 round of the 5 configurations, 1 B .. 64 KiB"),
    "hotpath_instructions": (
        True,
        "Open MPI, default counters, 200 iterations per phase under "
        "callgrind (skips without valgrind)",
    ),
    "measure_gamma": (
        True,
        "HighVolumePingPong n = 1 .. 100, 1 iteration, both wheels; short ping-pong",
    ),
    "measure_arrivals": (True, "4 cs_threads jobs of 20 iterations (spin, sleep)"),
    "measure_stop": (True, "Open MPI only, one kill per signal"),
    "multirate_profile": (True, "2 threads, 1 repetition, both modes, profiled"),
    "diagnose_programs": (
        True,
        "each diagnose test program once unfixed, once fixed, "
        "a quarter of its iterations, Open MPI",
    ),
    "diagnose_scaling": (
        True,
        "8 ranks, 10 iterations of the traced ring: diagnose and report timed",
    ),
    "diagnose_scale": (
        True,
        "64 synthetic traced ranks (a 2-rank profile for the layout): diagnose timed",
    ),
    "variability_study": (True, "ftq at 1 and 2 ranks, 20 intervals, 500 replicas"),
    "coverage_study": (True, "4 pairs of 1- and 2-rank runs of 60 intervals, ftq and dgemm"),
    "partitioned_study": (True, "variability 0.1, 1 run at 4 sizes; short ping-pong fit"),
    "advise_check": (True, "256 KiB and 1 MiB, 3 runs (skips without the OMPT runtime)"),
    "earlybird_check": (
        True,
        "both programs, both compute kinds, 3 imbalance levels, 1 run a side, Open MPI, "
        "fewer iterations (skips without the OMPT runtime)",
    ),
    "profile_scaling": (True, "8 ranks, 1 round; 1024 synthetic ranks; reports"),
    "validate_lammps": (True, "shorter LAMMPS inputs (skips without Debian's lmp)"),
    "validate_diagnose_apps": (
        True,
        "LAMMPS 300 and GROMACS 600 steps, 1 run a variant alone and 1 profiled "
        "(skips without Debian's lmp and gmx_mpi)",
    ),
    "conformance": (True, "2 mpi4py test modules, Open MPI (skips without PyPI)"),
    "export_sizes": (True, "2 threads, a ring of 2 ranks x 100 iterations, both formats"),
    "fuzz_runs": (True, "60 damaged-input cases, 2 through python -m commscope"),
}

#: Arguments the quick pass adds after --quick: conformance's own --quick (14 modules,
#: both MPIs: 5 minutes here) is what tests/test_conformance.py runs.
QUICK_EXTRA = {"conformance": ["--mpi", "openmpi", "--modules", "test_request,test_p2p_buf_part"]}

#: scripts/*.py that are not benchmarks: this driver; the report's checks in a browser
#: (tests/test_report_browser.py runs report_browser_check and report_scan;
#: `make screenshots` runs report_screenshots).
NOT_BENCHMARKS = {"bench", "report_browser_check", "report_scan", "report_screenshots"}


def skip_reason(log):
    """The "skipped: ..." line of a script's stderr (else its last line)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("skipped:"):
            return ln.removeprefix("skipped:").strip()
    return lines[-1] if lines else "no reason given"


def _shown(path):
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def quick_args(name, quick=True):
    """The arguments of scripts/<name>.py in the quick pass (none in the full pass)."""
    return ["--quick", *QUICK_EXTRA.get(name, [])] if quick else []


#: The outputs of one script in OUT: moved to OUT/previous/ before it runs again.
OUTPUTS = (".txt", ".log", ".figures.json")


def keep_previous(name, out):
    """Move the outputs of ``name``'s last run in ``out`` to ``out/previous/`` (replacing
    the ones there): the last two passes stay on disk."""
    if not (out / f"{name}.txt").exists():
        return
    prev = out / "previous"
    prev.mkdir(exist_ok=True)
    for ext in OUTPUTS:
        src = out / f"{name}{ext}"
        if src.exists():
            shutil.move(str(src), str(prev / f"{name}{ext}"))
        else:
            (prev / f"{name}{ext}").unlink(missing_ok=True)


def write_figures(name, out, recorded, status, seconds, quick):
    """OUT/<name>.figures.json: the figures the script recorded, and its wall time."""
    doc = bench_figures.collect(
        recorded,
        name,
        status,
        seconds,
        "quick" if quick else "full",
        loadavg=os.getloadavg(),
        end_time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    (out / f"{name}.figures.json").write_text(json.dumps(doc, indent=1) + "\n")
    recorded.unlink(missing_ok=True)


def run_one(name, quick, out, timeout=None, env=None):
    """Run scripts/<name>.py; returns (status, seconds, detail).  status: "ok", "skipped",
    "failed"; stdout -> out/<name>.txt, stderr -> out/<name>.log, its figures ->
    out/<name>.figures.json (the previous run's outputs -> out/previous/)."""
    cmd = [sys.executable, str(ROOT / "scripts" / f"{name}.py"), *quick_args(name, quick)]
    keep_previous(name, out)
    txt, log = out / f"{name}.txt", out / f"{name}.log"
    recorded = out / f"{name}.figures.jsonl"
    recorded.unlink(missing_ok=True)
    env = dict(os.environ if env is None else env, **{bench_figures.ENV: str(recorded)})
    t0 = time.perf_counter()
    with open(txt, "w") as fo, open(log, "w") as fe:
        try:
            rc = subprocess.run(
                cmd,
                stdout=fo,
                stderr=fe,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env=env,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = None
    dt = time.perf_counter() - t0
    status = (
        "failed"
        if rc not in (0, SKIPPED) or (rc == 0 and not txt.stat().st_size)
        else "skipped"
        if rc == SKIPPED
        else "ok"
    )
    write_figures(name, out, recorded, status, dt, quick)
    if rc is None:
        return "failed", dt, f"timed out after {timeout:g} s; see {_shown(log)}"
    if rc == SKIPPED:
        return "skipped", dt, skip_reason(log.read_text(errors="replace"))
    if rc != 0:
        return "failed", dt, f"exit {rc}; see {_shown(log)}"
    if not txt.stat().st_size:
        return "failed", dt, f"printed nothing; see {_shown(log)}"
    return "ok", dt, str(_shown(txt))


def against_previous(out, names):
    """Compare the figures of ``names`` with the previous pass's; print the figures that
    moved beyond their noise, write the whole comparison to OUT/compare.txt."""
    prev = out / "previous"
    shared = [
        n
        for n in names
        if (prev / f"{n}.figures.json").exists() and (out / f"{n}.figures.json").exists()
    ]
    if not shared:
        print("bench: no previous pass of these scripts to compare with (the next pass will)")
        return
    import io
    import tempfile
    from commscope.compare.figures import compare_dirs
    from commscope.compare.text import render
    from commscope.errors import InputError

    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "previous"), Path(tmp, "current")
        a.mkdir(), b.mkdir()
        for n in shared:
            shutil.copy(prev / f"{n}.figures.json", a)
            shutil.copy(out / f"{n}.figures.json", b)
        try:
            comparison = compare_dirs(a, b)
        except InputError as exc:
            print(f"bench: cannot compare with the previous pass: {exc}")
            return
    comparison["before"]["runs"], comparison["after"]["runs"] = (
        [str(_shown(prev))],
        [str(_shown(out))],
    )
    text = io.StringIO()
    render(comparison, text, top=1000)
    (out / "compare.txt").write_text(text.getvalue())
    moved = [f for f in comparison["figures"] if f["beyond_noise"]]
    print(
        f"bench: against the previous pass ({len(shared)} scripts, "
        f"{len(comparison['figures'])} figures): "
        + (
            f"{len(moved)} moved beyond their noise: "
            + "; ".join(
                f"{f['figure']} {f['ratio']:.3g}x" if f.get("ratio") is not None else f["figure"]
                for f in moved[:8]
            )
            + (" ..." if len(moved) > 8 else "")
            if moved
            else "none moved beyond its noise"
        )
        + f" (see {_shown(out / 'compare.txt')})"
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="each script's --quick mode")
    ap.add_argument(
        "--out", default=None, help="output directory (default build/bench, or build/bench/full)"
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per script (default: 600 with --quick, none without)",
    )
    ap.add_argument("--list", action="store_true", help="list the scripts and exit")
    ap.add_argument("scripts", nargs="*", metavar="SCRIPT", help="only these (default: all)")
    a = ap.parse_args(argv)
    if a.list:
        for name, (uses_mpi, quick) in SCRIPTS.items():
            print(
                f"{name:20s} {'MPI' if uses_mpi else '   '}  {' '.join(quick_args(name))}: {quick}"
            )
        return 0
    names = [s.removesuffix(".py").removeprefix("scripts/") for s in a.scripts] or list(SCRIPTS)
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        ap.error(f"not a benchmark script: {', '.join(unknown)} (see --list)")
    out = Path(a.out) if a.out else ROOT / "build" / "bench" / ("" if a.quick else "full")
    out.mkdir(parents=True, exist_ok=True)
    timeout = a.timeout if a.timeout is not None else (600 if a.quick else None)
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=src + (os.pathsep + path if path else ""))
    print(
        f"bench: {len(names)} scripts, {'quick' if a.quick else 'full'} pass, outputs in "
        f"{_shown(out.resolve())}",
        flush=True,
    )
    failed, skipped, total = [], [], time.perf_counter()
    for name in names:
        print(f"  {name:20s} ", end="", flush=True)
        status, dt, detail = run_one(name, a.quick, out, timeout, env)
        print(f"{status:8s} {dt:7.1f} s  {detail}", flush=True)
        (failed if status == "failed" else skipped if status == "skipped" else []).append(name)
    total = time.perf_counter() - total
    against_previous(out, [n for n in names if n not in failed and n not in skipped])
    print(
        f"bench: {len(names) - len(failed) - len(skipped)} ok, {len(skipped)} skipped, "
        f"{len(failed)} failed in {total:.1f} s"
        + (f"; skipped: {', '.join(skipped)}" if skipped else "")
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
