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
]
# Node i sends to node i + N/2 (Bienz et al. 2018, Fig. 6): only on an even number of nodes, N >= 4.
CONTENTION_STEP = (
    "commscope bench hvpingpong --contention --ranks-per-node {ppn} "
    "--messages 1:1000 --sizes 8,4K,64K --name hvpingpong-contention"
)
FINAL_STEPS = [
    'commscope fit "$COMMSCOPE_RUNS" -o "$STUDY/machine-model.json"',
    'commscope report "$COMMSCOPE_RUNS" -o "$STUDY/report.html" '
    '--machine-model "$STUDY/machine-model.json"',
]


def default_steps(nodes):
    steps = list(DEFAULT_STEPS)
    if nodes >= 4 and nodes % 2 == 0:
        steps.append(CONTENTION_STEP)
    return steps + FINAL_STEPS


def batch_script(
    nodes,
    ntasks_per_node,
    time="00:30:00",
    partition=None,
    account=None,
    job_name="commscope",
    steps=None,
    venv=None,
    workdir=None,
):
    """Return the text of an sbatch script running ``steps`` (commscope command lines).

    Each job writes into its own study directory (``study-<job id>``, or
    ``$COMMSCOPE_STUDY``): runs, machine model and report. ``steps`` are
    commscope command lines, with or without the leading ``commscope``. In them,
    ``{ppn}`` (half the tasks per node) and ``{nodes}`` are substituted; other
    braces are left alone.
    """
    if nodes < 1:
        raise InputError("--nodes", None, f"must be at least 1, got {nodes}")
    if ntasks_per_node < 1:
        raise InputError("--ntasks-per-node", None, f"must be at least 1, got {ntasks_per_node}")
    if not _valid_time(time):
        raise InputError("--time", None, f"expected [D-]HH:MM:SS, got {time!r}")
    venv = Path(venv or sys.prefix)
    ppn = max(1, ntasks_per_node // 2)
    steps = [commscope_step(s) for s in steps] if steps else default_steps(nodes)
    steps = [s.replace("{ppn}", str(ppn)).replace("{nodes}", str(nodes)) for s in steps]
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks-per-node={ntasks_per_node}",
        f"#SBATCH --time={time}",
        "#SBATCH --exclusive",
    ]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if account:
        lines.append(f"#SBATCH --account={account}")
    lines += [
        "",
        "# Written by `commscope slurm`; commscope launches with srun inside the",
        "# allocation, so each step below is what you would type on one node.",
        "set -euo pipefail",
        f"cd {shlex.quote(str(workdir or Path.cwd()))}",
        f"source {shlex.quote(str(venv / 'bin' / 'activate'))}",
        'export STUDY="${COMMSCOPE_STUDY:-study-${SLURM_JOB_ID:-$$}}"',
        'export COMMSCOPE_RUNS="$STUDY/runs"',
        "",
    ]
    lines += steps
    return "\n".join(lines) + "\n"


def commscope_step(text):
    """``text`` as a ``commscope ...`` line: the leading ``commscope`` is optional.

    Refused (InputError naming --step): anything whose command is not a commscope
    command, and shell chaining (one command per step).
    """
    from .cli import build_parser

    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:  # unbalanced quotes
        raise InputError("--step", None, f"{text!r}: {exc}") from None
    chained = [w for w in words if w and set(w) <= set(";&|<>")]
    if chained:
        raise InputError(
            "--step",
            None,
            f"{text!r}: one commscope command per --step "
            f"(found {chained[0]!r}); give --step again for the next one",
        )
    rest = text.strip()
    if words[:1] == ["commscope"] or (words and words[0].endswith("/commscope")):
        words, rest = words[1:], rest.split(None, 1)[1] if len(words) > 1 else ""
    parser, path = build_parser(), []
    for word in words[:2]:
        choices = _subcommands(parser)
        if choices is None:
            break
        if word not in choices:
            raise InputError(
                "--step",
                None,
                f"{text!r} is not a commscope command: "
                f"{' '.join([*path, word])!r} is not one of "
                f"{', '.join(sorted(choices))}",
            )
        parser, path = choices[word], [*path, word]
    if not path:
        raise InputError("--step", None, "empty step: give a commscope command line")
    return f"commscope {rest}"


def _subcommands(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def _valid_time(text):
    import re

    return bool(re.fullmatch(r"(\d+-)?\d{1,2}:\d{2}:\d{2}|\d+", text))
