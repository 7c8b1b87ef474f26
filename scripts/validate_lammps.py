#!/usr/bin/env python3
"""Profile Debian's LAMMPS on 2 ranks and check commscope's counts against LAMMPS's logic.

LAMMPS (the application 001 profiled) is not part of commscope; `lmp` comes from
Debian's `lammps` package, built against Debian's Open MPI 4.1
(scripts/install_validation_apps.sh installs both, as root). The input is LAMMPS's
Lennard-Jones melt with a fixed neighbor-list schedule (`neigh_modify every E delay 0
check no`: no distance check, so no Allreduce decides the rebuilds). What the counts
must be, from LAMMPS's source (CommBrick, Verlet, Thermo, Input), per rank, with 2
ranks split along one dimension (LAMMPS prints "1 by 1 by 2 MPI processor grid") and
sub-domains wider than the ghost cutoff (one neighbour per side, both the other rank):

- each of the 2 swaps with the other rank is MPI_Irecv + MPI_Send + MPI_Wait;
- forward_comm (positions) on each step without a rebuild: 2 swaps;
- reverse_comm (forces, newton on) on every step and once in setup: 2 swaps;
- exchange (atoms migrating) before each rebuild and in setup: MPI_Sendrecv of the
  count, then one Irecv + Send + Wait for the dimension with 2 ranks;
- borders (ghost lists) after each exchange: per swap a Sendrecv of the count, then
  Irecv + Send + Wait;

so with S steps and R rebuilds (LAMMPS's log: "Neighbor list builds = R", which must
be S / E) MPI_Sendrecv = 3 (R + 1) and MPI_Irecv = MPI_Send = MPI_Wait =
3 (R + 1) + 2 (S - R) + 2 (S + 1); every message goes to the other rank. Collectives
are checked by difference between two inputs: Input::file broadcasts each input line
(length, then text: 2 MPI_Bcast per line) and each thermo output with `thermo_style
custom step temp` makes 2 MPI_Allreduce (Thermo::lost_check, ComputeTemp::compute_scalar);
nothing else depends on the steps.

    scripts/validate_lammps.py [--mpi /usr/bin/mpicc] [--runs DIR] [--quick]

prints expected and counted calls per rank and exits 1 on any difference.  --quick (what
`make bench QUICK=1` runs): shorter inputs (QUICK_CASES), the runs in a temporary
directory unless --runs is given.  Without `lmp` or the MPI it is linked with it prints
"skipped: <reason>" and exits 3.
"""

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

MPICC = "/usr/bin/mpicc"
P2P = ("MPI_Sendrecv", "MPI_Irecv", "MPI_Send", "MPI_Wait")
MELT = """\
# 3-d Lennard-Jones melt (LAMMPS examples/melt) with a fixed rebuild schedule
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 10 0 10 0 10
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every {every} delay 0 check no
fix             1 all nve
thermo_style    custom step temp
thermo          {thermo}
run             {steps}
"""
#: Two inputs that differ in steps, rebuild interval, thermo interval and input lines.
CASES = (
    dict(steps=200, every=10, thermo=50, extra_lines=0),
    dict(steps=300, every=20, thermo=10, extra_lines=3),
)
#: --quick: the same checks on shorter runs.
QUICK_CASES = (
    dict(steps=40, every=10, thermo=20, extra_lines=0),
    dict(steps=60, every=20, thermo=10, extra_lines=3),
)
#: Exit status when lmp or its MPI is missing (scripts/bench.py: skipped).
SKIPPED = 3


def lammps_binary():
    """`lmp` from Debian's lammps package, or None."""
    return shutil.which("lmp")


def write_input(path, steps, every, thermo, extra_lines=0):
    """The melt input; ``extra_lines`` comment lines at the end (each one 2 more Bcasts)."""
    text = MELT.format(steps=steps, every=every, thermo=thermo) + "# padding\n" * extra_lines
    Path(path).write_text(text)
    return len(text.splitlines())


def expected_p2p(steps, rebuilds):
    """Point-to-point calls per rank (see the module docstring)."""
    swaps = 3 * (rebuilds + 1) + 2 * (steps - rebuilds) + 2 * (steps + 1)
    return {
        "MPI_Sendrecv": 3 * (rebuilds + 1),
        "MPI_Irecv": swaps,
        "MPI_Send": swaps,
        "MPI_Wait": swaps,
    }


def thermo_outputs(steps, thermo):
    return steps // thermo + 1 + (1 if steps % thermo else 0)  # step 0, every N, the last


def read_log(path):
    """(neighbor list builds, processor grid) from a LAMMPS log file."""
    text = Path(path).read_text()
    builds = re.search(r"Neighbor list builds = (\d+)", text)
    grid = re.search(r"(\d+) by (\d+) by (\d+) MPI processor grid", text)
    if not builds or not grid:
        raise ValueError(f"{path}: no 'Neighbor list builds' or processor grid line")
    return int(builds.group(1)), tuple(int(g) for g in grid.groups())


def profile_case(case, workdir, runs_root, mpicc=MPICC, name=None):
    """Profile one input on 2 ranks; returns (run, rebuilds, grid, input lines)."""
    from commscope.profile.run import run_profile

    workdir = Path(workdir)
    tag = name or f"lammps-{case['steps']}-{case['every']}-{case['thermo']}"
    inp, log = workdir / f"{tag}.in", workdir / f"{tag}.log"
    lines = write_input(inp, case["steps"], case["every"], case["thermo"], case["extra_lines"])
    run, status = run_profile(
        lammps_binary(),
        ["-in", str(inp), "-log", str(log), "-screen", "none", "-nocite"],
        nranks=2,
        mpi_spec=mpicc,
        runs_root=runs_root,
        run_name=tag,
        echo=False,
    )
    if status != 0:
        raise RuntimeError(f"lmp exited with status {status} (see {run.path})")
    rebuilds, grid = read_log(log)
    return run, rebuilds, grid, lines


def calls_per_rank(run):
    """{rank: {function: calls}} summed over threads, from the profile's functions table."""
    f = run.table("functions")
    return {
        int(r): {fn: int(c) for fn, c in g.groupby("function")["calls"].sum().items()}
        for r, g in f.groupby("rank")
    }


def comparison_rows(cases):
    """Rows (what, rank, expected, counted) for every check over the profiled cases.

    ``cases``: list of (case, run, rebuilds, grid, lines).
    """
    rows = []
    counted = [calls_per_rank(run) for _, run, *_ in cases]
    for (case, run, rebuilds, grid, _), calls in zip(cases, counted):
        label = f"{case['steps']} steps, every {case['every']}"
        rows.append(
            (f"{label}: neighbor list builds", "-", case["steps"] // case["every"], rebuilds)
        )
        rows.append((f"{label}: ranks per dimension, sorted", "-", (1, 1, 2), tuple(sorted(grid))))
        want = expected_p2p(case["steps"], rebuilds)
        for rank in (0, 1):
            for fn in P2P:
                rows.append((f"{label}: {fn}", rank, want[fn], calls[rank].get(fn, 0)))
        peers = run.table("peers")
        for rank in (0, 1):
            row = peers[(peers["rank"] == rank) & (peers["peer"] == 1 - rank)]
            sent = int(row["messages_sent"].sum()) if len(row) else 0
            rows.append(
                (
                    f"{label}: messages to the other rank",
                    rank,
                    want["MPI_Send"] + want["MPI_Sendrecv"],
                    sent,
                )
            )
    (a, _, _, _, lines_a), (b, _, _, _, lines_b) = cases[0], cases[1]
    d_out = thermo_outputs(b["steps"], b["thermo"]) - thermo_outputs(a["steps"], a["thermo"])
    for rank in (0, 1):
        rows.append(
            (
                "difference: MPI_Bcast (2 per input line)",
                rank,
                2 * (lines_b - lines_a),
                counted[1][rank].get("MPI_Bcast", 0) - counted[0][rank].get("MPI_Bcast", 0),
            )
        )
        rows.append(
            (
                "difference: MPI_Allreduce (2 per thermo output)",
                rank,
                2 * d_out,
                counted[1][rank].get("MPI_Allreduce", 0) - counted[0][rank].get("MPI_Allreduce", 0),
            )
        )
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", default=MPICC, help="mpicc of the MPI lmp is linked with")
    ap.add_argument(
        "--runs", default=None, help="where the profile run directories go (default: runs/)"
    )
    ap.add_argument("--quick", action="store_true", help="shorter inputs, runs in a temp dir")
    args = ap.parse_args(argv)
    if not lammps_binary():
        print(
            "skipped: no lmp on PATH; install it with scripts/install_validation_apps.sh (root)",
            file=sys.stderr,
        )
        return SKIPPED
    if not Path(args.mpi).exists():
        print(
            f"skipped: no {args.mpi} (the MPI lmp is linked with; "
            "scripts/install_validation_apps.sh)",
            file=sys.stderr,
        )
        return SKIPPED
    if args.runs is None:
        args.runs = tempfile.mkdtemp(prefix="validate-lammps-") if args.quick else "runs"
    Path(args.runs).mkdir(parents=True, exist_ok=True)
    from commscope.output import format_table

    cases = []
    for case in QUICK_CASES if args.quick else CASES:
        print(f"profiling lmp: {case}", file=sys.stderr)
        cases.append((case, *profile_case(case, args.runs, args.runs, args.mpi)))
    rows = comparison_rows(cases)
    table = [
        {
            "check": w,
            "rank": r,
            "expected": str(e),
            "counted": str(g),
            "agrees": "yes" if g == e else "NO",
        }
        for w, r, e, g in rows
    ]
    print(
        format_table(
            table,
            title="LAMMPS melt on 2 ranks: counts implied by LAMMPS's logic "
            "vs counted by commscope profile",
        )
    )
    for case, run, *_ in cases:
        print(f"run: {run.path}")
    return 0 if all(t["agrees"] == "yes" for t in table) else 1


if __name__ == "__main__":
    sys.exit(main())
