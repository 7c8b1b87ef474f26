#!/usr/bin/env python3
"""Check `commscope diagnose` on real applications against a ground truth it did not compute.

Three MPI programs nobody here wrote, Debian's LAMMPS (`lmp`) and GROMACS (`gmx_mpi`),
both built against Debian's Open MPI 4.1 (scripts/install_validation_apps.sh), and
LLNL's LULESH 2.0 (its unmodified sources in third_party/lulesh, built here with that
MPI's mpicxx), each with a knob that changes the load balance:

- LAMMPS: a Lennard-Jones liquid filling 3/4 of a periodic box split in two along x
  (`processors 2 1 1`), so rank 0 holds twice rank 1's atoms; balanced with
  `balance 1.0 shift x 20 1.0` before the run (the same atoms, the same steps);
- GROMACS: a slab of SPC/E water filling 3/4 of the box along x on a 2 x 1 x 1 domain
  decomposition, `mdrun -dlb no` against `-dlb yes` (dynamic load balancing moves the
  domain boundary; the same system, the same steps);
- LULESH: 8 ranks (a cube), 11 regions, `-c 8` makes about half the regions 8 times
  (5 % of them 80 times) as costly to evaluate, spread unevenly over the ranks, against
  `-c 1` (every region alike).  This knob adds work, so no saving is measured: the load
  balance and the culprits are checked.

The ground truth comes from native/shim/timing_shim.c, a preloaded library of its own
(no code or clock shared with libcommscope): per rank, the wall time from MPI_Init to
MPI_Finalize, the time inside MPI, and the entry of every collective and MPI_Sendrecv
(with 2 ranks exchanging symmetrically, the ranks' n-th calls of one function are one
instance). From it, useful time = wall - MPI, the POP load balance
mean(useful) / max(useful), and the culprits: at each instance the last rank to enter
makes every other rank wait (its entry minus theirs); the culprits are the ranks that
caused at least half as much waiting as the rank that caused most. The applications' own timers are printed beside
it (LAMMPS's per-section min/avg/max, GROMACS's "Average load imbalance").

Each variant runs REPS times with the shim alone (its run time: the measured saving is
the best imbalanced run minus the best balanced run) and once under
`commscope profile --trace` with the shim stacked above libcommscope (preloaded first,
so both time the very same run); the diagnosis is read only through
`commscope diagnose RUN --json`: its efficiency.mpi.load_balance_efficiency, its top
finding's kind and culprit_ranks, and the load_imbalance finding's culprit_ranks and
predicted_saving_s.  Before any diagnosis is trusted, the MPI functions the profile
counted must all be ones the shim wraps (else their time would count as useful).

    scripts/validate_diagnose_apps.py [--quick] [--reps N] [--runs DIR] [--apps lammps,gromacs]

--quick (`make bench QUICK=1`): shorter runs, 1 repetition, runs in a temporary
directory.  Without the applications or Debian's mpicc it prints "skipped: <reason>"
and exits 3; it exits 1 when an application run fails or the shim misses a function.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MPICC = "/usr/bin/mpicc"
NRANKS = 2  # unless the application says otherwise (its nranks)
SKIPPED = 3
INSTALL = "scripts/install_validation_apps.sh (root)"
#: Called by the shim's own MPI_Init/MPI_Finalize wrappers, outside its window.
FRAME = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"}

LAMMPS_INPUT = """\
# Lennard-Jones liquid in 3/4 of the box: rank 0's half holds twice rank 1's atoms.
# newton off: no reverse communication of forces, so the first call after the force
# computation is the next step's neighbour check (MPI_Allreduce), where rank 0 enters last
units           lj
atom_style      atomic
newton          off
processors      2 1 1
lattice         fcc 0.8442
region          box block 0 20 0 10 0 10
region          liquid block 0 15 0 10 0 10
create_box      1 box
create_atoms    1 region liquid
mass            1 1.0
velocity        all create 1.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 1 delay 0 check yes
fix             1 all nve
{balance}
thermo          100
run             {steps}
"""

GROMACS_TOP = """\
#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spce.itp"

[ system ]
water slab in 3/4 of the box

[ molecules ]
"""
#: Reaction field, no PME: no separate PME ranks, so the 2 ranks are the 2 domains.
GROMACS_MDP = """\
integrator = md
dt = 0.002
nsteps = {steps}
cutoff-scheme = Verlet
coulombtype = reaction-field
epsilon-rf = 0
rcoulomb = 1.0
rvdw = 1.0
nstcalcenergy = 10
nstenergy = 0
nstlog = 0
tcoupl = v-rescale
tc-grps = System
tau-t = 0.1
ref-t = 300
gen-vel = yes
gen-temp = 300
gen-seed = 1
"""


@dataclass
class Variant:
    knob: str
    balanced: bool
    args: list = field(default_factory=list)


class Lammps:
    name = "LAMMPS (lmp)"
    key = "lammps"
    binary = requires = "lmp"
    nranks = NRANKS
    same_work = True
    steps, quick_steps = 1000, 300

    def available(self):
        return shutil.which(self.binary) is not None

    def prepare(self, work, quick):
        steps = self.quick_steps if quick else self.steps
        variants = []
        for knob, balance, balanced in (
            ("no balance", "", False),
            ("balance shift x", "balance 1.0 shift x 20 1.0", True),
        ):
            inp = work / f"lammps-{'balanced' if balanced else 'imbalanced'}.in"
            inp.write_text(LAMMPS_INPUT.format(balance=balance, steps=steps))
            variants.append(
                Variant(knob, balanced, ["-in", str(inp), "-screen", "none", "-nocite"])
            )
        return variants

    def program(self, variant, log):
        return self.binary, [*variant.args, "-log", str(log)]

    def own_timers(self, log):
        """(load balance, loop seconds) from LAMMPS's own log: its per-section
        min/avg/max over ranks of the compute sections (Pair, Neigh, Modify), avg over max
        (the same rank is the slowest in each here), and its "Loop time"."""
        text = Path(log).read_text()
        avg = mx = 0.0
        for section in ("Pair", "Neigh", "Modify"):
            m = re.search(rf"^{section}\s*\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)", text, re.M)
            if m:
                avg, mx = avg + float(m.group(2)), mx + float(m.group(3))
        loop = re.search(r"Loop time of (\S+)", text)
        return (avg / mx if mx else None), (float(loop.group(1)) if loop else None)


class Gromacs:
    name = "GROMACS (gmx_mpi mdrun)"
    key = "gromacs"
    binary = requires = "gmx_mpi"
    nranks = NRANKS
    same_work = True
    steps, quick_steps = 2000, 600

    def available(self):
        return shutil.which(self.binary) is not None and shutil.which("gmx") is not None

    def _gmx(self, work, *args):
        proc = subprocess.run(["gmx", "-quiet", *args], cwd=work, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"gmx {args[0]} failed: {proc.stderr[-2000:]}")

    def prepare(self, work, quick):
        """A 4.5 x 3 x 3 nm box of water placed in a 6 x 3 x 3 nm box (gmx solvate,
        editconf, grompp: GROMACS's own tools)."""
        steps = self.quick_steps if quick else self.steps
        (work / "topol.top").write_text(GROMACS_TOP)
        (work / "md.mdp").write_text(GROMACS_MDP.format(steps=steps))
        self._gmx(
            work,
            "solvate",
            "-cs",
            "spc216",
            "-box",
            "4.5",
            "3",
            "3",
            "-p",
            "topol.top",
            "-o",
            "water.gro",
        )
        self._gmx(
            work,
            "editconf",
            "-f",
            "water.gro",
            "-box",
            "6",
            "3",
            "3",
            "-center",
            "2.25",
            "1.5",
            "1.5",
            "-o",
            "slab.gro",
        )
        self._gmx(
            work,
            "grompp",
            "-f",
            "md.mdp",
            "-c",
            "slab.gro",
            "-p",
            "topol.top",
            "-o",
            "slab.tpr",
            "-po",
            "mdout.mdp",
        )
        common = ["mdrun", "-s", str(work / "slab.tpr"), "-ntomp", "1", "-nb", "cpu", "-noconfout"]
        return [
            Variant("-dlb no", False, [*common, "-dlb", "no"]),
            Variant("-dlb yes", True, [*common, "-dlb", "yes"]),
        ]

    def program(self, variant, log):
        # -deffnm: every output file next to the log, none in the current directory
        return self.binary, [*variant.args, "-deffnm", str(Path(log).with_suffix(""))]

    def own_timers(self, log):
        """(load balance, wall seconds) from GROMACS's own log: "Average load imbalance:
        X %" is max/avg - 1 of its domains' force times, so its balance is 1 / (1 + X)."""
        text = Path(log).read_text()
        imb = re.search(r"Average load imbalance: ([\d.]+)", text)
        wall = re.search(r"^\s*Time:\s+\S+\s+(\S+)", text, re.M)
        lb = 1 / (1 + float(imb.group(1)) / 100) if imb else None
        return lb, (float(wall.group(1)) if wall else None)


class Lulesh:
    name = "LULESH 2.0"
    key = "lulesh"
    nranks = 8  # LULESH wants a cube number of ranks
    same_work = False  # -c adds work
    requires = "mpicxx (libopenmpi-dev)"
    source = ROOT / "third_party" / "lulesh"
    binary = str(ROOT / "build" / "validation" / "lulesh2.0")
    size, quick_size, cycles, quick_cycles = 20, 20, 100, 40

    def available(self, mpicc=MPICC):
        return Path(mpicc).with_name("mpicxx").exists()

    def build(self, mpicc=MPICC):
        """lulesh2.0 from the vendored sources, MPI only (no OpenMP), once per change."""
        exe, sources = Path(self.binary), sorted(self.source.glob("lulesh*.cc"))
        if exe.exists() and all(exe.stat().st_mtime > s.stat().st_mtime for s in sources):
            return
        exe.parent.mkdir(parents=True, exist_ok=True)
        cmd = [str(Path(mpicc).with_name("mpicxx")), "-O2", "-g", "-DUSE_MPI=1",
               f"-I{self.source}", *map(str, sources), "-o", str(exe)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"building LULESH failed: {proc.stderr[-2000:]}")

    def prepare(self, work, quick):
        self.build()
        size = self.quick_size if quick else self.size
        cycles = self.quick_cycles if quick else self.cycles
        common = ["-s", str(size), "-i", str(cycles), "-r", "11", "-b", "1"]
        return [
            Variant("-c 8", False, [*common, "-c", "8"]),
            Variant("-c 1", True, [*common, "-c", "1"]),
        ]

    def program(self, variant, log):
        return self.binary, variant.args

    def own_timers(self, log):
        """LULESH prints only the slowest rank's elapsed time, on stdout: no load balance
        of its own."""
        return None, None


APPS = {a.key: a for a in (Lammps(), Gromacs(), Lulesh())}


def shim_library(mpicc=MPICC):
    """The timing shim built against ``mpicc``'s MPI by the project's CMake."""
    from commscope import mpi

    return mpi.build(mpi.select_mpi(mpicc), target="cs_timing_shim") / "libcs_timing_shim.so"


def read_shim(directory):
    """{rank: {"wall_s", "mpi_s", "init_end_ns", "finalize_ns", "functions": {name: (calls,
    seconds)}, "calls": [(function, entry_ns, exit_ns)]}} (the recorded calls) from the shim's files."""
    ranks = {}
    for path in sorted(Path(directory).glob("rank*.txt")):
        r = {"functions": {}, "calls": []}
        for line in path.read_text().splitlines():
            w = line.split()
            if w[0] == "function":
                r["functions"][w[1]] = (int(w[2]), float(w[3]))
            elif w[0] == "call":
                r["calls"].append((w[1], int(w[2]), int(w[3])))
            elif w[0] in ("wall_s", "mpi_s"):
                r[w[0]] = float(w[1])
            else:
                r[w[0]] = int(w[1])
        ranks[r["rank"]] = r
    if not ranks:
        raise RuntimeError(f"{directory}: the timing shim wrote nothing")
    return ranks


def shim_truth(ranks):
    """Load balance, culprits and run time from the shim's records alone."""
    useful = {r: d["wall_s"] - d["mpi_s"] for r, d in ranks.items()}
    lb = sum(useful.values()) / len(useful) / max(useful.values())
    # the n-th recorded call of one function on each rank is one instance
    by_fn = {}
    for r, d in ranks.items():
        for fn, entry, _ in d["calls"]:
            by_fn.setdefault(fn, {}).setdefault(r, []).append(entry)
    caused = dict.fromkeys(ranks, 0.0)
    for per_rank in by_fn.values():
        if set(per_rank) != set(ranks) or len({len(v) for v in per_rank.values()}) != 1:
            continue  # not every rank made the same calls: no instance is certain
        for entries in zip(*(per_rank[r] for r in sorted(per_rank))):
            last = max(range(len(entries)), key=entries.__getitem__)
            caused[sorted(per_rank)[last]] += sum(entries[last] - e for e in entries) * 1e-9
    top = max(caused.values())
    culprits = sorted(r for r, c in caused.items() if top > 0 and c >= top / 2)
    runtime = (
        max(d["finalize_ns"] for d in ranks.values())
        - min(d["init_end_ns"] for d in ranks.values())
    ) * 1e-9
    return {
        "useful_s": useful,
        "load_balance": lb,
        "culprits": culprits,
        "wait_caused_s": caused,
        "runtime_s": runtime,
        "most_useful": max(useful, key=useful.get),
    }


def shim_run(app, variant, work, tag, shim, mpicc=MPICC):
    """One run with only the shim preloaded; returns (shim truth, own timers)."""
    from commscope import launch, mpi

    out, log = work / f"{tag}.shim", work / f"{tag}.log"
    out.mkdir()
    program, args = app.program(variant, log)
    prog, words = launch.wrap_env(
        shutil.which(program), args, preload=[shim], env={"CS_TIMING_SHIM_DIR": str(out)}
    )
    plan = launch.plan_launch(mpi.select_mpi(mpicc), app.nranks, prog, words)
    res = launch.run_job(plan, cwd=work, echo=False, progress=False)
    if res.returncode:
        raise RuntimeError(
            f"{app.binary} ({variant.knob}) exited {res.returncode}: {res.kept('stderr')[-2000:]}"
        )
    return shim_truth(read_shim(out)), app.own_timers(log)


def profiled_run(app, variant, work, tag, shim, runs_root, mpicc=MPICC):
    """One `commscope profile --trace` run with the shim stacked above libcommscope;
    returns (run, shim truth of the same run, own timers)."""
    from commscope.profile.run import run_profile

    out, log = work / f"{tag}.shim", work / f"{tag}.log"
    out.mkdir()
    program, args = app.program(variant, log)
    # profile puts libcommscope first in LD_PRELOAD; the shell puts the shim before it
    # so the application's MPI_X is the shim's, whose next MPI_X is libcommscope's
    script = f'LD_PRELOAD={shim}:$LD_PRELOAD CS_TIMING_SHIM_DIR={out} exec "$@"'
    run, status = run_profile(
        "/bin/sh",
        ["-c", script, "sh", shutil.which(program), *args],
        nranks=app.nranks,
        trace=True,
        mpi_spec=mpicc,
        runs_root=runs_root,
        run_name=tag,
        echo=False,
    )
    if status:
        raise RuntimeError(f"{app.binary} ({variant.knob}) exited {status} (see {run.path})")
    return run, shim_truth(read_shim(out)), app.own_timers(log)


def diagnosis(run):
    """`commscope diagnose RUN --json`, read through its JSON only."""
    proc = subprocess.run(
        [sys.executable, "-m", "commscope", "diagnose", str(run.path), "--json"],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"commscope diagnose {run.path}: {proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    findings = doc.get("findings") or []
    imbalance = next((f for f in findings if f.get("kind") == "load_imbalance"), None)
    return {
        "load_balance": ((doc.get("efficiency") or {}).get("mpi") or {}).get(
            "load_balance_efficiency"
        ),
        "top_kind": findings[0]["kind"] if findings else None,
        "top_culprits": sorted(findings[0].get("culprit_ranks") or []) if findings else [],
        "imbalance_culprits": sorted(imbalance.get("culprit_ranks") or []) if imbalance else [],
        "predicted_saving_s": imbalance.get("predicted_saving_s") if imbalance else None,
    }


def uncovered(run, shim_ranks):
    """MPI functions the profile counted that the shim does not wrap: their time would
    count as useful in the shim's truth."""
    counted = set(run.table("functions")["function"])
    wrapped = set(next(iter(shim_ranks.values()))["functions"])
    return sorted(counted - wrapped - FRAME)


def validate_app(app, work, runs_root, reps=1, quick=False, mpicc=MPICC, shim=None):
    """Every variant of ``app``: shim-only runs, one profiled run, its diagnosis.
    Returns one row per variant (dicts; see ``table_rows``)."""
    shim = shim or shim_library(mpicc)
    work = Path(work) / app.key
    work.mkdir(parents=True, exist_ok=True)
    variants = app.prepare(work, quick)
    labels = ["balanced" if v.balanced else "imbalanced" for v in variants]
    # the variants alternate, so a load that comes and goes on a shared machine
    # slows both alike
    alone = {label: [] for label in labels}
    for i in range(reps):
        for variant, label in zip(variants, labels):
            tag = f"{app.key}-{label}-shim{i}"
            alone[label].append(shim_run(app, variant, work, tag, shim, mpicc))
    rows = []
    for variant, label in zip(variants, labels):
        tag = f"{app.key}-{label}-profile"
        run, stacked, own = profiled_run(app, variant, work, tag, shim, runs_root, mpicc)
        rows.append(
            {
                "app": app.name,
                "ranks": app.nranks,
                "same_work": app.same_work,
                "knob": variant.knob,
                "balanced": variant.balanced,
                "alone": alone[label],
                "stacked": stacked,
                "own": own,
                "diagnosis": diagnosis(run),
                "uncovered": uncovered(run, read_shim(work / f"{tag}.shim")),
                "run": run.path,
            }
        )
    return rows


def measured_saving(rows):
    """Best shim-only run time of the imbalanced variant minus the balanced one's, and
    the same from the application's own timer (best of the shim-only runs)."""
    by = {r["balanced"]: r for r in rows}
    if set(by) != {True, False} or not rows[0]["same_work"]:
        return None, None
    best = {b: min(t["runtime_s"] for t, _ in r["alone"]) for b, r in by.items()}
    own = {
        b: min((o[1] for _, o in r["alone"] if o[1] is not None), default=None)
        for b, r in by.items()
    }
    own_d = own[False] - own[True] if None not in own.values() else None
    return best[False] - best[True], own_d


def _ranks(ranks):
    return ",".join(map(str, ranks)) or "-"


def _f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def table_rows(rows):
    """The printed table: one line per application and knob setting."""
    out = []
    saving, own_saving = measured_saving(rows)
    for r in rows:
        s, d = r["stacked"], r["diagnosis"]
        alone_lb = [t["load_balance"] for t, _ in r["alone"]]
        out.append(
            {
                "program": r["app"],
                "ranks": r["ranks"],
                "knob": r["knob"],
                "shim LB (same run)": _f(s["load_balance"]),
                "shim LB (alone)": "/".join(_f(x) for x in alone_lb),
                "run time alone (best)": _f(min(t["runtime_s"] for t, _ in r["alone"]), "{:.2f} s"),
                "own-timer LB": _f(r["own"][0]),
                "shim culprits (wait caused)": " ".join(
                    f"{r}:{s['wait_caused_s'][r]:.2f}s" for r in sorted(s["wait_caused_s"])
                )
                + f" -> {_ranks(s['culprits'])}",
                "commscope LB": _f(d["load_balance"]),
                "top finding": f"{d['top_kind'] or 'none'} [{_ranks(d['top_culprits'])}]",
                "load_imbalance culprits": _ranks(d["imbalance_culprits"]),
                "predicted saving": _f(d["predicted_saving_s"], "{:.3f} s"),
                "measured saving (shim / own timer)": (
                    f"{_f(saving, '{:.3f}')} / {_f(own_saving, '{:.3f}')} s"
                    if not r["balanced"] and r["same_work"]
                    else "-"
                    if r["balanced"]
                    else "n/a: the knob adds work"
                ),
                "uncovered": ",".join(r["uncovered"]) or "none",
            }
        )
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", default=MPICC, help="mpicc of the MPI the applications use")
    ap.add_argument("--runs", default=None, help="where runs and inputs go (default: runs/)")
    ap.add_argument("--reps", type=int, default=None, help="shim-only runs per variant (default 3)")
    ap.add_argument("--apps", default=",".join(APPS), help="comma list of: " + ", ".join(APPS))
    ap.add_argument("--quick", action="store_true", help="shorter runs, 1 rep, a temp dir")
    args = ap.parse_args(argv)
    reps = args.reps or (1 if args.quick else 3)
    apps = [APPS[k] for k in args.apps.split(",") if k]
    missing = [a.requires for a in apps if not a.available()]
    if not Path(args.mpi).exists():
        missing.append(args.mpi)
    if missing:
        print(f"skipped: no {', '.join(missing)}; install with {INSTALL}", file=sys.stderr)
        return SKIPPED
    if args.runs is None:
        args.runs = tempfile.mkdtemp(prefix="validate-diagnose-apps-") if args.quick else "runs"
    root = Path(args.runs).resolve()
    root.mkdir(parents=True, exist_ok=True)
    from commscope.output import format_table

    table, bad = [], []
    shim = shim_library(args.mpi)
    for app in apps:
        print(
            f"running {app.name}: {reps} shim-only run(s) and 1 profiled run per variant",
            file=sys.stderr,
        )
        rows = validate_app(app, root / "inputs", root, reps, args.quick, args.mpi, shim)
        table += table_rows(rows)
        bad += [f"{r['app']} {r['knob']}: {r['uncovered']}" for r in rows if r["uncovered"]]
        for r in rows:
            print(f"run: {r['run']}", file=sys.stderr)
    load = os.getloadavg()[0]
    print(
        format_table(
            table,
            title="commscope diagnose on real applications: "
            "ground truth (timing shim, the programs' own timers) vs commscope "
            f"(load average {load:.1f} at the end)",
        )
    )
    if bad:
        print("the shim does not wrap: " + "; ".join(bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
