#!/usr/bin/env python3
"""The saving each fix brings: the `commscope diagnose` test programs, unfixed and fixed.

    scripts/diagnose_programs.py [PROGRAM ...] [--mpi openmpi|mpich] [--reps 3]
                                 [--unit S] [--iters N] [--runs DIR] [--json] [--quick]

Builds every program of tests/programs/diagnose (or those named; the registry is
tests/diagnose_cases.py) with the selected MPI's mpicc, runs each under `commscope
profile` (the options tests/diagnose_cases.py's profile_options gives: timers, call
sites, trace, and --ompt --threads T for the OpenMP ones) R times, alternating unfixed
and fixed so that a slow phase of the shared machine hits both, and prints per program:
the runtime unfixed and fixed (best of R; runtime = the largest wall_s of the run's
ranks table, MPI_Init to MPI_Finalize), the measured saving per iteration, the designed
one (from the registry, where the program's logic implies one) and their ratio.  Where
the saving can only be measured (small_messages, queue_search) the last column gives
it per message or per comparison.  The load average before and after is printed below
the table (the machine is shared).  `predicted_saving` below is where the saving
`commscope diagnose` predicts from the unfixed run will come in.

--quick (what `make bench QUICK=1` runs): every program once each way, a quarter of
its iterations.  Runs go to a temporary directory unless --runs is given.
Exit status 3 ("skipped: ...") when the OpenMP programs cannot be timed with OMPT and
only OpenMP programs were asked for.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from diagnose_cases import CASES, DEFAULT_UNIT, compile_case, profile_options, program_args  # noqa: E402


def predicted_saving(case, run, unit, iters):
    """The saving per iteration `commscope diagnose` predicts from ``run`` (a profile of
    the unfixed program), in seconds; None until diagnose exists.

    This is the place for the diagnose author: return the predicted saving of the
    first finding (and the table gains a ``predicted_s`` column and its ratio to the
    measured saving)."""
    return None


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def ompt_problem(mpi):
    """Why OMPT cannot time OpenMP programs here (None: it can)."""
    from commscope.errors import EnvironmentProblem
    from commscope.profile import ompt
    if ompt.runtime_library() is None:
        return "no libiomp5.so (the intel-openmp wheel; scripts/setup.sh installs it)"
    try:
        ompt.tool_library(mpi)
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def profile_once(case, exe, fixed, iters, unit, mpi_spec, runs, name, use_ompt):
    """One profiled run; returns (runtime in s, the run)."""
    from commscope.cli import main
    from commscope.runs import open_run
    argv = ["profile", "--runs", str(runs), "--name", name, "--quiet", "--timeout", "300",
            *(["--mpi", mpi_spec] if mpi_spec else []), *profile_options(case, use_ompt),
            "--", str(exe), *program_args(case, fixed, iters, unit)]
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    run = open_run(Path(runs) / name)
    if code or run.meta.get("status") != "complete":
        raise SystemExit(f"{case.name}{' --fixed' if fixed else ''}: commscope profile exited "
                         f"with status {code} (run {run.path}, status {run.meta.get('status')})")
    return float(run.table("ranks")["wall_s"].max()), run


def measure(case, exe, reps, iters, unit, mpi_spec, runs, use_ompt, log):
    """R alternating pairs of runs of ``case``; returns its table row."""
    times = {False: [], True: []}
    predicted = []
    for rep in range(reps):
        for fixed in (False, True):
            variant = "fixed" if fixed else "unfixed"
            t, run = profile_once(case, exe, fixed, iters, unit, mpi_spec, runs,
                                  f"{case.name}-{variant}-{rep}", use_ompt)
            times[fixed].append(t)
            log(f"  {case.name} {variant} #{rep + 1}: {t:.3f} s")
            if not fixed:
                p = predicted_saving(case, run, unit, iters)
                if p is not None:
                    predicted.append(p)
    unfixed, fixed = min(times[False]), min(times[True])
    per_iter = (unfixed - fixed) / iters
    designed = case.designed_saving(unit, iters)
    row = {"program": case.name, "ranks": case.ranks, "threads": case.threads,
           "iters": iters, "unit_s": unit, "unfixed_s": unfixed, "fixed_s": fixed,
           "saving_s": unfixed - fixed, "saving_per_iter_s": per_iter,
           "designed_per_iter_s": designed,
           "ratio": per_iter / designed if designed else None,
           "measured_per": None, "ompt": bool(case.needs_openmp and use_ompt),
           "unfixed_all_s": times[False], "fixed_all_s": times[True]}
    if case.measured_per:
        label, count = case.measured_per
        row["measured_per"] = f"{(unfixed - fixed) / count(iters):.3g} {label}"
    if predicted:
        row["predicted_per_iter_s"] = min(predicted)
        row["predicted_ratio"] = row["predicted_per_iter_s"] / per_iter if per_iter else None
    return row


def text_table(rows, title):
    from commscope.output import format_table
    shown = []
    for r in rows:
        s = {"program": r["program"], "P x T": f"{r['ranks']} x {r['threads']}",
             "N": r["iters"], "unfixed_s": round(r["unfixed_s"], 3),
             "fixed_s": round(r["fixed_s"], 3),
             "saving_per_iter_s": r["saving_per_iter_s"],
             "designed_per_iter_s": r["designed_per_iter_s"],
             "ratio": None if r["ratio"] is None else round(r["ratio"], 2)}
        if any("predicted_per_iter_s" in x for x in rows):
            s["predicted_per_iter_s"] = r.get("predicted_per_iter_s")
        s["measured"] = r["measured_per"] or ""
        shown.append(s)
    return format_table(shown, title=title)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", metavar="PROGRAM",
                    help=f"programs to run (default all: {', '.join(CASES)})")
    ap.add_argument("--mpi", default=None, help="openmpi (default) or mpich")
    ap.add_argument("--reps", type=int, default=3, help="runs of each variant (default 3)")
    ap.add_argument("--unit", type=float, default=DEFAULT_UNIT,
                    help="the work unit U in seconds (default %(default)s)")
    ap.add_argument("--iters", type=int, default=None,
                    help="iterations of every program (default: each program's own)")
    ap.add_argument("--runs", default=None, help="keep the runs here (default: a temporary "
                                                 "directory, removed at the end)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--quick", action="store_true",
                    help="once each way, a quarter of the iterations")
    args = ap.parse_args(argv)
    unknown = [p for p in args.programs if p not in CASES]
    if unknown:
        ap.error(f"unknown program {', '.join(unknown)} (one of {', '.join(CASES)})")
    if args.reps < 1 or not args.unit > 0 or (args.iters is not None and args.iters < 1):
        ap.error("--reps and --iters must be >= 1, --unit > 0")
    cases = [CASES[p] for p in args.programs or CASES]
    reps = 1 if args.quick else args.reps
    from commscope import mpi as mpimod
    mpi = mpimod.select_mpi(args.mpi)
    mpimod.build(mpi)
    no_ompt = ompt_problem(mpi) if any(c.needs_openmp for c in cases) else None
    if no_ompt and all(c.needs_openmp for c in cases):
        print(f"skipped: OpenMP programs cannot be timed with OMPT: {no_ompt}", file=sys.stderr)
        return 3
    if no_ompt:
        print(f"note: without OMPT ({no_ompt}): OpenMP programs run without --ompt",
              file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="diag-programs-")
    runs = Path(args.runs) if args.runs else Path(tmp) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    log = lambda line: print(line, file=sys.stderr, flush=True)
    rows = []
    load_before, t0 = loadavg(), time.perf_counter()
    try:
        for case in cases:
            exe = compile_case(case, mpi, tmp)
            iters = args.iters or (max(case.ranks, case.iters // 4) if args.quick
                                   else case.iters)
            rows.append(measure(case, exe, reps, iters, args.unit, args.mpi, runs,
                                no_ompt is None, log))
    finally:
        if not args.runs:
            shutil.rmtree(tmp, ignore_errors=True)
    load_after = loadavg()
    info = {"mpi": mpi.name, "reps": reps, "unit_s": args.unit, "loadavg_before": load_before,
            "loadavg_after": load_after, "seconds": round(time.perf_counter() - t0, 1),
            "cores": os.cpu_count()}
    if args.json:
        print(json.dumps({**info, "rows": rows}, indent=1))
        return 0
    print(text_table(rows, f"diagnose programs under commscope profile, {mpi.name}, "
                           f"U = {args.unit * 1e3:g} ms, best of {reps}"))
    print(f"load average {load_before} before, {load_after} after; {info['cores']} cores; "
          f"{info['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
