#!/usr/bin/env python3
"""The early-bird advice put to the test: predicted saving against a real rewrite.

    .venv/bin/python scripts/earlybird_check.py [--mpi openmpi,mpich]
        [--programs thread_imbalance,halo_threads] [--levels 0.1,0.5,2] [--unit 0.001]
        [--bytes 4194304] [--iters 200] [--repeats 7] [--variant both|auto|wait|poll]
        [--compute-kind busy,blocked] [--control] [--machine-model FILE] [--runs DIR] [--json]
        [--quick]

Two programs exist in a bulk-send version and an early-bird (MPI-4 partitioned) one:
tests/programs/diagnose/thread_imbalance.c (2 ranks x 2 threads, thread 0 works (1+K)U,
thread 1 U, then one MPI_Sendrecv of --bytes) and tests/programs/earlybird/halo_threads.c
(the bulk-synchronous halo of cs_bsp on a 2-rank periodic grid, thread t works
U (1 + K t), the halos to the neighbour as one message, --bytes per direction).  Their
--partitioned modes start MPI_Psend_init/MPI_Precv_init requests before the region, each
thread calls MPI_Pready on its partition as it finishes and polls MPI_Parrived for its
part of the incoming message; --partitioned-wait does not poll (the master's
MPI_Waitall progresses the transfer).

For each MPI, program, compute kind (busy: the threads spin; blocked: they sleep, the
programs' --blocked, a thread waiting for I/O or an accelerator) and imbalance level K
(a spread of K x U between the threads):

1. the bulk version runs R times under `commscope profile --ompt --threads 2`, and
   `commscope advise --compute-kind KIND` on the first run predicts the saving per iteration
   of partitioned sends (`--mpi-calls` for the poll variant, whose finished threads poll
   MPI_Parrived); the machine model is fitted from a ping-pong run and the progress probe
   (`bench progress`) with the same MPI, made first unless --machine-model is given, so
   the prediction is what this MPI's progress allows (predicted_saving_s; the model's,
   every partition moving at MPI_Pready: model_saving_s);
2. the partitioned version runs R times the same way, alternating with the bulk runs;
3. `commscope compare --statistic median` of the two sides measures the saving: the
   difference of the median run times (the largest wall_s of the ranks) divided by the
   iterations, with the bootstrap's 95 % interval and whether it is beyond the
   run-to-run noise (medians: on this shared machine one run in ten or so stalls for
   half a second, which moves a mean of a few runs, not a median of seven).

--control adds a third side: the bulk program under MPI_THREAD_MULTIPLE (its
--thread-multiple), the thread level the partitioned versions need, so that the cost of
the thread level is told from that of partitioned communication (column
thread_multiple_cost_s: its run time minus the bulk one's, per iteration).

It prints one row per MPI, program, variant, compute kind and level: predicted and
measured saving per iteration, their ratio (measured / predicted; 1: the advice holds),
both verdicts (helps: a saving of at least 10 us per iteration, the advisor's threshold,
measured beyond the noise; hurts: slower beyond the noise, predicted where the progress
probe's partitioned transfer is slower than one send by 10 us or more; else no gain) and whether the
predicted one is the measured one; and the load average before and after (the machine is
shared).  --variant both (default): every
variant that does not hang: poll and wait on MPICH, only wait on Open MPI, as polling
MPI_Parrived per partition hangs Open MPI 5.0's part/persist component (docs/compare.md);
auto: poll on MPICH, wait on Open MPI.

--quick (what `make bench QUICK=1` runs): Open MPI only, 1 run a side, 100 iterations,
a short ping-pong fit.  Without the OMPT runtime it prints "skipped: <reason>" and
exits 3.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from commscope.compare.core import compare  # noqa: E402
from commscope.compare.figures import record  # noqa: E402
from commscope.errors import EnvironmentProblem  # noqa: E402

SKIPPED = 3
PROGRAMS = {
    "thread_imbalance": ROOT / "tests" / "programs" / "diagnose" / "thread_imbalance.c",
    "halo_threads": ROOT / "tests" / "programs" / "earlybird" / "halo_threads.c",
}
#: Partitioned variants: the program option, and the MPIs it is run on by --variant auto.
VARIANTS = {"poll": "--partitioned", "wait": "--partitioned-wait"}
#: Open MPI 5.0's part/persist hangs when MPI_Parrived is polled per partition.
HANGS = {("openmpi", "poll")}


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def ompt_problem(mpi):
    from commscope.collect import ompt

    if ompt.runtime_library() is None:
        return "no libiomp5.so (the intel-openmp wheel; scripts/setup.sh installs it)"
    try:
        ompt.tool_library(mpi)
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def build(program, mpi, out):
    exe = Path(out) / f"{program}-{mpi.name}"
    cmd = [mpi.mpicc, "-O2", "-g", "-fopenmp", "-pthread", str(PROGRAMS[program]), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return exe


def machine_model(mpi_name, root, quick):
    from commscope.bench.pingpong import run_pingpong
    from commscope.bench.progress import run_progress
    from commscope.machine_fit import fit_runs
    from commscope.models.machine_model import save_machine_model

    short = dict(max_size=4 << 20, iters=100, warmup=10, large_iters=10, large_warmup=1)
    full = dict(max_size=8 << 20, iters=300, warmup=30, large_iters=50, large_warmup=5)
    pp = run_pingpong(
        mpi_spec=mpi_name,
        runs_root=root,
        echo=False,
        progress=False,
        timeout=600,
        **(short if quick else full),
    )
    probe = run_progress(mpi_spec=mpi_name, runs_root=root, echo=False, progress=False, timeout=600)
    path = Path(root) / f"machine-model-{mpi_name}.json"
    save_machine_model(fit_runs([pp.path, probe.path]), path)
    return path


def profile(exe, args, mpi_name, runs, name, timeout):
    """One `commscope profile --ompt --threads 2 -n 2` run; the run's path, or None
    when it did not complete (a hang stopped by the timeout, a failure)."""
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
        str(timeout),
        "--mpi",
        mpi_name,
        "-n",
        "2",
        "--ompt",
        "--threads",
        "2",
        "--",
        str(exe),
        *args,
    ]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    path = Path(runs) / name
    try:
        ok = code == 0 and open_run(path, warn=False).meta.get("status") == "complete"
    except Exception:  # noqa: BLE001 - a run that cannot even be opened did not complete
        ok = False
    return path if ok else None


def predict(run_path, mm, compute, mpi_calls):
    """The advisor's saving per iteration for the program's region: the Monte Carlo's
    and what this MPI's progress allows of it, with the spread and the bytes it used."""
    from commscope.predict import earlybird as eb
    from commscope.runs import open_run

    run = open_run(run_path, warn=False)
    link, _ = eb.link_for(run, machine_model=str(mm))
    table = eb.advise(run, link, replicas=2000, compute=compute, mpi_calls=mpi_calls)
    main_rows = table[~table["region"].str.contains(" #")]
    row = main_rows.sort_values("instances", ascending=False).iloc[0]
    return {
        "region": row["region"],
        "spread_s": float(row["spread_s"]),
        "bytes_per_iteration": float(row["bytes_per_iteration"]),
        "single_s": float(row["single_s"]),
        "model_saving_s": float(row["saving_mc_s"]),
        "predicted_saving_s": float(row["saving_s"]),
        "predicted_alg1_s": float(row["saving_alg1_s"]),
        "progress": row["progress"],
        "verdict": row["verdict"],
    }


#: A saving per iteration below this is no gain (the advisor's --min-saving default).
HELPS_S = 10e-6


def verdicts(row):
    """helps / no gain / hurts, predicted and measured, and whether they are the same."""
    p = row["predicted_saving_s"]
    predicted = "helps" if p >= HELPS_S else "hurts" if p <= -HELPS_S else "no gain"
    m = row["measured_saving_s"]
    measured = (
        ("helps" if m >= HELPS_S else "hurts" if m < 0 else "no gain")
        if row["beyond_noise"]
        else "no gain"
    )
    return {
        "predicted_verdict": predicted,
        "measured_verdict": measured,
        "right": "right" if predicted == measured else "wrong",
    }


def measure(program, exe, mpi_name, variant, compute, level, a, runs, mm, log):
    args = [
        *(["--blocked"] if compute == "blocked" else []),
        "--imbalance",
        repr(level),
        "--unit",
        repr(a.unit),
        "--iters",
        str(a.iters),
        "--bytes",
        str(a.bytes),
    ]
    bulk, part, multiple, hung = [], [], [], 0
    tag = f"{mpi_name}-{program}-{compute}-K{level:g}-{variant}"
    for rep in range(a.repeats):
        b = profile(exe, args, mpi_name, runs, f"{tag}-bulk-{rep}", a.timeout)
        p = profile(exe, [*args, VARIANTS[variant]], mpi_name, runs, f"{tag}-part-{rep}", a.timeout)
        if a.control:
            m = profile(
                exe,
                [*args, "--thread-multiple"],
                mpi_name,
                runs,
                f"{tag}-multiple-{rep}",
                a.timeout,
            )
            multiple += [m] if m else []
        bulk += [b] if b else []
        part += [p] if p else []
        hung += p is None
        log(
            f"  {tag} #{rep + 1}: bulk {'ok' if b else 'FAILED'}, partitioned "
            f"{'ok' if p else 'did not complete'}"
        )
        if p is None:
            break  # a hang is not noise: do not wait for it again
    row = {
        "mpi": mpi_name,
        "program": program,
        "variant": variant,
        "compute": compute,
        "imbalance_k": level,
        "spread_designed_s": level * a.unit,
        "iterations": a.iters,
        "bytes": a.bytes,
        "runs_bulk": len(bulk),
        "runs_partitioned": len(part),
    }
    if not bulk:
        row["note"] = "the bulk runs failed"
        return row
    row.update(predict(bulk[0], mm, compute, variant == "poll"))
    if not part:
        row["note"] = (
            f"the partitioned run did not complete within {a.timeout:g} s "
            f"({'a known hang' if (mpi_name, variant) in HANGS else 'hang or failure'})"
        )
        return row
    c = compare(bulk, part, findings=False, statistic="median")["runtime"]
    n = a.iters
    if multiple:
        m = compare(bulk, multiple, findings=False, statistic="median")["runtime"]
        row.update(
            thread_multiple_cost_s=m["difference_s"] / n,
            thread_multiple_beyond_noise=m["beyond_noise"],
        )
    row.update(
        runtime_bulk_s=c["before_s"],
        runtime_partitioned_s=c["after_s"],
        measured_saving_s=-c["difference_s"] / n,
        measured_ci95_low_s=-c["ci95_s"][1] / n if c["ci95_s"] else None,
        measured_ci95_high_s=-c["ci95_s"][0] / n if c["ci95_s"] else None,
        beyond_noise=c["beyond_noise"],
    )
    p = row["predicted_saving_s"]
    row["measured_over_predicted"] = row["measured_saving_s"] / p if p and p > 0 else None
    row.update(verdicts(row))
    if len(bulk) == len(part):
        from commscope.runs import open_run

        walls = [
            [float(open_run(x, warn=False).table("ranks")["wall_s"].max()) for x in side]
            for side in (bulk, part)
        ]
        record(
            f"{mpi_name} {program} {compute} K={level:g} {variant}: measured saving per iteration",
            [(wb - wp) / n for wb, wp in zip(*walls)],
        )
    return row


def text(rows, info):
    from commscope.output import format_table

    cols = [
        "mpi",
        "program",
        "variant",
        "compute",
        "imbalance_k",
        "spread_s",
        "single_s",
        "model_saving_s",
        "predicted_saving_s",
        "progress",
        "measured_saving_s",
        "measured_ci95_low_s",
        "measured_ci95_high_s",
        "predicted_verdict",
        "measured_verdict",
        "right",
    ]
    if any("thread_multiple_cost_s" in r for r in rows):
        cols += ["thread_multiple_cost_s", "thread_multiple_beyond_noise"]
    shown = [{c: r.get(c) for c in cols} for r in rows]
    out = [
        format_table(
            shown,
            columns=cols,
            title=(
                "early-bird advice against a partitioned rewrite: saving per iteration, predicted by "
                f"`commscope advise` on the bulk run, measured by `commscope compare --statistic median` "
                f"(median bulk - median partitioned run time / {info['iterations']} iterations; "
                f"{info['repeats']} run(s) a side, U = {info['unit_s'] * 1e3:g} ms, spread = K U)"
            ),
        )
    ]
    for r in rows:
        if r.get("note"):
            out.append(
                f"# {r['mpi']} {r['program']} {r['compute']} K={r['imbalance_k']:g} "
                f"{r['variant']}: {r['note']}"
            )
    judged = [r for r in rows if r.get("right")]
    out.append(
        f"verdict right in {sum(r['right'] == 'right' for r in judged)} of {len(judged)} cells"
    )
    out.append(
        f"load average {info['loadavg_before']} before, {info['loadavg_after']} after; "
        f"{info['cores']} cores; {info['seconds']} s"
    )
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--mpi", default="openmpi,mpich", help="MPIs, comma-separated (default %(default)s)"
    )
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="default %(default)s")
    ap.add_argument(
        "--levels",
        default="0.1,0.5,2",
        help="imbalance levels K: the slow thread works (1+K)U (default %(default)s)",
    )
    ap.add_argument("--unit", type=float, default=0.001, help="U, seconds (default %(default)s)")
    ap.add_argument(
        "--bytes",
        type=int,
        default=4 << 20,
        help="message bytes (thread_imbalance) and halo bytes per direction "
        "(halo_threads) (default %(default)s)",
    )
    ap.add_argument("--iters", type=int, default=200, help="iterations (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=7, help="runs a side (default %(default)s)")
    ap.add_argument(
        "--variant",
        choices=("auto", "wait", "poll", "both"),
        default="both",
        help="partitioned variants run (default %(default)s; see above)",
    )
    ap.add_argument(
        "--compute-kind",
        default="busy,blocked",
        help="compute kinds of the threads: busy (spin), blocked (sleep) (default %(default)s)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds per run before it counts as a hang (default %(default)s)",
    )
    ap.add_argument(
        "--control",
        action="store_true",
        help="also run the bulk program under MPI_THREAD_MULTIPLE (see above)",
    )
    ap.add_argument(
        "--machine-model",
        default=None,
        help="machine model JSON for every MPI (default: fit a ping-pong run per MPI)",
    )
    ap.add_argument(
        "--runs",
        default=None,
        help="keep the runs here (default: a temporary directory, removed at the end)",
    )
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="Open MPI only, 1 run a side, 100 iterations, a short ping-pong fit",
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.mpi, a.repeats, a.iters = "openmpi", 1, 100
    mpis = [m.strip() for m in a.mpi.split(",") if m.strip()]
    programs = [p.strip() for p in a.programs.split(",") if p.strip()]
    levels = [float(x) for x in a.levels.split(",")]
    kinds = [k.strip() for k in a.compute_kind.split(",") if k.strip()]
    if set(kinds) - {"busy", "blocked"}:
        ap.error(f"--compute-kind: busy and/or blocked, got {a.compute_kind!r}")
    bad = [p for p in programs if p not in PROGRAMS]
    if bad or a.repeats < 1 or a.iters < 1 or not a.unit > 0 or a.bytes % 16:
        ap.error(
            f"unknown program {bad}"
            if bad
            else "--repeats, --iters >= 1, --unit > 0, --bytes a multiple of 16"
        )
    from commscope import mpi as mpimod

    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="earlybird-")
    runs = Path(a.runs) if a.runs else Path(tmp) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    rows, skipped = [], []
    load_before, t0 = loadavg(), time.perf_counter()
    try:
        for mpi_name in mpis:
            mpi = mpimod.select_mpi(mpi_name)
            mpimod.build(mpi)
            why = ompt_problem(mpi)
            if why:
                skipped.append(f"{mpi_name}: {why}")
                continue
            mm = Path(a.machine_model) if a.machine_model else machine_model(mpi_name, tmp, a.quick)
            log(f"{mpi_name}: machine model {mm}")
            variants = {
                "auto": ["wait"] if mpi_name == "openmpi" else ["poll"],
                "both": [v for v in VARIANTS if (mpi_name, v) not in HANGS],
                "wait": ["wait"],
                "poll": ["poll"],
            }[a.variant]
            for program in programs:
                exe = build(program, mpi, tmp)
                for variant in variants:
                    for compute in kinds:
                        for level in levels:
                            rows.append(
                                measure(
                                    program,
                                    exe,
                                    mpi_name,
                                    variant,
                                    compute,
                                    level,
                                    a,
                                    runs,
                                    mm,
                                    log,
                                )
                            )
    finally:
        if not a.runs:
            shutil.rmtree(tmp, ignore_errors=True)
    if not rows:
        print(f"skipped: {'; '.join(skipped) or 'nothing to run'}", file=sys.stderr)
        return SKIPPED
    info = {
        "repeats": a.repeats,
        "iterations": a.iters,
        "unit_s": a.unit,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "cores": os.cpu_count(),
        "seconds": round(time.perf_counter() - t0, 1),
        "skipped": skipped,
    }
    if a.json:
        print(json.dumps({**info, "rows": rows}, indent=1, default=str))
    else:
        print(text(rows, info))
        for s in skipped:
            print(f"# skipped {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
