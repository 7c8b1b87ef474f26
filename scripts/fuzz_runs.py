#!/usr/bin/env python3
"""The long mutation pass: damaged run directories through every command that reads them.

    .venv/bin/python scripts/fuzz_runs.py [--cases N] [--quick] [--seed S] [--jobs J]
                                          [--originals DIR] [--limit S] [--spot K]

Makes small real runs of every kind once (tests/fuzzkit.py: the benchmark kinds, a
profile run with trace, snapshots and every counter, a `profile --ompt` run, a machine
model; kept in --originals between passes), then draws mutants from a seeded random
generator: a copy of one run with one file damaged, or an absurd option value, or an
output already there; and runs every command that reads that kind on it, each in a
child forked from this process (imports paid once), killed after --limit seconds.

A *case* is one mutated input run through one command.  Prints cases per command,
outcomes by class (exit 0 / exit 2 naming the damaged file / exit 2 not naming it /
crash / hang / invariant breaches: nan or inf shown, no output, a silent success (exit 0
without a word after reading a table damaged in a way kinds.py says every reader
refuses), a silent changed answer (an accepted answer of diagnose, compare, model
matching, stats imbalance or top that differs from the undamaged run's, with no
`commscope: warning:` line), input changed, output overwritten), and the crash and hang
signatures with an example each.  --spot K runs K
cases again through the real entry point (`python -m commscope`, a new process each) and
checks they end the same way.  Exits 1 when any case crashed, hung or broke an
invariant.  --quick: 60 cases.  A report costs seconds (figures), every other command
tenths: --report-every K keeps the long pass's time in bounds.
"""

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

import fuzzkit  # noqa: E402


def worker(index, jobs, cases, seed, originals, scratch, limit, sink, report_every, until):
    """Mutants seed+index, seed+index+jobs, ... until this worker's share of cases (or
    the time ``until``)."""
    share = cases // jobs + (index < cases % jobs)
    done, k = 0, index
    with open(sink, "w") as fh:
        while done < share and time.time() < until:
            work = Path(scratch) / f"m{k}"
            mutant = fuzzkit.draw_mutant(fuzzkit.Draw(seed * 1_000_003 + k), originals, work)
            if k % report_every and len(mutant.commands) > 1:  # reports take seconds each
                mutant.commands = [c for c in mutant.commands if c[0] != "report"]
            mutant.commands = mutant.commands[: share - done]
            for case in fuzzkit.run_mutant(mutant, limit_s=limit, originals=originals):
                fh.write(json.dumps({"mutant_no": k, "kind": mutant.kind, **vars(case)}) + "\n")
                fh.flush()
                done += 1
            shutil.rmtree(work, ignore_errors=True)
            k += jobs


def spot_check(records, originals, scratch, limit, k):
    """Re-run k cases (every crash and hang first) through `python -m commscope`."""
    by_mutant = collections.defaultdict(list)
    for r in records:
        by_mutant[r["mutant_no"]].append(r)
    picked = sorted(
        by_mutant, key=lambda m: (all(r["outcome"] in fuzzkit.GOOD for r in by_mutant[m]), m)
    )[:k]
    same = differ = 0
    notes = []
    for m in picked:
        work = Path(scratch) / f"spot{m}"
        seed = by_mutant[m][0]["seed"]
        mutant = fuzzkit.draw_mutant(fuzzkit.Draw(seed), originals, work)
        want = {r["command"]: r["outcome"] for r in by_mutant[m]}
        mutant.commands = [c for c in mutant.commands if c[0] in want]
        for case in fuzzkit.run_mutant(mutant, runner=fuzzkit.run_subprocess, limit_s=limit):
            if case.outcome == want[case.command]:
                same += 1
            else:
                differ += 1
                notes.append(
                    f"{case.command} on {mutant.what}: forked {want[case.command]}, "
                    f"subprocess {case.outcome}"
                )
        shutil.rmtree(work, ignore_errors=True)
    return same, differ, notes


def rerun(a, originals, scratch, setup_s):
    """The failed mutants of an earlier pass, every command each, with this code."""
    old = [json.loads(line) for line in Path(a.rerun).read_text().splitlines()]
    seeds = sorted({(r["seed"], r["mutant_no"]) for r in old if r["outcome"] in fuzzkit.FAILURES})
    t1 = time.perf_counter()
    records = []
    for seed, k in seeds:
        work = scratch / f"re{k}"
        mutant = fuzzkit.draw_mutant(fuzzkit.Draw(seed), originals, work)
        for case in fuzzkit.run_mutant(mutant, limit_s=a.limit, originals=originals):
            records.append({"mutant_no": k, "seed": seed, "kind": mutant.kind, **vars(case)})
        shutil.rmtree(work, ignore_errors=True)
    print(f"# rerun of the {len(seeds)} mutants that failed in {a.rerun}")
    return 1 if report(records, time.perf_counter() - t1, setup_s, a, [], (0, 0, [])) else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="cases to run (default 10000)")
    ap.add_argument("--quick", action="store_true", help="60 cases, 2 spot checks")
    ap.add_argument("--seed", type=int, default=1, help="seed of the mutants (default 1)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument(
        "--limit",
        type=float,
        default=60.0,
        help="seconds a command may take before it counts as a hang (default 60; "
        "a report takes up to 30 s on a loaded 2-core machine)",
    )
    ap.add_argument(
        "--report-every",
        type=int,
        default=1,
        metavar="K",
        help="run `report` on one mutant in K (default 1: all; a report costs "
        "seconds, the other commands tenths)",
    )
    ap.add_argument(
        "--spot",
        type=int,
        default=10,
        help="mutants re-run through `python -m commscope` (default 10)",
    )
    ap.add_argument(
        "--originals",
        default=None,
        help="where the real runs are made and kept (default: a temporary dir)",
    )
    ap.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="stop drawing mutants after this long (the totals say how many ran)",
    )
    ap.add_argument("--cases-out", default=None, help="write every case as JSON lines here")
    ap.add_argument(
        "--rerun",
        default=None,
        metavar="CASES",
        help="instead: run again every mutant that failed in an earlier pass's "
        "--cases-out file (after a fix: all of them must pass now)",
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.cases, a.spot = min(a.cases, 60), min(a.spot, 2)
    if a.cases < 1 or a.jobs < 1 or a.report_every < 1 or not a.limit > 0:
        ap.error("--cases, --jobs, --report-every and --limit must be positive")

    from commscope import mpi

    scratch = Path(tempfile.mkdtemp(prefix="cs-fuzz-"))
    try:
        originals_dir = Path(a.originals).resolve() if a.originals else scratch / "originals"
        originals_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        print("real runs to damage:", file=sys.stderr)
        m = mpi.select_mpi()
        mpi.build(m)
        originals = fuzzkit.make_originals(
            originals_dir, m, log=lambda s: print(s, file=sys.stderr)
        )
        kept = {k: fuzzkit.digest(p) for k, p in originals.items()}
        (scratch / "warm").mkdir()
        fuzzkit.warm_up(originals, scratch / "warm")
        t1 = time.perf_counter()
        if a.rerun:
            return rerun(a, originals, scratch, t1 - t0)
        until = time.time() + (a.minutes * 60 if a.minutes else 1e12)
        sinks, pids = [], []
        for i in range(a.jobs):
            sink = scratch / f"cases-{i}.jsonl"
            sinks.append(sink)
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    worker(
                        i,
                        a.jobs,
                        a.cases,
                        a.seed,
                        originals,
                        scratch,
                        a.limit,
                        sink,
                        a.report_every,
                        until,
                    )
                    status = 0
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(status)
            pids.append(pid)
        lost = [i for i, pid in enumerate(pids) if os.waitpid(pid, 0)[1] != 0]
        if lost:
            print(f"workers {lost} stopped early (see the traceback above)", file=sys.stderr)
        records = []
        for sink in sinks:
            for line in sink.read_text().splitlines():
                r = json.loads(line)
                r["seed"] = a.seed * 1_000_003 + r["mutant_no"]
                records.append(r)
        elapsed = time.perf_counter() - t1
        if a.cases_out:
            Path(a.cases_out).write_text("".join(json.dumps(r) + "\n" for r in records))
        changed = [k for k, p in originals.items() if fuzzkit.digest(p) != kept[k]]
        same, differ, notes = spot_check(records, originals, scratch, a.limit, a.spot)
        bad = report(records, elapsed, t1 - t0, a, changed, (same, differ, notes))
        return 1 if bad or changed or differ or lost else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(records, elapsed, setup_s, a, changed, spot):
    n = len(records)
    mutants = len({r["mutant_no"] for r in records})
    print(
        f"# fuzz_runs: {n} cases (one damaged input through one command) on {mutants} "
        f"mutants, seed {a.seed}, {a.jobs} worker(s), limit {a.limit:g} s per command, "
        f"report on one mutant in {a.report_every}"
    )
    print(
        f"# {elapsed:.0f} s ({elapsed / max(n, 1) * 1000:.0f} ms per case), "
        f"real runs and imports {setup_s:.0f} s"
    )
    classes = fuzzkit.CLASSES
    by_cmd = collections.defaultdict(collections.Counter)
    for r in records:
        by_cmd[r["command"]][r["outcome"]] += 1
    short = {
        "exit 0": "exit0",
        "exit 2 naming": "exit2_named",
        "exit 2 not naming": "exit2_other",
        "crash": "crash",
        "hang": "hang",
        "insane output": "nan/empty",
        "silent success": "silent",
        "silent changed answer": "changed",
        "input changed": "in_changed",
        "output overwritten": "out_breach",
    }
    print()
    print(f"{'command':30s} {'cases':>6s} " + " ".join(f"{short[c]:>11s}" for c in classes))
    total = collections.Counter()
    for cmd in sorted(by_cmd):
        c = by_cmd[cmd]
        total.update(c)
        print(f"{cmd:30s} {sum(c.values()):6d} " + " ".join(f"{c[k]:11d}" for k in classes))
    print(f"{'all':30s} {n:6d} " + " ".join(f"{total[k]:11d}" for k in classes))
    kinds = collections.Counter(r["kind"] for r in records)
    print("\ncases per run kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    sigs = collections.defaultdict(list)
    for r in records:
        if r["outcome"] in fuzzkit.FAILURES:
            sigs[(r["outcome"], r["signature"] or r["detail"][:150])].append(r)
    print(f"\nfailure signatures: {len(sigs)}")
    for (outcome, sig), rs in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        ex = rs[0]
        print(
            f"  {len(rs):5d}  {outcome}: {sig}\n         e.g. {ex['command']} on {ex['kind']} "
            f"{ex['mutant']} (seed {ex['seed']})"
        )
    unnamed = collections.Counter(
        (r["command"], r["detail"][:110]) for r in records if r["outcome"] == "exit 2 not naming"
    )
    if unnamed:
        print("\nexit 2 not naming the damaged file (most common):")
        for (cmd, line), k in unnamed.most_common(8):
            print(f"  {k:5d}  {cmd}: {line}")
    same, differ, notes = spot
    print(f"\nspot check through `python -m commscope`: {same} cases end the same, {differ} differ")
    for note in notes:
        print(f"  {note}")
    if changed:
        print(f"\noriginals changed: {changed}")
    return bool(sigs)


if __name__ == "__main__":
    sys.exit(main())
