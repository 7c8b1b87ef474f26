"""Running a native benchmark into a run directory: the steps every benchmark shares.

1. select the MPI and build the native program against it;
2. create the run directory and record what will run (parameters, seeds, MPI,
   launcher flags and why, node topology);
3. launch the job with ``--out <run>/raw`` so samples land on disk as measured;
4. record where each rank ran (``raw/placement.csv``), convert the tables to
   Parquet and stamp the status and end time.

A job that fails or is interrupted still leaves a run directory whose status says
so, with every sample written before the failure.
"""

import csv
import json
import sys
from pathlib import Path

from .. import launch, mpi as mpimod, srun_mpi
from ..errors import EnvironmentProblem, InputError
from ..paths import default_runs_root
from ..runs import Run
from ..topology import node_topology, shared_hosts, shared_hosts_note


def mpi_info(mpi):
    """What the MPI says about itself (cs_mpiinfo output), cached per build tree.

    The cache is stale once the program or the MPI's mpicc is newer (a rebuild, or
    an MPI upgraded in place).
    """
    program = mpimod.binary(mpi, "mpiinfo")
    cache = program.parent / "mpiinfo.json"
    newest = max(Path(f).stat().st_mtime for f in (program, mpi.mpicc) if Path(f).exists())
    if cache.exists() and cache.stat().st_mtime >= newest:
        try:
            return json.loads(cache.read_text())
        except json.JSONDecodeError:
            pass
    # Two ranks: transports for peers (e.g. Open MPI's shared-memory BTL, whose
    # eager limit matters) only load when there is a peer.
    plan = launch.plan_launch(mpi, 2, program)
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    if res.returncode != 0:
        raise (srun_mpi.singleton_problem(plan, res.stderr) or
               EnvironmentProblem(f"cs_mpiinfo failed under {mpi.name}:\n{res.stderr.strip()}"))
    try:
        info = json.loads(res.stdout)
    except json.JSONDecodeError as exc:
        raise EnvironmentProblem(f"cs_mpiinfo printed malformed JSON: {exc}") from None
    cache.write_text(json.dumps(info, indent=2))
    return info


def read_placement(path):
    """raw/placement.csv -> list of dicts (empty when the job died before writing it)."""
    if not Path(path).exists():
        return []
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for key in ("rank", "cpu", "socket", "core", "numa", "bound"):
            if key in row:
                row[key] = int(row[key])
    return rows


def record_placement(run):
    """Put raw/placement.csv into meta.json, with the hosts that held several nodes."""
    run.meta["placement"] = read_placement(run.raw_dir / "placement.csv")
    run.meta["shared_hosts"] = shared_hosts(run.meta["placement"])
    if run.meta["shared_hosts"]:
        print(f"commscope: note: {shared_hosts_note(run.meta['shared_hosts'])}", file=sys.stderr)


def run_benchmark(kind, program, args, *, nranks, parameters, threads=1, seeds=None,
                  mpi_spec=None, runs_root=None, hosts=None, ranks_per_node=None,
                  bind="auto", timeout=None, echo=True, progress=True, run_name=None,
                  extra_env=None, collectors=(), launcher="auto"):
    """Build and run native program ``cs_<program>`` and return the finished :class:`Run`.

    ``args`` are the program's own options (``--out`` is added).  ``collectors``:
    callables ``(mpi, binary) -> collector`` (e.g. OMPT thread timing) whose preload
    libraries and environment reach the ranks only, raw files go to ``<run>/raw``
    and ``finalize(run)`` runs after the job, whatever its outcome.  Raises
    EnvironmentProblem when the job fails; the run directory is kept with
    status "failed" and whatever samples were written.
    """
    if timeout is not None and not timeout > 0:
        raise InputError("--timeout", None, f"must be a positive number of seconds, got {timeout}")
    if ranks_per_node is not None and ranks_per_node < 1:
        raise InputError("--ranks-per-node", None, f"must be at least 1, got {ranks_per_node}")
    mpi = mpimod.select_mpi(mpi_spec)
    binary = mpimod.binary(mpi, program)
    info = mpi_info(mpi)
    collectors = [make(mpi, binary) for make in collectors]
    run = Run.create(runs_root or default_runs_root(), kind, parameters, seeds=seeds,
                     name=run_name)
    program, argv = binary, [*args, "--out", run.raw_dir]
    if collectors:
        program, argv = launch.wrap_env(program, argv, [p for c in collectors for p in c.preload],
                                        {"COMMSCOPE_PROFILE_DIR": str(run.raw_dir.resolve()),
                                         **{k: v for c in collectors for k, v in c.env.items()}})
    plan = launch.plan_launch(mpi, nranks, program, argv,
                              hosts=hosts, ranks_per_node=ranks_per_node, threads=threads,
                              bind=bind, launcher=launcher)
    plan.notes += [n for c in collectors for n in c.notes]
    if extra_env:
        plan.env.update(extra_env)
    run.meta["mpi"] = {**mpi.to_dict(), **{k: info.get(k) for k in (
        "library_version", "mpi_version", "thread_level_provided", "partitioned",
        "eager_cvars")}}
    run.meta["launch"] = plan.to_dict()
    run.meta["hosts"] = plan.hosts
    run.meta["topology"] = node_topology()
    run.save_meta()
    status, res = "failed", None
    try:
        res = launch.run_job(plan, title=kind, timeout=timeout, echo=echo, progress=progress)
        (run.path / "stdout.txt").write_text(res.stdout)
        if res.stderr:
            (run.path / "stderr.txt").write_text(res.stderr)
        status = "complete" if res.returncode == 0 else "failed"
    finally:
        for c in collectors:
            c.finalize(run)
        record_placement(run)
        run.finish(status, wall_s=round(res.wall_s, 3) if res else None)
    singletons = res and srun_mpi.singleton_problem(plan, res.stderr)
    if singletons:
        raise EnvironmentProblem(f"{singletons} (run directory {run.path})")
    if status != "complete":
        tail = "\n".join(res.stderr.strip().splitlines()[-15:])
        raise EnvironmentProblem(
            f"{kind} job exited with status {res.returncode}; partial results kept in "
            f"{run.path}\n{tail}")
    return run
