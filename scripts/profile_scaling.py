#!/usr/bin/env python
"""How `commscope profile` scales with ranks: time, bytes and files per rank.

Measured (--ranks, default 16,32,64,128,256, oversubscribed on this machine): the
all-to-all program tests/programs/alltoall_small.c (20 MPI_Alltoall, 10 MPI_Barrier)
run plainly through commscope's own launcher (same flags: --oversubscribe, the MCA
settings) and under `commscope profile` (launch, run, in-job reduction, conversion),
alternating plain and profiled `--rounds` times; per rank count the best of each and
their ratio, the run directory's bytes and files per rank, and the conversion and
report times (measured again on the run directory).

Extrapolated (--synthetic, default 1024,4096,16384): synthetic run directories of a
3-D stencil code in the same format (commscope.profile.synthetic, 128 ranks per node,
from the layout of the measured runs): bytes and files per rank, conversion time on
one core and peak memory, report time and size.

    .venv/bin/python scripts/profile_scaling.py [--mpi mpich] [--ranks 16,32] [--synthetic 1024]
        [--rounds 2] [--json FILE] [--quick]

--quick (what `make bench QUICK=1` runs): 8 ranks, 1 round, 1024 synthetic ranks.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commscope import launch, mpi as mpimod
from commscope.output import format_table

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "programs" / "alltoall_small.c"


def dir_usage(path):
    files = [p for p in Path(path).rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files), len(files)


def timed(cmd, **kw):
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{res.stderr[-2000:]}")
    return time.perf_counter() - t, res


def measured(m, exe, n, rounds, tmp):
    plan = launch.plan_launch(m, n, str(exe), [])
    plain, prof, run = [], [], None
    for r in range(rounds):
        t = time.perf_counter()
        res = launch.run_job(plan, echo=False, progress=False, timeout=1800)
        if res.returncode != 0:
            sys.exit(f"plain run of {n} ranks failed:\n{res.stderr[-2000:]}")
        plain.append(time.perf_counter() - t)
        runs = Path(tmp) / f"runs-{n}-{r}"
        dt, out = timed(
            [
                sys.executable,
                "-m",
                "commscope",
                "profile",
                "-n",
                str(n),
                "--quiet",
                "--mpi",
                m.mpicc if m.name == "system" else m.name,
                "--runs",
                str(runs),
                "--",
                str(exe),
            ],
            timeout=1800,
        )
        prof.append(dt)
        run = Path(out.stdout.strip().splitlines()[-1])
    size, files = dir_usage(run)
    job_s = json.loads((run / "meta.json").read_text()).get("wall_s")  # the MPI job alone
    convert_s = reconvert(run)
    report_s, report_bytes = report(run, Path(tmp) / f"report-{n}.html")
    # where the time goes: the job under the library (launch, run, in-job reduction) and
    # the rest of `commscope profile` (its start-up, conversion to Parquet)
    return dict(
        ranks=n,
        plain_s=min(plain),
        profile_s=min(prof),
        ratio=min(prof) / min(plain),
        job_s=job_s,
        outside_job_s=prof[-1] - job_s if job_s else None,
        bytes_per_rank=size / n,
        files=files,
        files_per_rank=files / n,
        convert_s=convert_s,
        report_s=report_s,
        report_bytes=report_bytes,
    ), run


def reconvert(run):
    """Conversion alone, on a copy of the run's raw files (one core)."""
    code = (
        "import sys, time; from commscope.runs import open_run; "
        "from commscope.profile.convert import convert; r = open_run(sys.argv[1]); "
        "t = time.perf_counter(); convert(r, jobs=1); print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / run.name
        shutil.copytree(run, copy)
        for p in copy.glob("*.parquet"):
            p.unlink()
        _, res = timed([sys.executable, "-c", code, str(copy)])
    return float(res.stdout.strip().splitlines()[-1])


def report(run, out):
    out.unlink(missing_ok=True)
    dt, _ = timed([sys.executable, "-m", "commscope", "report", str(run), "-o", str(out)])
    return dt, out.stat().st_size


def synthetic(template, ranks, tmp):
    from commscope.profile import synthetic as syn

    path = syn.write_run(
        Path(tmp) / f"synthetic-{ranks}",
        template,
        ranks=ranks,
        ranks_per_node=128,
        laggards=[ranks // 3],
    )
    size, files = dir_usage(path)
    code = (
        "import sys, time, resource; from commscope.runs import open_run; "
        "from commscope.profile.convert import convert; r = open_run(sys.argv[1]); "
        "t = time.perf_counter(); convert(r, jobs=1); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    _, res = timed([sys.executable, "-c", code, str(path)])
    convert_s, rss_kib = res.stdout.split()
    report_s, report_bytes = report(path, Path(tmp) / f"report-syn-{ranks}.html")
    out = dict(
        ranks=ranks,
        bytes_per_rank=size / ranks,
        files=files,
        files_per_rank=files / ranks,
        convert_s=float(convert_s),
        convert_peak_bytes=int(rss_kib) * 1024,
        report_s=report_s,
        report_bytes=report_bytes,
    )
    shutil.rmtree(path)
    return out


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mpi", default=None, help="openmpi (default), mpich or an mpicc path")
    ap.add_argument("--ranks", default="16,32,64,128,256")
    ap.add_argument("--synthetic", default="1024,4096,16384")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="8 ranks, 1024 synthetic, 1 round")
    ap.add_argument("--json", default=None, help="also write the tables as JSON here")
    a = ap.parse_args()
    if a.quick:
        a.ranks, a.synthetic, a.rounds = "8", "1024", 1
    m = mpimod.select_mpi(a.mpi)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "alltoall_small"
        subprocess.run([m.mpicc, "-O2", str(PROGRAM), "-o", str(exe)], check=True)
        rows, run = [], None
        for n in [int(x) for x in a.ranks.split(",") if x]:
            row, run = measured(m, exe, n, a.rounds, tmp)
            rows.append(row)
            print(f"{n} ranks: ratio {row['ratio']:.2f}", file=sys.stderr)
        template = next((run / "raw").glob("node.*.json"))
        syn = [synthetic(template, int(n), tmp) for n in a.synthetic.split(",") if n]
    print(
        format_table(
            rows,
            title=f"commscope profile at scale, {m.name}: measured on this "
            f"machine ({a.rounds} alternating rounds, best of each)",
        )
    )
    print(
        format_table(
            syn,
            title="synthetic run directories (a 3-D stencil, 128 ranks per "
            "node): conversion on one core",
        )
    )
    if a.json:
        Path(a.json).write_text(
            json.dumps({"mpi": m.name, "measured": rows, "synthetic": syn}, indent=1)
        )


if __name__ == "__main__":
    main()
