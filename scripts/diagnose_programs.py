#!/usr/bin/env python3
"""The saving each fix brings: the `commscope diagnose` test programs, unfixed and fixed.

    scripts/diagnose_programs.py [PROGRAM ...] [--mpi openmpi|mpich] [--reps 3]
                                 [--unit S] [--iters N] [--idle-wait S] [--env K=V]
                                 [--runs DIR] [--json] [--quick]

Builds every program of tests/programs/diagnose (or those named; the registry is
tests/diagnose_cases.py) with the selected MPI's mpicc, runs each under `commscope
profile` (the options tests/diagnose_cases.py's profile_options gives: timers, call
sites, trace, and --ompt --threads T for the OpenMP ones) R times, alternating unfixed
and fixed so that a slow phase of the shared machine hits both, and prints per program:
the runtime unfixed and fixed (best of R; runtime = the largest wall_s of the run's
ranks table, MPI_Init to MPI_Finalize), the measured saving per iteration, the designed
one (from the registry, where the program's logic implies one) and their ratio, how many
of the unfixed runs `commscope diagnose` named the program's problem first in, and the
saving it predicted from them (the median over the unfixed runs) against the measured.  Where
the saving can only be measured (small_messages, queue_search) the last column gives
it per message or per comparison.  The load average before and after is printed below
the table (the machine is shared); before each run the script waits (--idle-wait, up
to 30 s) for a second in which the CPUs were less than 25 % busy, and says how many
runs started on a busy machine all the same.

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
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from diagnose_cases import CASES, DEFAULT_UNIT, compile_case, profile_options, program_args  # noqa: E402


def predicted_saving(case, run, unit, iters, machine_model=None):
    """What `commscope diagnose` says of ``run`` (a profile of the unfixed program):
    (the kind it names first, the saving per iteration it predicts for the program's
    own kind, in seconds; None when it has no finding of that kind)."""
    import commscope
    from commscope.diagnose.findings import diagnose

    d = diagnose(commscope.open(run.path), machine_model=machine_model)
    first = d.findings[0].kind if d.findings else None
    mine = next((f for f in d.findings if f.kind == case.first_finding), None)
    saving = mine.predicted_saving_s if mine is not None else None
    return first, (None if saving is None else saving / iters)


def fitted_machine_model(mpi_spec, runs, log):
    """This machine's model, measured now (a short ping-pong and HighVolumePingPong,
    fitted): the queue-search cost the queue_search program's prediction needs."""
    from commscope.bench.hvpingpong import run_hvpingpong
    from commscope.bench.pingpong import run_pingpong
    from commscope.machine_fit import fit_runs

    log("measuring this machine's model (ping-pong, HighVolumePingPong, fit)")
    kw = dict(
        runs_root=runs,
        echo=False,
        progress=False,
        timeout=600,
        **({"mpi_spec": mpi_spec} if mpi_spec else {}),
    )
    pp = run_pingpong(min_size=1, max_size=1 << 20, iters=500, warmup=50, **kw)
    hv = run_hvpingpong(counts=[1, 10, 100, 1000, 3000], iters=5, warmup=1, **kw)
    return fit_runs([pp.path, hv.path])


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


#: A run during which other users' processes took more than this share of the machine's
#: CPU time is "disturbed" (see measure).
DISTURBED = 0.1


def cpu_sample():
    """(machine CPU seconds, of them busy, CPU seconds of this process and its finished
    children), or None off Linux.  Busy minus ours over a run is what other users took."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    ours = sum(
        u.ru_utime + u.ru_stime
        for u in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )
    return sum(v) / hz, (sum(v) - v[3] - v[4]) / hz, ours


def others_share(before, after):
    """The share of the machine's CPU time other users' processes took between two
    cpu_sample()s (None when unknown)."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    total, busy, ours = (a - b for a, b in zip(after, before))
    return max(0.0, busy - ours) / total


def cpu_busy(interval=1.0):
    """Fraction of the machine's CPU time that was busy over ``interval`` seconds (from
    /proc/stat: every process of the machine, other users' too); None off Linux."""

    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(interval)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1 - (i1 - i0) / max(1, t1 - t0)


def wait_idle(max_wait, busy_below=0.25, log=None):
    """Wait up to ``max_wait`` s for a second in which the CPUs were less than
    ``busy_below`` busy (nothing of ours runs meanwhile); returns the last busy fraction."""
    deadline, busy = time.monotonic() + max_wait, None
    while True:
        busy = cpu_busy()
        if busy is None or busy < busy_below or time.monotonic() >= deadline:
            return busy
        if log:
            log(f"  waiting: the CPUs are {busy:.0%} busy")


def ompt_problem(mpi):
    """Why OMPT cannot time OpenMP programs here (None: it can)."""
    from commscope.errors import EnvironmentProblem
    from commscope.collect import ompt

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

    argv = [
        "profile",
        "--runs",
        str(runs),
        "--name",
        name,
        "--quiet",
        "--timeout",
        "300",
        *(["--mpi", mpi_spec] if mpi_spec else []),
        *profile_options(case, use_ompt),
        "--",
        str(exe),
        *program_args(case, fixed, iters, unit),
    ]
    before = cpu_sample()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    others = others_share(before, cpu_sample())
    run = open_run(Path(runs) / name)
    if code or run.meta.get("status") != "complete":
        raise SystemExit(
            f"{case.name}{' --fixed' if fixed else ''}: commscope profile exited "
            f"with status {code} (run {run.path}, status {run.meta.get('status')})"
        )
    return float(run.table("ranks")["wall_s"].max()), run, others


def measure(
    case, exe, reps, iters, unit, mpi_spec, runs, use_ompt, log, idle_wait=0, machine_model=None
):
    """R alternating pairs of runs of ``case``; returns its table row.  With
    ``idle_wait`` > 0, each run waits up to that long for the machine to be idle.  A run
    during which other users took more than DISTURBED of the CPUs is disturbed: the
    best of each variant is taken from the undisturbed runs when there are any."""
    times = {False: [], True: []}
    clean = {False: [], True: []}
    predicted, firsts, busy_starts = [], [], 0
    for rep in range(reps):
        for fixed in (False, True):
            variant = "fixed" if fixed else "unfixed"
            if idle_wait > 0:
                busy = wait_idle(idle_wait, log=log)
                busy_starts += busy is not None and busy >= 0.25
            t, run, others = profile_once(
                case,
                exe,
                fixed,
                iters,
                unit,
                mpi_spec,
                runs,
                f"{case.name}-{variant}-{rep}",
                use_ompt,
            )
            times[fixed].append(t)
            if others is None or others <= DISTURBED:
                clean[fixed].append(t)
            log(
                f"  {case.name} {variant} #{rep + 1}: {t:.3f} s"
                + ("" if others is None else f" (other users: {others:.0%} of the CPUs)")
            )
            if not fixed:
                first, p = predicted_saving(case, run, unit, iters, machine_model)
                firsts.append(first)
                if p is not None:
                    predicted.append(p)
    unfixed, fixed = (min(clean[v] or times[v]) for v in (False, True))
    per_iter = (unfixed - fixed) / iters
    designed = case.designed_saving(unit, iters)
    row = {
        "program": case.name,
        "ranks": case.ranks,
        "threads": case.threads,
        "iters": iters,
        "unit_s": unit,
        "unfixed_s": unfixed,
        "fixed_s": fixed,
        "saving_s": unfixed - fixed,
        "saving_per_iter_s": per_iter,
        "designed_per_iter_s": designed,
        "ratio": per_iter / designed if designed else None,
        "measured_per": None,
        "ompt": bool(case.needs_openmp and use_ompt),
        "unfixed_all_s": times[False],
        "fixed_all_s": times[True],
        "busy_starts": busy_starts,
        "disturbed": sum(len(times[v]) - len(clean[v]) for v in (False, True)),
    }
    if case.measured_per:
        label, count = case.measured_per
        from commscope.units import format_seconds

        row["measured_per"] = f"{format_seconds((unfixed - fixed) / count(iters))} {label}"
    # the prediction from each unfixed run: their median; named first in how many runs
    row["named_first"] = f"{sum(k == case.first_finding for k in firsts)}/{len(firsts)}"
    row["first_findings"] = firsts
    if predicted:
        row["predicted_per_iter_s"] = float(sorted(predicted)[len(predicted) // 2])
        row["predicted_ratio"] = row["predicted_per_iter_s"] / per_iter if per_iter else None
    return row


def text_table(rows, title):
    from commscope.output import format_table

    shown = []
    for r in rows:
        s = {
            "program": r["program"],
            "P x T": f"{r['ranks']} x {r['threads']}",
            "N": r["iters"],
            "unfixed_s": round(r["unfixed_s"], 3),
            "fixed_s": round(r["fixed_s"], 3),
            "saving_per_iter_s": r["saving_per_iter_s"],
            "designed_per_iter_s": r["designed_per_iter_s"],
            "ratio": None if r["ratio"] is None else round(r["ratio"], 2),
        }
        s["named_first"] = r.get("named_first")
        if any("predicted_per_iter_s" in x for x in rows):
            s["predicted_per_iter_s"] = r.get("predicted_per_iter_s")
            s["predicted_over_measured"] = (
                None if r.get("predicted_ratio") is None else round(r["predicted_ratio"], 2)
            )
        s["measured"] = r["measured_per"] or ""
        s["disturbed"] = r["disturbed"]
        shown.append(s)
    return format_table(shown, title=title)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "programs",
        nargs="*",
        metavar="PROGRAM",
        help=f"programs to run (default all: {', '.join(CASES)})",
    )
    ap.add_argument("--mpi", default=None, help="openmpi (default) or mpich")
    ap.add_argument("--reps", type=int, default=3, help="runs of each variant (default 3)")
    ap.add_argument(
        "--unit",
        type=float,
        default=DEFAULT_UNIT,
        help="the work unit U in seconds (default %(default)s)",
    )
    ap.add_argument(
        "--iters",
        type=int,
        default=None,
        help="iterations of every program (default: each program's own)",
    )
    ap.add_argument(
        "--runs",
        default=None,
        help="keep the runs here (default: a temporary directory, removed at the end)",
    )
    ap.add_argument(
        "--idle-wait",
        type=float,
        default=30,
        metavar="S",
        help="before each run, wait up to S seconds for a second in which the "
        "CPUs were less than 25%% busy (other users' jobs; default "
        "%(default)s, 0 under --quick: no wait)",
    )
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set NAME=VALUE for the profiled programs (repeatable; the "
        "launcher passes this script's environment to the ranks), e.g. "
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 for MPICH on oversubscribed cores",
    )
    ap.add_argument(
        "--machine-model",
        default=None,
        metavar="FILE",
        help="machine model for the predictions (queue_search needs its "
        "queue-search cost); default: measured now (about 30 s), none "
        "under --quick",
    )
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument(
        "--quick", action="store_true", help="once each way, a quarter of the iterations"
    )
    args = ap.parse_args(argv)
    unknown = [p for p in args.programs if p not in CASES]
    if unknown:
        ap.error(f"unknown program {', '.join(unknown)} (one of {', '.join(CASES)})")
    if args.reps < 1 or not args.unit > 0 or (args.iters is not None and args.iters < 1):
        ap.error("--reps and --iters must be >= 1, --unit > 0")
    env = dict(e.split("=", 1) for e in args.env if "=" in e)
    if len(env) != len(args.env) or not all(env):
        ap.error("--env takes NAME=VALUE")
    os.environ.update(env)
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
        print(
            f"note: without OMPT ({no_ompt}): OpenMP programs run without --ompt", file=sys.stderr
        )
    tmp = tempfile.mkdtemp(prefix="diag-programs-")
    runs = Path(args.runs) if args.runs else Path(tmp) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    log = lambda line: print(line, file=sys.stderr, flush=True)
    rows = []
    load_before, t0 = loadavg(), time.perf_counter()
    try:
        if args.machine_model:
            from commscope.models.machine_model import load_machine_model

            machine_model = load_machine_model(args.machine_model)
        elif not args.quick and any(c.name == "queue_search" for c in cases):
            machine_model = fitted_machine_model(args.mpi, runs, log)
        else:
            machine_model = None
        for case in cases:
            exe = compile_case(case, mpi, tmp)
            iters = args.iters or (max(case.ranks, case.iters // 4) if args.quick else case.iters)
            rows.append(
                measure(
                    case,
                    exe,
                    reps,
                    iters,
                    args.unit,
                    args.mpi,
                    runs,
                    no_ompt is None,
                    log,
                    0 if args.quick else args.idle_wait,
                    machine_model,
                )
            )
    finally:
        if not args.runs:
            shutil.rmtree(tmp, ignore_errors=True)
    load_after = loadavg()
    info = {
        "mpi": mpi.name,
        "env": env,
        "reps": reps,
        "unit_s": args.unit,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "seconds": round(time.perf_counter() - t0, 1),
        "cores": os.cpu_count(),
    }
    if args.json:
        print(json.dumps({**info, "rows": rows}, indent=1))
        return 0
    print(
        text_table(
            rows,
            f"diagnose programs under commscope profile, {mpi.name}, "
            f"U = {args.unit * 1e3:g} ms, best of {reps}"
            + "".join(f", {k}={v}" for k, v in env.items()),
        )
    )
    busy = sum(r["busy_starts"] for r in rows)
    disturbed = sum(r["disturbed"] for r in rows)
    print(
        f"load average {load_before} before, {load_after} after; {info['cores']} cores; "
        f"{info['seconds']} s"
        + (
            f"; {busy} of {2 * reps * len(rows)} runs started on a busy machine (over "
            f"25% busy after {args.idle_wait:g} s of waiting)"
            if busy
            else ""
        )
        + (
            f"; {disturbed} runs disturbed (other users took over {DISTURBED:.0%} of the "
            "CPUs; a variant's best is of its undisturbed runs when it has any)"
            if disturbed
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
