"""Running a native benchmark into a run directory: the steps every benchmark shares.

1. select the MPI and build the native program against it;
2. create the run directory and record what will run (parameters, seeds, MPI,
   launcher flags and why, node topology);
3. launch the job with ``--out <run>/raw`` so samples land on disk as measured;
4. record where each rank ran (``raw/placement.csv``), convert the tables to
   Parquet and stamp the status and end time.

Steps 2-4 are the run lifecycle every run shares (:mod:`commscope.collect.lifecycle`);
what is a benchmark's own is here: its input files, resuming a sweep, how its job's
end is judged.

A job that fails or is interrupted still leaves a run directory whose status says
so, with every sample written before the failure.
"""

import os
import platform
from dataclasses import dataclass
from typing import Callable, Optional

from .. import launch, mpi as mpimod, srun_mpi
from ..collect.lifecycle import (
    MPI_FACTS,
    finalize_collectors,
    mpi_info,
    native_write_error,
    plan_job,
    record_placement,
    record_start,
)
from ..errors import EnvironmentProblem, InputError, Interrupted
from ..paths import default_runs_root, write_text_atomic
from ..benchspec import BENCHMARKS
from ..kinds import POINTS
from ..runs import (
    Run,
    describe_os_error,
    open_run,
    process_start_ticks,
    raw_segments,
    read_csv_table,
    utc_now,
)


@dataclass(frozen=True)
class RunFile:
    """A native program's argument that names file ``name`` of the run directory (an input
    kept with the run, e.g. mtmatch's plan).  With ``text``, :func:`run_benchmark` writes
    the file before the job starts; a resumed run reads the same file."""

    name: str
    text: Optional[str] = None


def _run_args(run, args):
    """``args`` with each :class:`RunFile` written (when it has text) and replaced by its path."""
    out = []
    for a in args:
        if isinstance(a, RunFile):
            path = run.path / a.name
            if a.text is not None:
                write_text_atomic(path, a.text)
            elif not path.is_file():  # e.g. a run written before commscope kept its inputs
                raise InputError(path, None, "missing: the run's input is needed to resume it")
            a = path
        out.append(a)
    return out


def run_benchmark(
    kind,
    program,
    args,
    *,
    nranks,
    parameters,
    threads=1,
    seeds=None,
    mpi_spec=None,
    runs_root=None,
    hosts=None,
    ranks_per_node=None,
    bind="auto",
    timeout=None,
    echo=True,
    progress=True,
    run_name=None,
    extra_env=None,
    collectors=(),
    launcher="auto",
):
    """Build and run native program ``cs_<program>`` and return the finished :class:`Run`.

    ``args`` are the program's own options (``--out`` is added; a :class:`RunFile` becomes
    a file of the run directory).  ``collectors``:
    callables ``(mpi, binary) -> collector`` (e.g. OMPT thread timing) whose preload
    libraries and environment reach the ranks only, raw files go to ``<run>/raw``
    and ``finalize(run)`` runs after the job, whatever its outcome.  Raises
    EnvironmentProblem when the job fails; the run directory is kept with
    status "failed" and whatever samples were written.
    """
    _check_launch_options(timeout, ranks_per_node)
    launch.check_request(nranks, threads, bind, launcher, ranks_per_node)
    mpi = mpimod.select_mpi(mpi_spec)
    binary = mpimod.binary(mpi, program)
    info = mpi_info(mpi)
    collectors = [make(mpi, binary) for make in collectors]
    run = Run.create(runs_root or default_runs_root(), kind, parameters, seeds=seeds, name=run_name)
    run.meta["program"] = program
    try:
        args = _run_args(run, args)
    except OSError as exc:  # e.g. no space for the plan: the run says so before it goes
        run.finish("failed", failure=describe_os_error(exc))
        raise
    plan = plan_job(
        run,
        mpi,
        nranks,
        binary,
        [*args, "--out", run.raw_dir],
        collectors,
        hosts=hosts,
        ranks_per_node=ranks_per_node,
        threads=threads,
        bind=bind,
        launcher=launcher,
    )
    if extra_env:
        plan.env.update(extra_env)
    record_start(run, mpi, info, plan, facts=(*MPI_FACTS, "eager_cvars"))
    return _execute(run, plan, kind, timeout, echo, progress, collectors)


def run_described(name, **kw):
    """Run the benchmark ``name`` as its descriptor (commscope.benchspec) says: ``kw`` are
    its parameters (the rest default) and :func:`run_benchmark`'s launch options."""
    bench = BENCHMARKS[name]
    params = bench.defaults()
    for key in list(kw):
        if key in params:
            params[key] = kw.pop(key)
    bench.check(params)
    return run_benchmark(
        name,
        bench.program,
        bench.native_args(params),
        nranks=bench.ranks(params),
        parameters=params,
        **kw,
    )


def split_parameters(name, kw):
    """``kw`` of a run function split into the benchmark ``name``'s parameters (every one
    its descriptor names, defaults filled in) and the rest (launch options)."""
    params = BENCHMARKS[name].defaults()
    rest = {}
    for key, value in kw.items():
        (params if key in params else rest)[key] = value
    return params, rest


def resume_benchmark(path, *, timeout=None, echo=True, progress=True):
    """Continue an interrupted or failed run from its first incomplete point.

    The same program, parameters, MPI and launch flags (all read from ``meta.json``);
    rows of points left incomplete are dropped, and the new segment's samples land in
    ``raw/resume-<k>/`` next to the earlier ones.  Returns the finished :class:`Run`.
    """
    _check_launch_options(timeout, None)
    run = open_run(path, warn=False)
    points, resume = POINTS.get(run.kind), resume_rule(run.kind)
    if points is None or resume is None:
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"{run.kind} runs cannot be resumed: they are not a sweep of "
            "independent points, so a stopped one restarts (run it again); "
            f"resumable: {', '.join(sorted(resumable_kinds()))}",
        )
    status = run.status
    if status == "complete":
        raise InputError(run.path / "meta.json", "status", "complete: nothing to resume")
    if status == "running":
        raise InputError(
            run.path / "meta.json",
            "status",
            f"still running (commscope pid {run.meta.get('commscope_pid')} on "
            f"{run.meta.get('commscope_host')})",
        )
    params = run.meta["parameters"]
    planned = points.planned(params)
    done = {k for k, _ in run.complete_points()}
    todo = [k for k, _ in planned if k not in done]
    if not todo:  # every point is there; only the final conversion was missed
        run.finish("complete")
        return _after(resume, run)
    first = todo[0]
    # everything that may refuse comes before the run is touched (a refused resume leaves it)
    segment = run.raw_dir / f"resume-{len(run.meta.get('resumed', [])) + 1}"
    old = run.meta["launch"]
    mpi_meta = run.meta["mpi"]
    mpi = mpimod.select_mpi(
        mpi_meta["name"] if mpi_meta.get("name") in ("openmpi", "mpich") else mpi_meta.get("mpicc")
    )
    binary = mpimod.binary(mpi, run.meta.get("program", run.kind))
    args = [*_run_args(run, resume.args(params, first)), "--out", segment]
    keep_complete_points(run, points, done)
    plan = launch.plan_launch(
        mpi,
        old["nranks"],
        binary,
        args,
        hosts=old["hosts"] if len(old.get("hosts", [])) > 1 else None,
        threads=old.get("threads_per_rank", 1),
        bind="core" if old.get("bound") else "none",
        launcher=old.get("launcher", "auto"),
    )
    plan.env.update(old.get("env", {}))
    run.meta.setdefault("resumed", []).append(
        {
            "time": utc_now(),
            "from": dict(zip(points.key, first)),
            "segment": str(segment.relative_to(run.path)),
            "launch": plan.to_dict(),
        }
    )
    run.meta.update(
        status="running",
        end_time=None,
        commscope_pid=os.getpid(),
        commscope_host=platform.node(),
        commscope_pid_start=process_start_ticks(os.getpid()),
    )
    for key in ("interrupted", "failure"):
        run.meta.pop(key, None)
    run.save_meta()
    return _after(resume, _execute(run, plan, run.kind, timeout, echo, progress))


def _after(resume, run):
    if resume.after is not None:
        resume.after(run)
    return run


@dataclass
class Resume:
    """How a sweep continues: ``args(parameters, first_key)`` are the native program's
    options that measure from the point ``first_key`` on; ``after(run)`` derives the run's
    extra tables once it is complete (also after a resume)."""

    args: Callable
    after: Optional[Callable] = None


#: The resumable kinds, registered by their drivers.
RESUMABLE = {}


def register_resume(kind, args, after=None):
    RESUMABLE[kind] = Resume(args, after)


def resumable_kinds():
    return {*RESUMABLE, *(b.name for b in BENCHMARKS.values() if b.resume_from)}


def resume_rule(kind):
    """A driver's registered rule, else the one of the kind's descriptor."""
    bench = BENCHMARKS.get(kind)
    if kind in RESUMABLE or bench is None or bench.resume_from is None:
        return RESUMABLE.get(kind)
    return Resume(lambda params, first: bench.native_args(bench.resume_from(params, first)))


def keep_complete_points(run, points, done):
    """Rewrite every raw segment of every table keyed like the points (e.g. the per-thread
    rows next to the samples) without rows of unfinished points; drop the Parquet tables
    converted from the stopped run (the raw CSVs rebuild them)."""
    for csv_path in run.raw_dir.glob("**/*.csv"):
        df = read_csv_table(csv_path)
        if not set(points.key) <= set(df.columns):
            continue
        keys = list(zip(*(df[c] for c in points.key)))
        kept = df[[k in done for k in keys]]
        if len(kept) != len(df):
            write_text_atomic(csv_path, kept.to_csv(index=False))
    for pq in run.path.glob("*.parquet"):
        if raw_segments(run.raw_dir, pq.stem):
            pq.unlink()


def _check_launch_options(timeout, ranks_per_node):
    if timeout is not None and not timeout > 0:
        raise InputError("--timeout", None, f"must be a positive number of seconds, got {timeout}")
    if ranks_per_node is not None and ranks_per_node < 1:
        raise InputError("--ranks-per-node", None, f"must be at least 1, got {ranks_per_node}")


def _execute(run, plan, kind, timeout, echo, progress, collectors=()):
    """Run the job of ``run`` and stamp how it ended (complete, failed, interrupted)."""
    status, res, extra, write_error = "failed", None, {}, None
    try:
        res = launch.run_job(plan, title=kind, timeout=timeout, echo=echo, progress=progress)
        # a failed write fails the run even when the job goes on and exits 0 (the OMPT tool
        # stops timing threads but lets the benchmark finish)
        write_error = native_write_error(res.own_lines + res.stderr)
        status = "complete" if res.returncode == 0 and write_error is None else "failed"
        if write_error is not None:
            extra["failure"] = describe_os_error(write_error)
        elif status == "failed":
            extra["failure"] = (
                f"timed out after {timeout} s"
                if res.timed_out
                else f"job exited with status {res.returncode}"
            )
        try:
            _append(run.path / "stdout.txt", res.kept("stdout"))
            if res.stderr:
                _append(run.path / "stderr.txt", res.kept("stderr"))
        except OSError:
            if write_error is None:
                raise  # else the disk is full: the native program's error is the one to name
    except Interrupted as exc:
        status = "interrupted"
        extra["interrupted"] = {"signal": exc.signal_name, "time": utc_now()}
        raise
    except BaseException as exc:
        extra["failure"] = (
            describe_os_error(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
        )
        raise
    finally:
        finalize_collectors(run, collectors)
        record_placement(run)
        try:
            run.finish(
                status,
                wall_s=round(res.wall_s, 3) if res else None,
                exit_status=res.returncode if res else None,
                **extra,
            )
        except OSError:
            if write_error is None:
                raise  # else the native program's failed write is the one to name
    singletons = res and srun_mpi.singleton_problem(plan, res.stderr)
    if singletons:
        raise EnvironmentProblem(f"{singletons} (run directory {run.path})")
    if write_error is not None:  # a full disk is the user's to fix: exit 2 naming the file
        raise write_error
    if status != "complete":
        tail = "\n".join(res.stderr.strip().splitlines()[-15:])
        raise EnvironmentProblem(
            f"{kind} job exited with status {res.returncode}; partial results kept in "
            f"{run.path}\n{tail}"
        )
    return run


def _append(path, text):
    """stdout/stderr of a resumed run continue those of its earlier segments."""
    before = path.read_text() if path.exists() else ""
    write_text_atomic(path, before + text)
