"""The default study (the README's first command): measure, fit, report.

On one node, every benchmark at a size that runs in a few minutes on 2 cores (each
benchmark's runs are declared by its descriptor, ``commscope.benchspec.<name>.study``):

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

from .bench import RUNNERS
from .bench.driver import resumable_kinds, resume_benchmark
from .benchspec import BENCHMARKS
from .errors import InputError
from .machine_fit import fit_runs
from .models.machine_model import DEFAULT_FILE, save_machine_model
from .paths import write_text_atomic
from .report.build import build_report
from .runs import open_run

#: What the study measures: every benchmark whose descriptor declares its study runs
#: (commscope.benchspec, ``study``), in their study order, then a profiled application.
STUDIED = tuple(b.name for b in sorted(BENCHMARKS.values(), key=lambda b: b.study_order) if b.study)
STEPS = (*STUDIED, "profile")
#: Always measured: the fit needs it.
ALWAYS = ("pingpong",)


def default_study_dir(root="studies"):
    return Path(root) / f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}"


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
    plan = [s for s in STEPS if s in (*ALWAYS, *steps)]
    planned = [
        (name, r) for name in plan if name in STUDIED for r in BENCHMARKS[name].study(quick, pairs)
    ]
    total = sum(1 for _, r in planned if r.says) + 2 + ("profile" in plan)  # + fit, report
    step = iter(range(1, total + 1))

    def say(msg):
        log(f"[{next(step)}/{total}] {msg}")

    def measure_phase(phase):
        for name, r in planned:
            if r.phase == phase:
                if r.says:
                    say(r.says)
                measure(RUNNERS[name], run_name=r.name, **r.params, **kw)

    # fitted only from its own runs: the machine model never comes from a run it predicts
    measure_phase("fit")
    say(
        "fitting the postal / max-rate / queue-search / partitioned models; a held-out "
        "ping-pong to test them"
    )
    fitted = [runs / r.name for _, r in planned if r.phase == "fit"]
    machine_model = fit_runs([p for p in fitted if (p / "meta.json").exists()])
    # runs the fit never sees: "Do the models hold here?" judges the models on them, a
    # prediction rather than a fit residual
    measure_phase("held-out")
    # resumed: fitted again from the same runs, so it replaces the stopped study's
    save_machine_model(machine_model, out / DEFAULT_FILE, overwrite=resume)
    measure_phase("measure")
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

    bsp = BENCHMARKS["bsp"]
    program = mpimod.binary(mpimod.select_mpi(mpi_spec), bsp.program)
    args = bsp.native_args(
        dict(
            bsp.defaults(),
            workload="ftq",
            intervals=20 if quick else 200,
            warmup=2,
            mean=0.004,
            sd=0.0008,
            halo_bytes=8192,
            seed=1,
        )
    )
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
