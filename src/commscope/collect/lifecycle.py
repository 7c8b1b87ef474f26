"""A run's lifecycle, the same for a benchmark and a profile: the steps around its job.

1. ask the MPI what it is (:func:`mpi_info`), create the run directory;
2. plan the launch with every collector's preload libraries and environment reaching
   the ranks only (:func:`plan_job`), and record what will run: the MPI, the launch,
   the hosts, the node topology (:func:`record_start`);
3. the caller runs the job (``launch.run_job``) and judges how it ended: a failed
   write a native part reported (:func:`native_write_error`), the exit status;
4. whatever the outcome, each collector turns its raw files into tables
   (:func:`finalize_collectors`), where each rank ran goes into meta.json
   (:func:`record_placement`), and ``Run.finish`` stamps the status.

``bench.driver`` (native benchmarks, resumed sweeps) and ``profile.run`` (any MPI
program with the counter library preloaded) both go through these steps.
"""

import csv
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import launch, mpi as mpimod, srun_mpi
from ..errors import EnvironmentProblem, InputError
from ..paths import write_text_atomic
from ..topology import node_topology, shared_hosts, shared_hosts_note

#: What the MPI says about itself (cs_mpiinfo) that every run records in meta.json's ``mpi``.
MPI_FACTS = ("library_version", "mpi_version", "thread_level_provided", "partitioned")


@dataclass
class Collector:
    """What one kind of instrumentation adds to a run's launch: preload libraries and
    environment for the ranks, notes for the launch plan, and ``finalize(run)`` that
    turns its raw files into tables after the job, whatever its outcome."""

    name: str
    preload: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    #: what made the run partial (set by finalize: an unreadable node, missing ranks)
    partial: list = field(default_factory=list)

    def finalize(self, run):  # noqa: D401 - overridden
        """Turn this collector's raw files in ``run`` into tables."""


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
        raise (
            srun_mpi.singleton_problem(plan, res.stderr)
            or EnvironmentProblem(
                f"cs_mpiinfo failed under {mpi.name} (launcher "
                f"{plan.argv[0]}):\n{res.stderr.strip()}"
            )
        )
    try:
        info = json.loads(res.stdout)
    except json.JSONDecodeError as exc:
        raise EnvironmentProblem(f"cs_mpiinfo printed malformed JSON: {exc}") from None
    write_text_atomic(cache, json.dumps(info, indent=2))
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


def plan_job(run, mpi, nranks, program, argv, collectors=(), **options):
    """The launch plan of ``program argv`` on ``nranks`` ranks for ``run``: with collectors,
    started as ``env LD_PRELOAD=... COMMSCOPE_PROFILE_DIR=<run>/raw K=V program argv`` so
    their libraries and variables reach the ranks only; their notes join the plan's.
    ``options`` go to ``launch.plan_launch`` (hosts, ranks_per_node, threads, bind,
    launcher).  A launch refused here leaves no run directory."""
    if collectors:
        program, argv = launch.wrap_env(
            program,
            argv,
            [p for c in collectors for p in c.preload],
            {
                "COMMSCOPE_PROFILE_DIR": str(run.raw_dir.resolve()),
                **{k: v for c in collectors for k, v in c.env.items()},
            },
        )
    with run.removed_if_refused():
        plan = launch.plan_launch(mpi, nranks, program, argv, **options)
    plan.notes += [n for c in collectors for n in c.notes]
    return plan


def record_start(run, mpi, info, plan, facts=MPI_FACTS, **more):
    """Record what will run in meta.json: the MPI and ``facts`` of what it says of itself
    (``info``: :func:`mpi_info`), the launch plan, its hosts, the node topology, then
    ``more`` (e.g. ``profile``)."""
    run.meta["mpi"] = {**mpi.to_dict(), **{k: info.get(k) for k in facts}}
    run.meta["launch"] = plan.to_dict()
    run.meta["hosts"] = plan.hosts
    run.meta["topology"] = node_topology()
    run.meta.update(more)
    run.save_meta()


def finalize_collectors(run, collectors, keep_going=False, problems=None):
    """Each collector turns its raw files into tables; returns what made the run partial,
    appended to ``problems`` (kept by the caller even when a write fails midway).
    ``keep_going``: a raw file the program left unreadable (InputError) is one more
    problem, and the next collector still runs."""
    problems = [] if problems is None else problems
    for c in collectors:
        try:
            c.finalize(run)
            problems += getattr(c, "partial", [])
        except InputError as exc:
            if not keep_going:
                raise
            problems.append(str(exc))
    return problems


#: A failed write as commscope's native parts report it, at the start of a line and behind
#: their own prefix: a profiled program's own messages never fail its run.
_NATIVE_WRITE_ERROR = re.compile(
    r"^(?:commscope native|commscope profile: rank \d+|commscope_ompt|commscope_threadtiming): "
    r"cannot write (.+?): ([^\[\n]+?) \[errno (\d+)\]",
    re.MULTILINE,
)


def native_write_error(stderr):
    """The OSError a native part reported (``<prefix>: cannot write PATH: REASON [errno N]``)."""
    found = _NATIVE_WRITE_ERROR.findall(stderr or "")
    if not found:
        return None
    path, reason, err = found[0]
    return OSError(int(err), reason, path)
