"""Batch scripts for multi-node studies under Slurm.

Inside an allocation commscope's launcher uses ``srun`` (see commscope.launch), so
the script only sets the allocation up and calls the same commscope commands a
user runs on one node.
"""

import shlex
import sys
from pathlib import Path

from .errors import InputError

DEFAULT_STEPS = [
    # one rank per node: the pair is inter-node
    "commscope bench pingpong --ranks-per-node 1 --name pingpong-internode",
    # ppn ranks per node, block placement: rank i on node 0 pairs with i+ppn on node 1
    "commscope bench pingpong --pairs {ppn} --ranks-per-node {ppn} -m 64K:4M "
    "--name pingpong-ppn{ppn}",
    "commscope bench hvpingpong --ranks-per-node 1 --name hvpingpong",
    "commscope fit runs/pingpong-internode runs/pingpong-ppn{ppn} -o machine-profile.json",
    "commscope report runs -o report.html --profile machine-profile.json",
]


def batch_script(nodes, ntasks_per_node, time="00:30:00", partition=None, account=None,
                 job_name="commscope", steps=None, venv=None, workdir=None):
    """Return the text of an sbatch script running ``steps`` (commscope command lines)."""
    if nodes < 1:
        raise InputError("--nodes", None, f"must be at least 1, got {nodes}")
    if ntasks_per_node < 1:
        raise InputError("--ntasks-per-node", None, f"must be at least 1, got {ntasks_per_node}")
    if not _valid_time(time):
        raise InputError("--time", None, f"expected [D-]HH:MM:SS, got {time!r}")
    venv = Path(venv or sys.prefix)
    ppn = max(1, ntasks_per_node // 2)
    steps = [s.format(ppn=ppn, nodes=nodes) for s in (steps or DEFAULT_STEPS)]
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={job_name}",
             f"#SBATCH --nodes={nodes}",
             f"#SBATCH --ntasks-per-node={ntasks_per_node}",
             f"#SBATCH --time={time}",
             "#SBATCH --exclusive"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if account:
        lines.append(f"#SBATCH --account={account}")
    lines += ["", "# Written by `commscope slurm`; commscope launches with srun inside the",
              "# allocation, so each step below is what you would type on one node.",
              "set -euo pipefail",
              f"cd {shlex.quote(str(workdir or Path.cwd()))}",
              f"source {shlex.quote(str(venv / 'bin' / 'activate'))}",
              "export COMMSCOPE_RUNS=${COMMSCOPE_RUNS:-runs}", ""]
    lines += steps
    return "\n".join(lines) + "\n"


def _valid_time(text):
    import re
    return bool(re.fullmatch(r"(\d+-)?\d{1,2}:\d{2}:\d{2}|\d+", text))
