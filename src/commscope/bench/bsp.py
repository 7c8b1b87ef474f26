"""Bulk-synchronous variability harness driver (Dominguez-Trujillo 2021, Sec. 3.3).

``cs_bsp`` runs ``k`` intervals of MPI_Barrier, workload (optionally followed by a
2-D halo exchange), MPI_Barrier on every rank.  Each rank records the time
between the two synchronisation points (``interval_s`` = ``workload_s`` +
``halo_s``) and the time it then waits in the closing barrier (``barrier_s``,
Sec. 3.3.4); rank 0 takes the per-interval maximum with an MPI_Reduce.

Tables of a ``bsp`` run:

``intervals``  interval, rank, host, workload_s, halo_s, barrier_s, interval_s,
               requested_s (FTQ draw), requested_ops (FWQ draw), checksum,
               halo_sum, halo_bad
``maxima``     interval, max_interval_s, max_workload_s, argmax_rank, wall_s
               (rank 0, barrier exit to barrier exit), max_barrier_s
``neighbors``  rank, direction (x-, x+, y-, y+), neighbor  (halo runs only)

Checksums make the kernels verifiable: DGEMM multiplies A[i,j] = ((7i+3j) mod 11
- 5)/8 by B[i,j] = ((5i+2j) mod 9 - 4)/4 and SPMV applies the 5-point Laplacian
of an N x N grid to x[r] = r mod 7 + 1; the checksum is sum_k v[k] (1 + k mod 17)
over the row-major result (see :func:`expected_checksum`).  FWQ's checksum is
sum_{i<n} (i & 1023) over its n additions.  In the halo, element j of the message
rank s sends in interval i is (s+1)*1000003 + (i+1)*17 + j mod 13.
"""

import math
import os

from ..benchspec.bsp import (  # noqa: F401 (re-exported)
    BENCHMARK,
    DEFAULTS,
    DISTRIBUTIONS,
    HALO_ITER_W,
    HALO_RANK_W,
    WORKLOADS,
)
from ..errors import InputError
from .driver import run_benchmark
from ..lazy import lazy

np = lazy("numpy")


_RANKS = BENCHMARK.option("ranks").default

#: Parameters that must agree for two runs to be the same experiment at two scales.
EXPERIMENT_KEYS = ("workload", "dist", "mean", "sd", "dim", "reps", "halo_bytes")


def run_bsp(
    workload,
    ranks=_RANKS,
    intervals=DEFAULTS["intervals"],
    *,
    warmup=DEFAULTS["warmup"],
    dist=DEFAULTS["dist"],
    mean=None,
    sd=None,
    dim=None,
    reps=DEFAULTS["reps"],
    halo_bytes=DEFAULTS["halo_bytes"],
    seed=None,
    flush_every=DEFAULTS["flush_every"],
    **launch_kw,
):
    """Run the bulk-synchronous harness on ``ranks`` ranks; returns the finished Run.

    ``workload``: "ftq", "fwq", "dgemm" or "spmv".  For FTQ, ``mean``/``sd`` are the
    spin time's mean and standard deviation in seconds (default 0.01, 0.001); for
    FWQ they count integer additions (default 5e6, 5e5); ``dist`` is the
    distribution of those draws (draws are clamped at 0).  For DGEMM ``dim`` is the
    side of the N x N matrices (default 256), for SPMV the side of the N x N grid
    whose 5-point Laplacian is applied (default 512); ``reps`` operations per
    interval.  ``halo_bytes`` (a multiple of 8) are sent to each of the 4
    neighbours in a periodic 2-D grid of ranks after the workload (0: no halo).
    ``seed`` seeds the draws (rank r uses stream seed + r); drawn from the OS when
    None and recorded in meta.json.  ``launch_kw`` go to
    :func:`~commscope.bench.driver.run_benchmark`.
    """
    if workload not in WORKLOADS:
        raise InputError(
            "--workload", None, f"expected one of {', '.join(WORKLOADS)}, got {workload!r}"
        )
    if dist not in DISTRIBUTIONS:
        raise InputError(
            "--dist", None, f"expected one of {', '.join(DISTRIBUTIONS)}, got {dist!r}"
        )
    for name, v, lo in (
        ("--ranks", ranks, 1),
        ("--intervals", intervals, 1),
        ("--warmup", warmup, 0),
        ("--reps", reps, 1),
        ("--flush-every", flush_every, 1),
    ):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise InputError(name, None, f"must be an integer >= {lo}, got {v!r}")
    if not isinstance(halo_bytes, (int, np.integer)) or halo_bytes < 0 or halo_bytes % 8:
        raise InputError(
            "--halo-bytes",
            None,
            f"must be a non-negative multiple of 8 (whole doubles), got {halo_bytes!r}",
        )
    timed = workload in ("ftq", "fwq")
    if timed:
        mean_opt = "--compute" if workload == "ftq" else "--ops"  # the CLI's name for it
        if mean is None:
            mean = DEFAULTS["ftq_mean_s"] if workload == "ftq" else DEFAULTS["fwq_mean_ops"]
        if sd is None:
            sd = mean / 10
        for name, v in ((mean_opt, mean), ("--sd", sd)):
            if not isinstance(v, (int, float, np.number)) or not math.isfinite(v) or v < 0:
                raise InputError(name, None, f"must be a finite number >= 0, got {v!r}")
        if dist in ("lognormal", "exponential") and mean <= 0:
            raise InputError(mean_opt, None, f"the {dist} distribution needs a positive mean")
        if dist == "exponential" and sd > mean:  # shifted: mean - sd + Exp(scale sd) >= 0
            raise InputError(
                "--sd",
                None,
                f"the exponential draw is mean - sd + Exp(sd), so it "
                f"needs sd <= mean, got sd {sd} > mean {mean}",
            )
        if workload == "ftq" and mean > 60:
            raise InputError(
                mean_opt,
                None,
                f"FTQ mean is in seconds; {mean} s per interval is not a sensible quantum",
            )
    else:
        if mean is not None or sd is not None:
            raise InputError(
                "--compute",
                None,
                f"only ftq and fwq draw their work; {workload} takes --dim and --reps",
            )
        if dim is None:
            dim = DEFAULTS["dgemm_dim"] if workload == "dgemm" else DEFAULTS["spmv_dim"]
        if not isinstance(dim, (int, np.integer)) or dim < 1:
            raise InputError("--dim", None, f"must be a positive integer, got {dim!r}")
        if workload == "spmv" and dim * dim * 5 > 2**31 - 1:
            raise InputError("--dim", None, f"a {dim} x {dim} grid overflows 32-bit indices")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**62:
        raise InputError("--seed", None, f"must be a non-negative integer, got {seed!r}")

    params = dict(
        workload=workload,
        ranks=ranks,
        intervals=intervals,
        warmup=warmup,
        halo_bytes=int(halo_bytes),
        flush_every=flush_every,
        dist=dist if timed else None,
        mean=float(mean) if timed else None,
        sd=float(sd) if timed else None,
        mean_unit="s" if workload == "ftq" else "ops" if workload == "fwq" else None,
        dim=None if timed else int(dim),
        reps=None if timed else int(reps),
    )
    args = BENCHMARK.native_args(dict(params, seed=int(seed)))
    env = dict(launch_kw.pop("extra_env", None) or {})
    # the thesis runs one single-threaded BLAS per core
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return run_benchmark(
        "bsp",
        BENCHMARK.program,
        args,
        nranks=ranks,
        parameters=params,
        seeds={"bsp": int(seed), "rank_stream": "seed + rank (splitmix64)"},
        extra_env=env,
        **launch_kw,
    )


# --- ground truth for the checksums (used by the tests and by check_run) -----------


def _weighted(v):
    v = np.asarray(v, dtype=float).ravel()
    return float(np.sum(v * (1 + np.arange(v.size) % 17)))


def dgemm_operands(n):
    """The harness's DGEMM inputs A, B (n x n)."""
    i, j = np.indices((n, n))
    return ((i * 7 + j * 3) % 11 - 5) / 8.0, ((i * 5 + j * 2) % 9 - 4) / 4.0


def spmv_operands(n):
    """The harness's SPMV inputs: the 5-point Laplacian of an n x n grid (scipy CSR), x."""
    import scipy.sparse as sp

    t = sp.diags_array([-1.0, 4.0, -1.0], offsets=[-1, 0, 1], shape=(n, n))
    s = sp.diags_array([-1.0, -1.0], offsets=[-1, 1], shape=(n, n))
    a = (sp.kron(sp.eye_array(n), t) + sp.kron(s, sp.eye_array(n))).tocsr()
    return a, (np.arange(n * n) % 7 + 1).astype(float)


def expected_checksum(workload, size=None, requested_ops=None):
    """The checksum the harness must record for ``workload`` (computed independently)."""
    if workload == "dgemm":
        a, b = dgemm_operands(size)
        return _weighted(a @ b)
    if workload == "spmv":
        a, x = spmv_operands(size)
        return _weighted(a @ x)
    if workload == "fwq":
        n = int(requested_ops)
        return float((n // 1024) * (1023 * 1024 // 2) + (n % 1024) * (n % 1024 - 1) // 2)
    raise InputError("workload", None, f"{workload} has no checksum")


def expected_halo_sum(neighbors, halo_bytes, interval):
    """Sum of the halo data each rank must receive in ``interval``: {rank: sum}."""
    count = int(halo_bytes) // 8
    j = np.arange(count) % 13
    out = {}
    for rank, grp in neighbors.groupby("rank"):
        total = 0.0
        for s in grp["neighbor"]:
            total += count * ((s + 1) * HALO_RANK_W + (interval + 1) * HALO_ITER_W) + j.sum()
        out[int(rank)] = total
    return out


def interval_matrix(run, column="interval_s"):
    """(intervals x ranks) array of ``column`` plus ranks_per_node (from the hosts).

    Ranks are ordered by (host, rank) so the ranks of a node are adjacent.
    """
    from ..stats.bootstrap import per_rank_matrix

    df = run.table("intervals")
    frame = df.rename(columns={"interval": "iteration", column: "time_s", "host": "node"})
    return per_rank_matrix(
        frame[["iteration", "rank", "time_s", "node"]],
        source=os.fspath(run.table_file("intervals")),
    )
