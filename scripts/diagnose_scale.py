#!/usr/bin/env python
"""How `commscope diagnose` scales to thousands of traced ranks (issue 46).

For each rank count (--ranks, default 1024,2048,4096): a synthetic traced run directory
(commscope.profile.synthetic, trace=True: a 3-D stencil, MPI_Irecv x6, MPI_Isend x6,
MPI_Waitall and MPI_Allreduce per iteration, --iterations of them, 128 ranks per node,
one rank, ranks // 3, computing twice as long each iteration), laid out from the node
file of a real 2-rank profile of tests/programs/alltoall_small.c, converted; then the
serial `commscope diagnose` of it in a child process, timed, its peak memory taken from
the child's own rusage (os.wait4), and whether its first finding names the planted rank
(load_imbalance or late_sender, culprit that rank alone, as it is by construction).
Printed: ranks, events, trace bytes, bytes per event, the trace's share of the run
directory, the write and conversion times, the diagnosis' wall time and peak memory.

    .venv/bin/python scripts/diagnose_scale.py [--ranks 1024,2048] [--iterations 100]
        [--mpi mpich] [--json FILE] [--keep DIR] [--quick]

--quick (what `make bench QUICK=1` runs): 64 ranks.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from commscope.compare.figures import record  # noqa: E402
from commscope.output import format_table  # noqa: E402
from profile_scaling import PROGRAM, dir_usage, timed  # noqa: E402

#: Ranks per node of the synthetic runs (as profile_scaling's).
PER_NODE = 128


def template(m, tmp):
    """node.<n>.json of a real (2-rank) profile: the layout the synthetic files follow."""
    exe = Path(tmp) / "alltoall_small"
    subprocess.run([m.mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
    runs = Path(tmp) / "template-runs"
    _, res = timed(
        [
            sys.executable,
            "-m",
            "commscope",
            "profile",
            "-n",
            "2",
            "--quiet",
            "--mpi",
            m.mpicc if m.name == "system" else m.name,
            "--runs",
            str(runs),
            "--",
            str(exe),
        ],
        timeout=600,
    )
    run = Path(res.stdout.strip().splitlines()[-1])
    return next((run / "raw").glob("node.*.json"))


#: The child: `commscope diagnose RUN --json`, its findings to stdout.
CHILD = (
    "import sys; from commscope.cli import main; "
    "sys.exit(main(['diagnose', sys.argv[1], '--json']))"
)


def diagnose(run):
    """(wall s, peak RSS bytes, the diagnosis as a dict) of a serial diagnose in a child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(run)], stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if child.returncode:
            log = err.read().decode(errors="replace")
            print(f"diagnose {run} failed ({child.returncode}):\n{log[-8000:]}", file=sys.stderr)
            last = [ln for ln in log.splitlines() if ln.strip()][-1:] or ["no message"]
            return wall, usage.ru_maxrss * 1024, {"failed": last[0][:60]}
        return wall, usage.ru_maxrss * 1024, json.loads(out.read())


def one(tpl, ranks, iterations, where):
    from commscope.profile.run import convert_run
    from commscope.profile.synthetic import PER_ITERATION, write_run

    late = ranks // 3
    t = time.perf_counter()
    path = write_run(
        Path(where) / f"traced-{ranks}",
        tpl,
        ranks=ranks,
        ranks_per_node=min(ranks, PER_NODE),
        iterations=iterations,
        trace=True,
        late=(late,),
    )
    write_s = time.perf_counter() - t
    t = time.perf_counter()
    convert_run(path)
    convert_s = time.perf_counter() - t
    trace_bytes = sum(p.stat().st_size for p in (path / "raw").glob("trace.*.bin"))
    total, _files = dir_usage(path)
    events = ranks * iterations * PER_ITERATION
    wall, rss, d = diagnose(path)
    top = d["findings"][0] if d.get("findings") else {}
    named = top.get("kind") in ("load_imbalance", "late_sender") and top.get("culprit_ranks") == [
        late
    ]
    record(f"diagnose_{ranks}_ranks", [wall])
    record(f"diagnose_{ranks}_ranks_peak", [rss], "B")
    return path, dict(
        ranks=ranks,
        events=events,
        trace_bytes=trace_bytes,
        bytes_per_event=trace_bytes / events,
        trace_share=trace_bytes / total,
        write_s=write_s,
        convert_s=convert_s,
        diagnose_s=wall,
        peak_rss_bytes=rss,
        planted=late,
        first_finding=f"{top.get('kind')} {top.get('culprit_ranks')}",
        culprit_named="yes" if named else f"NO ({d['failed']})" if "failed" in d else "NO",
    )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ranks", default="1024,2048,4096")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--mpi", default=None, help="openmpi (default), mpich or an mpicc path")
    ap.add_argument("--quick", action="store_true", help="64 ranks")
    ap.add_argument("--json", default=None, help="also write the table as JSON here")
    ap.add_argument("--keep", default=None, help="keep the run directories in DIR")
    a = ap.parse_args()
    if a.quick:
        a.ranks = "64"
    from commscope import mpi as mpimod

    m = mpimod.select_mpi(a.mpi)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tpl = template(m, tmp)
        for n in [int(x) for x in a.ranks.split(",") if x]:
            path, row = one(tpl, n, a.iterations, a.keep or tmp)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)  # kept if a later size fails
            print(
                f"{n} ranks: diagnose {row['diagnose_s']:.1f} s, "
                f"culprit named: {row['culprit_named']}",
                file=sys.stderr,
                flush=True,
            )
            if not a.keep:
                shutil.rmtree(path)
    print(
        format_table(
            rows,
            title=f"serial commscope diagnose of synthetic traced 3-D stencils ({a.iterations} "
            f"iterations, {PER_NODE} ranks per node, rank ranks // 3 late): one process",
        )
    )
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["culprit_named"] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
