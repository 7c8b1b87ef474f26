"""The default study (the README's first command): measure, fit, report.

On one node: a ping-pong from 1 B to 4 MiB with one pair, a multi-pair run over
the rendezvous sizes for the max-rate injection limit, the fit, and the report.
Everything lands in a new study folder (never an existing one)::

    <out>/runs/<run dirs>   <out>/machine-profile.json   <out>/report.html
"""

import datetime as _dt
import sys
from pathlib import Path

from .bench.pingpong import run_pingpong
from .errors import InputError
from .models.profile import save_profile
from .profile_fit import fit_runs
from .report.build import build_report

QUICK = dict(iters=200, warmup=20, large_iters=20, large_warmup=2)
FULL = dict(iters=1000, warmup=100, large_iters=100, large_warmup=10)


def default_study_dir(root="studies"):
    return Path(root) / f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}"


def run_study(out=None, mpi_spec=None, pairs=2, quick=False, echo=False, log=print):
    """Run the default study into ``out`` and return the report path."""
    out = Path(out) if out else default_study_dir()
    if out.exists() and any(out.iterdir()):
        raise InputError(out, None, "exists and is not empty; not overwriting it")
    runs = out / "runs"
    reps = QUICK if quick else FULL
    common = dict(mpi_spec=mpi_spec, runs_root=runs, echo=echo)

    log(f"[1/4] ping-pong, 1 pair, 1 B .. 4 MiB -> {runs}")
    run_pingpong(pairs=1, min_size=1, max_size=4 << 20, run_name="pingpong-1pair", **reps, **common)
    log(f"[2/4] ping-pong, {pairs} concurrent pairs, 16 KiB .. 4 MiB (max-rate ppn)")
    multi = dict(reps, iters=max(1, reps["iters"] // 4), large_iters=max(1, reps["large_iters"] // 2))
    run_pingpong(pairs=pairs, min_size=16 << 10, max_size=4 << 20,
                 run_name=f"pingpong-{pairs}pairs", **multi, **common)
    log("[3/4] fitting the postal / max-rate models")
    profile = fit_runs([runs])
    save_profile(profile, out / "machine-profile.json")
    log("[4/4] writing the report")
    return build_report([runs], out / "report.html", profile=profile)


def main_log(msg):
    print(msg, file=sys.stderr, flush=True)
