"""``commscope doctor``: what a user checks first about this machine and its MPI."""

import os
import shutil
from pathlib import Path

from . import launch, mpi as mpimod
from .collect.lifecycle import mpi_info
from .collect import ompt
from .topology import node_topology


def diagnose(mpi_spec=None, ompt_binary=None):
    """Collect the doctor's findings as a dict (the CLI prints or dumps it).

    ``ompt_binary``: also say whether OMPT thread timing can work for that program.
    """
    mpi = mpimod.select_mpi(mpi_spec)
    info = mpi_info(mpi)
    slurm = launch.in_slurm_allocation()
    return {
        "mpi": {
            "name": mpi.name,
            "flavor": mpi.flavor,
            "mpicc": mpi.mpicc,
            "library_version": info.get("library_version", "").strip(),
            "mpi_version": info.get("mpi_version"),
            "thread_level_provided": info.get("thread_level_provided"),
            "partitioned": info.get("partitioned"),
            "partitioned_note": partitioned_note(info.get("mpi_version"), info.get("partitioned")),
            "build_dir": str(mpimod.build_dir(mpi)),
        },
        "launcher": {
            "default": "srun" if slurm else "mpiexec",
            "mpiexec": mpi.mpiexec,
            "srun": shutil.which("srun"),
            "slurm_allocation": os.environ.get("SLURM_JOB_ID"),
            "running_as_root": os.geteuid() == 0,
        },
        "ompt": ompt.probe(mpi, ompt_binary),
        "topology": node_topology(),
        "mpi_t": {
            "available": info.get("mpi_t", False),
            "cvar_count": info.get("cvar_count", 0),
            "pvar_count": info.get("pvar_count", 0),
            "queue_pvars": [v["name"] for v in info.get("queue_pvars", [])],
            "eager_cvars": mpimod.eager_limits(info.get("eager_cvars")),
        },
    }


def partitioned_note(mpi_version, partitioned):
    """Why a library can report an older MPI version and still have MPI-4 partitioned calls.

    MPI_Get_version gives the newest standard the library implements *completely*;
    Open MPI 5 says 3.1 while it ships most of MPI-4, including MPI_Psend_init and
    MPI_Pready, which commscope detects by compiling against them.
    """
    try:
        major = int(str(mpi_version).split(".")[0])
    except ValueError:
        major = None
    if partitioned and major is not None and major < 4:
        return (
            f"MPI_Get_version reports {mpi_version}, the newest standard this library "
            "implements in full; it still provides MPI-4's partitioned calls, found by "
            "compiling against them"
        )
    if not partitioned:
        return "the library does not provide MPI_Psend_init / MPI_Pready (found by compiling)"
    return "MPI-4 partitioned calls present"


def format_report(d):
    """Human-readable doctor output."""
    m, la, o, t, mt = d["mpi"], d["launcher"], d["ompt"], d["topology"], d["mpi_t"]
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    lines = [
        f"MPI             {m['name']} ({m['flavor']}), MPI {m['mpi_version']}",
        f"  library       {m['library_version'].splitlines()[0] if m['library_version'] else '?'}",
        f"  mpicc         {m['mpicc']}",
        f"  thread level  {m['thread_level_provided']} (requested MPI_THREAD_MULTIPLE)",
        f"  partitioned   {yes(m['partitioned'])} (MPI-4 MPI_Psend_init / MPI_Pready)",
        f"                {m['partitioned_note']}",
        f"launcher        {la['default']}: {la['mpiexec'] if la['default'] == 'mpiexec' else la['srun']}",
        f"  as root       {yes(la['running_as_root'])}"
        + (
            " (Open MPI root flags set automatically)"
            if la["running_as_root"] and m["flavor"] == "openmpi"
            else ""
        ),
        f"  slurm         {la['slurm_allocation'] or 'not in an allocation'}",
        f"OMPT            {yes(o['available'])}"
        + (
            f"  ({o['hint']})"
            if o["hint"]
            else f"  (probe: {o['probe']['runtime_version']}, "
            f"barriers seen: {', '.join(o['probe']['barrier_kinds'])})"
        ),
        f"topology        {t['host']}: {t['sockets']} socket(s), {t['cores']} core(s), "
        f"{t['hardware_threads']} hardware thread(s), {t['numa_nodes']} NUMA node(s)",
        f"MPI_T           {yes(mt['available'])}: {mt['cvar_count']} control, "
        f"{mt['pvar_count']} performance variables",
        f"  queue pvars   {', '.join(mt['queue_pvars']) or 'none'}",
    ]
    if o.get("binary"):
        b = o["binary"]
        lines.insert(
            lines.index(next(x for x in lines if x.startswith("topology"))),
            f"  {Path(b['path']).name:13s} {'yes' if b['ok'] else 'no'}: {b['how']}",
        )
    eager = mt["eager_cvars"]
    if eager:
        lines.append("  eager/rndv    " + ", ".join(f"{k}={v}" for k, v in eager.items()))
    return "\n".join(lines)
