"""Partitioned-communication benchmark driver (Dominguez-Trujillo 2021, Ch. 4, Algorithm 2 and eq. 4.3).

Runs ``cs_partitioned`` on two ranks: rank 0's ``threads`` OpenMP threads each
compute (sleep, by default, as in the thesis) for a time drawn from a distribution
and then make their partition of the buffer ready; rank 1 receives. Three ways of
sending are measured in the same run, with the same thread-time draws for a given
size and run index:

``partitioned``
    MPI-4 ``MPI_Psend_init``/``MPI_Precv_init`` with ``MPI_Pready`` per thread;
    skipped, with the reason in the ``methods`` table and on stdout, when the MPI
    lacks the calls.
``isend``
    one ``MPI_Isend`` per partition from the thread that finished it
    (``MPI_THREAD_MULTIPLE``; no funnelling).
``single``
    the baseline: join, then one message of the whole buffer.

Measurement (see the header of ``native/bench/partitioned.c``): ``elapsed_s`` is the
time from the slowest thread becoming ready to the *receiver's* completion, on one
CLOCK_MONOTONIC when both ranks share a host (else receiver clock mapped onto the
sender's by the best of 32 pings, uncertainty recorded), and
``effective_bandwidth_Bps = size_bytes / elapsed_s`` (eq. 4.3). The thesis's
sender-side measure (``MPI_Wait`` return minus last ready) is ``sender_elapsed_s``.
The single send's elapsed time includes the OpenMP join (with OMP_WAIT_POLICY=passive,
waking the master thread costs tens of microseconds): that is part of "join, then
send", and it is why small single sends measure well above the postal model.

Thread compute times: mean ``compute_s``; standard deviation ``sigma_s``, or from
``variability`` in the thesis's convention ``sigma = compute * variability**2``
(Algorithm 1/2: "10 % runtime standard deviation" of 100 ms is 1 ms). Distributions:
normal, uniform (width sqrt(12) sigma), exponential (shifted so the mean is
``compute_s``; sd = sigma) and constant; the same shapes as
:func:`commscope.models.partitioned.thread_time_distribution`. ``stagger`` draws
nothing: thread t of T finishes at ``compute + sigma (2t/(T-1) - 1)`` (the calibration).

Per partition, the ``compute`` table also holds ``call_s`` (the ``MPI_Pready`` or
``MPI_Isend`` call's duration) and ``arrived_s`` (when the receiver saw the partition
complete, on the same clock as ``actual_s``): a partition that arrived before the
slowest thread was ready went out early (runs of an earlier commscope lack both). Negative draws are
clipped to 0. Draws are seeded (``seed``, recorded in meta.json).

Tables: ``samples`` (one row per method, size and run), ``compute`` (requested and
actual compute time of every thread), ``methods`` (which ran, which were skipped and
why).
"""

from __future__ import annotations

import math

from ..benchspec.partitioned import (  # noqa: F401 (re-exported)
    BENCHMARK,
    COMPUTE_MODES,
    DISTRIBUTIONS,
    METHODS,
    MIB,
    default_sizes,
    native_params,
    planned_sizes,
)
from ..errors import InputError
from ..collect.ompt import bench_collector
from .driver import run_benchmark

KIND = "partitioned"
_DEFAULTS = BENCHMARK.defaults()


def sigma_of(compute_s, variability=None, sigma_s=None):
    """Standard deviation in seconds: ``sigma_s``, else ``compute_s * variability**2``."""
    if sigma_s is not None:
        return float(sigma_s)
    return float(compute_s) * float(variability) ** 2


def _check(
    threads,
    compute_s,
    variability,
    sigma_s,
    dist,
    sizes,
    runs_per_size,
    warmup,
    methods,
    compute_mode,
    seed,
):
    def bad(opt, msg):
        raise InputError(opt, None, msg)

    if not isinstance(threads, int) or threads < 1:
        bad("--threads", f"must be a positive integer, got {threads!r}")
    if not (isinstance(compute_s, (int, float)) and math.isfinite(compute_s) and compute_s > 0):
        bad("--compute", f"must be a positive number of seconds, got {compute_s!r}")
    if compute_s > 60:
        bad("--compute", f"{compute_s} s per run is far beyond a benchmark; give seconds")
    if variability is not None and sigma_s is not None:
        bad("--sigma", "give --variability or --sigma, not both")
    for opt, v in (("--variability", variability), ("--sigma", sigma_s)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            bad(opt, f"must be a number >= 0, got {v!r}")
    if dist not in DISTRIBUTIONS:
        bad("--dist", f"unknown distribution {dist!r}; one of {', '.join(DISTRIBUTIONS)}")
    if not sizes:
        bad("--sizes", "no buffer sizes")
    for s in sizes:
        if not isinstance(s, int) or s < threads:
            bad("--sizes", f"every size must be an integer >= threads ({threads}), got {s!r}")
        if s >= 1 << 31:
            bad("--sizes", f"{s} bytes: sizes must stay below 2 GiB (one MPI count)")
    if len(sizes) > 64:
        bad("--sizes", f"at most 64 sizes, got {len(sizes)}")
    if not isinstance(runs_per_size, int) or runs_per_size < 1:
        bad("--runs-per-size", f"must be at least 1, got {runs_per_size!r}")
    if not isinstance(warmup, int) or warmup < 0:
        bad("--warmup", f"must be >= 0, got {warmup!r}")
    methods = list(methods)
    if not methods:
        bad("--methods", "no method chosen")
    for m in methods:
        if m not in METHODS:
            bad("--methods", f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    if compute_mode not in COMPUTE_MODES:
        bad("--compute-mode", f"expected one of {', '.join(COMPUTE_MODES)}, got {compute_mode!r}")
    if not isinstance(seed, int) or seed < 0:
        bad("--seed", f"must be an integer >= 0, got {seed!r}")
    return methods


def _as_int(size):
    """18874368.0 -> 18874368; anything else is left for the checks to reject."""
    if isinstance(size, float) and size.is_integer():
        return int(size)
    return int(size) if hasattr(size, "__index__") else size


def run_partitioned(
    threads=_DEFAULTS["threads"],
    compute_s=_DEFAULTS["compute_s"],
    variability=None,
    sigma_s=None,
    dist=_DEFAULTS["dist"],
    sizes=None,
    runs_per_size=_DEFAULTS["runs_per_size"],
    warmup=_DEFAULTS["warmup"],
    methods=_DEFAULTS["methods"],
    compute_mode=_DEFAULTS["compute_mode"],
    seed=_DEFAULTS["seed"],
    ompt=False,
    calibrate=False,
    **launch_kw,
):
    """Run the partitioned benchmark (2 ranks) and return the finished :class:`Run`.

    ``sizes``: buffer sizes in bytes (default :func:`default_sizes`); each is rounded
    down to a multiple of ``threads`` (one partition per thread). ``variability``
    defaults to 0.1 when neither it nor ``sigma_s`` is given. ``launch_kw`` go to
    :func:`run_benchmark` (mpi_spec, runs_root, timeout, echo, ...).  ``ompt=True``
    also times the sender's threads through the OMPT tool (table ``threads``), the
    input of ``commscope advise``.

    ``calibrate=True`` measures the partitioned model's terms instead
    (:mod:`commscope.models.partitioned_terms`; ``commscope fit`` reads them): the
    threads finish at fixed staggered times (``dist="stagger"``, ``sigma_s`` defaulting
    to ``compute_s / 2``, so the first thread leads the last by ``compute_s``), the
    partitioned and single sends, ``parameters.calibration = true`` in meta.json.

    Raises :class:`InputError` on nonsense parameters (before anything runs) and
    :class:`EnvironmentProblem` when the job fails, including when the receiver found
    wrong or missing bytes (the rows stay in the run's ``samples`` table).
    """
    if calibrate:
        if dist not in ("normal", "stagger") or variability is not None:
            raise InputError(
                "--calibrate",
                None,
                "a calibration staggers the threads itself: "
                "give --sigma (the half-spread) or nothing, no "
                "--dist or --variability",
            )
        dist, methods = "stagger", [m for m in ("partitioned", "single") if m in methods]
        sigma_s = compute_s / 2 if sigma_s is None else sigma_s
    if variability is None and sigma_s is None:
        variability = 0.1
    sizes = default_sizes() if sizes is None else [_as_int(s) for s in sizes]
    methods = _check(
        threads,
        compute_s,
        variability,
        sigma_s,
        dist,
        sizes,
        runs_per_size,
        warmup,
        methods,
        compute_mode,
        seed,
    )
    sigma = sigma_of(compute_s, variability, sigma_s)
    params = dict(
        threads=threads,
        compute_s=float(compute_s),
        variability=variability,
        sigma_s=sigma,
        sigma_convention="sigma = compute * variability**2 (Dominguez-Trujillo 2021, Alg. 1)"
        if sigma_s is None
        else "given directly",
        dist=dist,
        sizes_bytes=list(sizes),
        runs_per_size=runs_per_size,
        warmup=warmup,
        methods=methods,
        compute_mode=compute_mode,
        ompt=bool(ompt),
        seed=seed,
        calibration=bool(calibrate),
    )
    return run_benchmark(
        KIND,
        BENCHMARK.program,
        BENCHMARK.native_args(native_params(params)),
        nranks=2,
        threads=threads,
        parameters=params,
        seeds={"thread_times": seed},
        collectors=[bench_collector] if ompt else (),
        **launch_kw,
    )


def method_status(run):
    """{method: (status, note)} from the run's ``methods`` table ("run", "skipped", ...)."""
    df = run.table("methods")
    notes = df["note"].astype(object).fillna("") if "note" in df else [""] * len(df)
    return {m: (s, str(n)) for m, s, n in zip(df["method"], df["status"], notes)}


def summarize(run):
    """Mean/min/max elapsed time and mean effective bandwidth per method and size.

    The thesis averages the per-run effective bandwidths (5 runs per size); both that
    mean (``effective_bandwidth_Bps``) and ``size / mean elapsed``
    (``bandwidth_of_mean_Bps``) are given.
    """
    df = run.table("samples")
    g = df.groupby(["method", "size_bytes"])
    out = g.agg(
        runs=("run", "count"),
        elapsed_s=("elapsed_s", "mean"),
        elapsed_min_s=("elapsed_s", "min"),
        elapsed_max_s=("elapsed_s", "max"),
        effective_bandwidth_Bps=("effective_bandwidth_Bps", "mean"),
        sender_elapsed_s=("sender_elapsed_s", "mean"),
        mismatches=("mismatches", "sum"),
    ).reset_index()
    out["bandwidth_of_mean_Bps"] = out["size_bytes"] / out["elapsed_s"]
    return out
