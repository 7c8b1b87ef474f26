"""How big `commscope export` output gets, per traced call, for docs/export.md.

Profiles two test programs with --trace (exact_threads: 2 ranks x THREADS threads of
blocking, nonblocking and persistent point-to-point calls; ring_imbalance: a ring of
MPI_Sendrecv on RANKS ranks), exports each to Perfetto JSON and OTF2, and prints per
run: traced calls, trace records, messages, bytes of the raw trace, of the JSON and of
the OTF2 archive, bytes per call, and the export time.

With ``--scale`` it measures instead what the issue asks for: export_coll (2 ranks x 2
threads of point-to-point calls and every kind of collective) and the ring (MPI_Sendrecv
and MPI_Allreduce, no sleep) at 2 and at ``--big-ranks`` ranks (128: oversubscribed on
a small machine), with the OTF2 archive read back by the OTF2 reader: its events per
rank, by kind.

    python scripts/export_sizes.py [--threads 8] [--ranks 4] [--iterations 2000] [--quick]
    python scripts/export_sizes.py --scale [--big-ranks 128] [--iterations 20]
"""

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from commscope import mpi
from commscope.profile.export import export_run
from commscope.profile.run import run_profile
from commscope.runs import open_run

ROOT = Path(__file__).resolve().parents[1]


def measure(run_path, name):
    run = open_run(run_path)
    raw = sum(p.stat().st_size for p in run.raw_dir.glob("trace.*.bin"))
    row = {"run": name}
    for fmt in ("perfetto", "otf2"):
        t = time.perf_counter()
        out = export_run(run, fmt, force=True)
        row[f"{fmt}_s"] = time.perf_counter() - t
        row[f"{fmt}_bytes"] = out["bytes"]
    row.update(
        ranks=out["ranks"],
        calls=out["calls"],
        records=out["trace_records"],
        messages=out["messages"],
        snapshots=out["snapshots"],
        raw_trace_bytes=raw,
    )
    for fmt in ("perfetto", "otf2"):
        row[f"{fmt}_bytes_per_call"] = row[f"{fmt}_bytes"] / max(out["calls"], 1)
    return row


def otf2_events_per_rank(anchor):
    """{rank: Counter(event kind)} of an OTF2 archive, read back with the OTF2 reader."""
    import collections
    import otf2

    out = collections.defaultdict(collections.Counter)
    with otf2.reader.open(str(anchor)) as trace:
        for location, event in trace.events:
            out[int(location.group.name.split()[1])][type(event).__name__] += 1
    return out


def scale(args, m, exes, tmp):
    kw = dict(runs_root=tmp / "runs", echo=False, trace=True, timeout=1800)
    cases = [("export_coll 2 ranks x 2 threads", exes["export_coll"], [], 2)]
    for n in (2, args.big_ranks):
        cases.append(
            (
                f"ring {n} ranks x {args.iterations}",
                exes["ring_imbalance"],
                [str(args.iterations), "0"],
                n,
            )
        )
    for name, exe, argv, n in cases:
        t = time.perf_counter()
        run, status = run_profile(exe, argv, nranks=n, **kw)
        took = time.perf_counter() - t
        assert status == 0, (name, status)
        r = measure(run.path, name)
        per_rank = otf2_events_per_rank(open_run(run.path).path / "export" / "traces.otf2")
        totals = {rank: sum(c.values()) for rank, c in per_rank.items()}
        kinds = sorted({k for c in per_rank.values() for k in c})
        print(
            f"{name}: profile {took:.1f} s; {r['calls']} calls, {r['records']} records, "
            f"{r['messages']} messages; raw trace {r['raw_trace_bytes']} B; Perfetto JSON "
            f"{r['perfetto_bytes']} B ({r['perfetto_bytes_per_call']:.0f} B/call, "
            f"{r['perfetto_s']:.2f} s); OTF2 {r['otf2_bytes']} B ({r['otf2_bytes_per_call']:.0f} "
            f"B/call, {r['otf2_s']:.2f} s)"
        )
        print(
            f"  OTF2 read back: {len(per_rank)} ranks, {sum(totals.values())} events, "
            f"per rank {min(totals.values())}..{max(totals.values())}"
        )
        shown = (
            sorted(per_rank) if len(per_rank) <= 4 else sorted(per_rank)[:2] + sorted(per_rank)[-1:]
        )
        for rank in shown:
            print(f"  rank {rank}: " + ", ".join(f"{k} {per_rank[rank][k]}" for k in kinds))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8, help="threads of exact_threads (default 8)")
    ap.add_argument("--ranks", type=int, default=4, help="ranks of the ring (default 4)")
    ap.add_argument("--iterations", type=int, default=2000, help="ring iterations (default 2000)")
    ap.add_argument(
        "--scale",
        action="store_true",
        help="sizes and OTF2 events per rank at 2 and --big-ranks ranks",
    )
    ap.add_argument(
        "--big-ranks", type=int, default=128, help="ranks of the --scale ring (default 128)"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="2 threads, a ring of 2 ranks x 100 iterations (make bench QUICK=1)",
    )
    args = ap.parse_args()
    if args.quick:
        args.threads, args.ranks, args.iterations = 2, 2, 100
    m = mpi.select_mpi()
    mpi.build(m)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exes = {}
        for name in ("exact_threads", "ring_imbalance", "export_coll"):
            exes[name] = tmp / name
            subprocess.run(
                [
                    m.mpicc,
                    "-O2",
                    "-pthread",
                    str(ROOT / "tests/programs" / f"{name}.c"),
                    "-o",
                    str(exes[name]),
                ],
                check=True,
            )
        if args.scale:
            return scale(args, m, exes, tmp)
        kw = dict(runs_root=tmp / "runs", echo=False, trace=True, timeout=600)
        rows = []
        run, _ = run_profile(exes["exact_threads"], [str(args.threads)], nranks=2, **kw)
        rows.append(measure(run.path, f"exact_threads 2x{args.threads}"))
        run, _ = run_profile(
            exes["ring_imbalance"], [str(args.iterations), "0"], nranks=args.ranks, **kw
        )
        rows.append(measure(run.path, f"ring {args.ranks} ranks x {args.iterations}"))
    for r in rows:
        print(
            f"{r['run']}: {r['calls']} calls ({r['records']} records, {r['messages']} messages, "
            f"{r['snapshots']} snapshots) of {r['ranks']} ranks; raw trace {r['raw_trace_bytes']} B; "
            f"Perfetto JSON {r['perfetto_bytes']} B = {r['perfetto_bytes_per_call']:.0f} B/call "
            f"in {r['perfetto_s']:.2f} s; OTF2 {r['otf2_bytes']} B = "
            f"{r['otf2_bytes_per_call']:.0f} B/call in {r['otf2_s']:.2f} s"
        )


if __name__ == "__main__":
    main()
