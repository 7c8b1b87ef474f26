"""The default study (the README's first command): measure, fit, report.

On one node, every benchmark at a size that runs in a few minutes on 2 cores:

1. ping-pong, 1 pair, 1 B .. 16 MiB (postal model per protocol; past 2 MiB the
   buffers leave the caches, and the sizes beyond fit that capacity regime)
2. ping-pong, 2 concurrent pairs, 16 KiB .. 4 MiB (max-rate injection limit)
3. HighVolumePingPong, 1 .. 10,000 messages, ordered and reversed (queue search gamma)
4. the partitioned calibration (threads finishing at staggered times, 20 ms apart and
   as close as in the predicted run: the partitioned model's per-partition and
   single-send times, MPI_Pready cost, progress), then the
   fit: machine model with gamma and the partitioned terms, from those runs only; then a
   held-out single-pair ping-pong (a quarter of the repetitions) and a held-out
   HighVolumePingPong the fit never sees: the report's "Do the models hold here?"
   judges the postal and queue-search models on them
5. multithreaded matching, 27-point stencil, 1 .. 8 threads per process
6. multirate: thread pairs sharing one communicator or one each, 1 .. 4 threads
7. thread arrivals with injected laggards
8. partitioned communication against the single send
9. the bulk-synchronous harness (FTQ and DGEMM) at 1, 2 and 4 ranks (4 is
   oversubscribed here), and twice more at 1 rank (the run-to-run spread), predicted
   from 1 rank to the others
10. `commscope profile` of an application: the FTQ harness with a 2-D halo on 4
   ranks, all counters and call sites (per-function time, load imbalance, rank x time
   heatmaps, the lines MPI time goes to)
11. the report

Everything lands in a new study folder (never an existing one)::

    <out>/runs/<run dirs>   <out>/machine-model.json   <out>/report.html

A study folder of an earlier commscope holds ``machine-profile.json`` instead: the same
file under its old name, which every ``--machine-model`` still reads (with a warning).
Resuming such a study fits again and writes ``machine-model.json`` beside it.
"""

import datetime as _dt
import json
import os
import sys
from pathlib import Path

from .bench.bsp import run_bsp
from .bench.driver import resume_benchmark
from .bench.hvpingpong import run_hvpingpong
from .bench.mtmatch import run_mtmatch, sweep_configs
from .bench.multirate import run_multirate
from .bench.partitioned import run_partitioned
from .bench.pingpong import run_pingpong
from .bench.threads import run_threads
from .errors import InputError
from .paths import write_text_atomic
from .models.machine_model import DEFAULT_FILE, save_machine_model
from .machine_fit import fit_runs
from .report.build import build_report
from .bench.driver import resumable_kinds
from .runs import open_run

#: The held-out single-pair ping-pong (not fitted from: the postal model's test).
HELD_OUT_PINGPONG = "pingpong-1pair-heldout"
#: The held-out HighVolumePingPong (not fitted from: the queue-search model's test).
HELD_OUT_HVPINGPONG = "hvpingpong-heldout"
# up to 16 MiB: on this machine ping-pong loses half its bandwidth between 2 and 4 MiB
# (the buffers leave the caches); 4, 8 and 16 MiB let the fit model that regime
SINGLE_PAIR_MAX = 16 << 20
# the partitioned run's thread-time spread (sigma = compute x 0.25^2, the thesis's
# convention), and the calibration whose threads are that close
PARTITIONED_VARIABILITY = 0.25
SHORT_CALIBRATION = "partitioned-calibration-short"
STEPS = (
    "pingpong",
    "hvpingpong",
    "mtmatch",
    "multirate",
    "threads",
    "partitioned",
    "bsp",
    "profile",
)


def default_study_dir(root="studies"):
    return Path(root) / f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}"


def _scale(quick, full, small):
    return small if quick else full


def run_study(
    out=None, mpi_spec=None, pairs=2, quick=False, echo=False, steps=STEPS, log=print, resume=False
):
    """Run the default study into ``out`` and return the report path.

    ``steps`` selects benchmarks (ping-pong always runs: the fit needs it);
    ``quick`` shrinks every benchmark to a smoke test.  ``resume`` continues the
    stopped study in ``out`` with its recorded options (study.json): complete runs
    are kept, a stopped ping-pong continues from its first incomplete size, and any
    other stopped run is moved to ``<out>/incomplete/`` and measured again.
    """
    if resume:
        mpi_spec, pairs, quick, steps = _recorded_options(out)
    unknown = set(steps) - set(STEPS)
    if unknown:
        raise InputError(
            "--only",
            None,
            f"unknown step(s) {', '.join(sorted(unknown))}; choose from {', '.join(STEPS)}",
        )
    if not isinstance(pairs, int) or pairs < 2:
        raise InputError(
            "--pairs", None, f"the max-rate fit needs at least 2 concurrent pairs, got {pairs}"
        )
    out = Path(out) if out else default_study_dir()
    if not resume:
        if out.exists() and any(out.iterdir()):
            raise InputError(
                out,
                None,
                "exists and is not empty; not overwriting it (--resume continues a stopped study)",
            )
        out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(
            out / "study.json",
            json.dumps(dict(mpi=mpi_spec, pairs=pairs, quick=quick, steps=list(steps)), indent=2)
            + "\n",
        )
    runs = out / "runs"
    kw = dict(mpi_spec=mpi_spec, runs_root=runs, echo=echo)
    measure = _resuming(out, log) if resume else _measure
    plan = [s for s in ("pingpong", *steps) if s in STEPS]
    plan = list(dict.fromkeys(plan))
    total = len(plan) + 2 + ("partitioned" in plan)
    step = iter(range(1, total + 1))

    def say(msg):
        log(f"[{next(step)}/{total}] {msg}")

    reps = _scale(
        quick,
        dict(iters=1000, warmup=100, large_iters=100, large_warmup=10),
        dict(iters=100, warmup=10, large_iters=10, large_warmup=2),
    )
    say(f"ping-pong, 1 pair, 1 B .. 16 MiB; then {pairs} concurrent pairs, 16 KiB .. 4 MiB")
    measure(
        run_pingpong,
        pairs=1,
        min_size=1,
        max_size=SINGLE_PAIR_MAX,
        run_name="pingpong-1pair",
        **reps,
        **kw,
    )
    measure(
        run_pingpong,
        pairs=pairs,
        min_size=16 << 10,
        max_size=4 << 20,
        run_name=f"pingpong-{pairs}pairs",
        **dict(reps, iters=reps["iters"] // 4, large_iters=reps["large_iters"] // 2),
        **kw,
    )
    if "hvpingpong" in plan:
        say("HighVolumePingPong, ordered and reversed receives")
        # 3 depths per decade: enough for the queue-search fit to choose a form with a
        # breakpoint (2 depths each side); --queues: the ob1 queue lengths beside it
        hv = dict(n_min=1, n_max=_scale(quick, 10000, 300), per_decade=3, sizes=(8,), warmup=1)
        measure(
            run_hvpingpong,
            iters=_scale(quick, 5, 2),
            queues=True,
            run_name="hvpingpong",
            **hv,
            **kw,
        )
    part_kw = dict(
        threads=2,
        compute_s=0.02,
        sizes=_scale(quick, None, [1 << 16, 1 << 20]),
        runs_per_size=_scale(quick, 5, 2),
    )
    if "partitioned" in plan:
        say("partitioned calibration: staggered threads, the partitioned model's terms")
        # its own runs, before the fit: the machine model never comes from the run it
        # predicts. Two leads: compute_s (20 ms: every partition size clear of the one
        # before it), and the predicted run's sigma, as close as its threads finish (after
        # a long idle lead this machine's small partitions take 2-3x longer)
        cal = dict(part_kw, runs_per_size=_scale(quick, 3, 2))
        measure(run_partitioned, calibrate=True, run_name="partitioned-calibration", **cal, **kw)
        measure(
            run_partitioned,
            calibrate=True,
            run_name=SHORT_CALIBRATION,
            sigma_s=part_kw["compute_s"] * PARTITIONED_VARIABILITY**2 / 2,
            **cal,
            **kw,
        )
    say(
        "fitting the postal / max-rate / queue-search / partitioned models; a held-out "
        "ping-pong to test them"
    )
    fitted = [
        runs / n
        for n in (
            "pingpong-1pair",
            f"pingpong-{pairs}pairs",
            "hvpingpong",
            "partitioned-calibration",
            SHORT_CALIBRATION,
        )
        if (runs / n / "meta.json").exists()
    ]
    machine_model = fit_runs(fitted)
    # A second single-pair ping-pong the fit never sees: "Do the models hold here?" in
    # the report judges the postal model on it, a prediction rather than a fit residual.
    measure(
        run_pingpong,
        pairs=1,
        min_size=1,
        max_size=SINGLE_PAIR_MAX,
        run_name=HELD_OUT_PINGPONG,
        **dict(reps, iters=reps["iters"] // 4, large_iters=reps["large_iters"] // 2),
        **kw,
    )
    if "hvpingpong" in plan:  # and one for gamma (the queue search), the same depths
        measure(run_hvpingpong, iters=_scale(quick, 3, 1), run_name=HELD_OUT_HVPINGPONG, **hv, **kw)
    # resumed: fitted again from the same runs, so it replaces the stopped study's
    save_machine_model(machine_model, out / DEFAULT_FILE, overwrite=resume)
    if "mtmatch" in plan:
        say("multithreaded matching, 27-point stencil, 1 .. 8 threads per process")
        measure(
            run_mtmatch,
            configs=sweep_configs(27, _scale(quick, [1, 2, 4, 8], [1, 2])),
            trials=_scale(quick, 10, 3),
            warmup=_scale(quick, 2, 1),
            run_name="mtmatch",
            **kw,
        )
    if "multirate" in plan:
        say("multirate: thread pairs, one shared communicator vs one per thread")
        measure(
            run_multirate,
            threads=_scale(quick, (1, 2, 4), (1, 2)),
            window=_scale(quick, 256, 32),
            iterations=_scale(quick, 100, 5),
            warmup=_scale(quick, 10, 1),
            reps=_scale(quick, 10, 2),
            run_name="multirate",
            **kw,
        )
    if "threads" in plan:
        say("thread arrivals: 2 ranks x 2 threads, normal work with injected laggards")
        measure(
            run_threads,
            ranks=2,
            threads=2,
            iterations=_scale(quick, 200, 20),
            trials=1,
            work=2e-3,
            dist="normal",
            sd=1e-4,
            laggard_prob=0.05,
            laggard_extra=5e-3,
            seed=1,
            compute="sleep",
            run_name="threads",
            **kw,
        )
    if "partitioned" in plan:
        say("partitioned communication vs single send, 2 threads")
        measure(
            run_partitioned,
            variability=PARTITIONED_VARIABILITY,
            run_name="partitioned",
            **part_kw,
            **kw,
        )
    if "bsp" in plan:
        say("bulk-synchronous FTQ and DGEMM at 1, 2 and 4 ranks (variability prediction)")
        for ranks in _scale(quick, (1, 2, 4), (1, 2)):
            measure(
                run_bsp,
                "ftq",
                ranks=ranks,
                intervals=_scale(quick, 500, 20),
                mean=5e-3,
                sd=5e-4,
                seed=1,
                run_name=f"bsp-ftq-{ranks}rank",
                **kw,
            )
            if not quick:
                measure(
                    run_bsp,
                    "dgemm",
                    ranks=ranks,
                    intervals=300,
                    dim=256,
                    seed=1,
                    run_name=f"bsp-dgemm-{ranks}rank",
                    **kw,
                )
        # two more 1-rank runs of each: the predictions' run-to-run spread (without them
        # the intervals know only one run's noise, and miss the next run's median)
        for repeat in _scale(quick, (2, 3), ()):
            measure(
                run_bsp,
                "ftq",
                ranks=1,
                intervals=500,
                mean=5e-3,
                sd=5e-4,
                seed=1,
                run_name=f"bsp-ftq-1rank-repeat{repeat}",
                **kw,
            )
            measure(
                run_bsp,
                "dgemm",
                ranks=1,
                intervals=300,
                dim=256,
                seed=1,
                run_name=f"bsp-dgemm-1rank-repeat{repeat}",
                **kw,
            )
    if "profile" in plan:
        say("profiling an application: FTQ with a 2-D halo, 4 ranks, all counters")
        measure(profile_application, quick, run_name="profile-bsp-halo", **kw)
    say("writing the report")
    return build_report([runs], out / "report.html", machine_model=machine_model, overwrite=resume)


def _measure(fn, *args, **kw):
    return fn(*args, **kw)


def _recorded_options(out):
    if out is None:
        raise InputError("--resume", None, "needs --out: the study folder to continue")
    path = Path(out) / "study.json"
    if not path.is_file():
        raise InputError(path, None, "missing: not a study folder commscope started")
    try:
        rec = json.loads(path.read_text())
        return rec["mpi"], int(rec["pairs"]), bool(rec["quick"]), list(rec["steps"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(path, None, f"malformed study record ({exc})") from None


def _resuming(out, log):
    """A wrapper for each benchmark call of a resumed study (see :func:`run_study`)."""

    def measure(fn, *args, run_name, runs_root, **kw):
        path = Path(runs_root) / run_name
        if not (path / "meta.json").exists():
            if path.exists():  # killed before its meta.json: nothing measured
                _move_aside(path, out)
            return fn(*args, run_name=run_name, runs_root=runs_root, **kw)
        run = open_run(path, warn=False)
        if run.status == "complete":
            log(f"  {run_name}: complete, kept")
            return run
        if run.status == "running":
            raise InputError(
                path / "meta.json",
                "status",
                "still running: is the study already being resumed elsewhere?",
            )
        if run.kind in resumable_kinds():
            log(f"  {run_name}: {run.state_note()}; resuming")
            return resume_benchmark(path, echo=kw.get("echo", False))
        log(f"  {run_name}: {run.state_note()}; moved to incomplete/, measuring again")
        _move_aside(path, out)
        return fn(*args, run_name=run_name, runs_root=runs_root, **kw)

    return measure


def _move_aside(path, out):
    dest_dir = out / "incomplete"
    dest_dir.mkdir(exist_ok=True)
    k = 1
    while (dest_dir / f"{path.name}-{k}").exists():
        k += 1
    os.replace(path, dest_dir / f"{path.name}-{k}")


def profile_application(
    quick, mpi_spec=None, runs_root=None, echo=False, run_name="profile-bsp-halo"
):
    """commscope's own bulk-synchronous harness (cs_bsp) as the profiled program, with the
    event trace, so the report also replays its halo exchange through the matching engines,
    and call sites, so it names the lines its MPI time goes to."""
    from . import mpi as mpimod
    from .profile.run import run_profile

    program = mpimod.binary(mpimod.select_mpi(mpi_spec), "bsp")
    args = [
        "--workload",
        "ftq",
        "--intervals",
        _scale(quick, 200, 20),
        "--warmup",
        2,
        "--mean",
        "0.004",
        "--sd",
        "0.0008",
        "--halo-bytes",
        8192,
        "--seed",
        1,
    ]
    run, status = run_profile(
        program,
        args,
        nranks=4,
        counters="all",
        snapshot_every="50ms",
        trace=True,
        callsites=1,
        mpi_spec=mpi_spec,
        runs_root=runs_root,
        run_name=run_name,
        echo=echo,
    )
    if status:
        raise InputError(run.path, None, f"the profiled harness exited with status {status}")
    return run


def main_log(msg):
    print(msg, file=sys.stderr, flush=True)
