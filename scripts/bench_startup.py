#!/usr/bin/env python3
"""Start-up time of the commscope CLI: median wall time of a few light commands.

    .venv/bin/python scripts/bench_startup.py [--repeat 7] [--compare REV] [--quick]

Each command runs as a fresh process (what a user waits for).  With --compare REV the
same commands also run from a checkout of REV (``git worktree``, removed afterwards),
so the figures before and after a change come from one run on one machine.  The target
(issue 11): under 0.3 s for --help, --version, model stencil and model p2p.  --quick
(what `make bench QUICK=1` runs): each command once, this tree only.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from commscope.compare.figures import record  # noqa: E402

#: Each command with the spellings of older revisions (--size became --sizes, --profile
#: became --machine-model), the newest first.
COMMANDS = [
    [["--help"]],
    [["--version"]],
    [["model", "stencil", "--points", "27", "--decomp", "2x2x2"]],
    [
        [
            "model",
            "p2p",
            "--machine-model",
            "bluewaters",
            "--sizes",
            "1024",
            "--locality",
            "inter-node",
        ],
        ["model", "p2p", "--profile", "bluewaters", "--sizes", "1024", "--locality", "inter-node"],
        ["model", "p2p", "--profile", "bluewaters", "--size", "1024", "--locality", "inter-node"],
    ],
    [["bench", "pingpong", "--help"]],
]


def median_time(src, variants, repeat, samples=None):
    """Median wall time of the first spelling that this tree accepts, or None; every
    time measured goes to the list ``samples`` when one is given."""
    env = dict(os.environ, PYTHONPATH=str(src))
    for argv in variants:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "commscope", *argv],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                break
        else:
            if samples is not None:
                samples.extend(times)
            return statistics.median(times)
    return None


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=7, help="runs per command (default %(default)s)")
    ap.add_argument(
        "--compare", metavar="REV", default=None, help="also time this git revision (e.g. main~5)"
    )
    ap.add_argument("--quick", action="store_true", help="each command once, no --compare")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.compare = 1, None
    trees = {"this tree": ROOT / "src"}
    tmp, failed = None, []
    if args.compare:
        tmp = tempfile.mkdtemp(prefix="commscope-startup-")
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.compare],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        trees = {args.compare: Path(tmp) / "src", **trees}
    try:
        print(f"{'command':<60}" + "".join(f"{name:>14}" for name in trees))
        for variants in COMMANDS:
            cells = []
            for name, src in trees.items():
                samples = []
                t = median_time(src, variants, args.repeat, samples)
                cells.append(f"{t:>12.3f} s" if t is not None else f"{'failed':>14}")
                if t is not None and name == "this tree":  # kept by `make bench`
                    record(" ".join(variants[0]), samples)
                if t is None and name == "this tree":
                    failed.append(" ".join(variants[0]))
            print(f"{'commscope ' + ' '.join(variants[0]):<60}" + "".join(cells))
    finally:
        if tmp:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
    print(
        f"median of {args.repeat} fresh processes each; target < 0.3 s for --help, --version "
        "and the model commands"
    )
    if failed:
        print(f"bench_startup: failed in this tree: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
