"""Ping-pong benchmark driver (004 Sec. 2; OSU latency conventions)."""

from ..errors import InputError
from ..kinds import LARGE_MESSAGE, pingpong_sizes as planned_sizes  # noqa: F401 (re-exported)
from .driver import register_resume, run_benchmark


def native_args(params):
    """Options of cs_pingpong for the parameters recorded in meta.json."""
    return [
        "-m",
        f"{params['min_size']}:{params['max_size']}",
        "-i",
        params["iters"],
        "-x",
        params["warmup"],
        "-I",
        params["large_iters"],
        "-X",
        params["large_warmup"],
    ] + (["--hugepages"] if params.get("hugepages") else [])


register_resume("pingpong", lambda params, first: native_args(dict(params, min_size=first[0])))

DEFAULTS = dict(
    min_size=1, max_size=4 << 20, iters=1000, warmup=100, large_iters=100, large_warmup=10
)


def run_pingpong(
    pairs=1,
    min_size=1,
    max_size=4 << 20,
    iters=1000,
    warmup=100,
    large_iters=100,
    large_warmup=10,
    hugepages=False,
    **launch_kw,
):
    """Run the ping-pong with ``pairs`` concurrent pairs (2*pairs ranks).

    Sizes are the powers of two from ``min_size`` to ``max_size``; sizes above
    8 KiB use ``large_iters``/``large_warmup`` as OSU does.  Every repetition's
    one-way time (half the round trip) is kept in the ``samples`` table with
    the pair's locality.  Buffers are page-aligned as in OSU; ``hugepages``
    asks for transparent huge pages (as numpy, hence mpi4py, does for arrays of
    4 MiB and more).  ``launch_kw`` go to :func:`run_benchmark` (mpi_spec,
    runs_root, hosts, ranks_per_node, ...).
    """
    if pairs < 1:
        raise InputError("--pairs", None, f"must be at least 1, got {pairs}")
    if not 0 <= min_size <= max_size:
        raise InputError("-m", None, f"need 0 <= MIN <= MAX, got {min_size}:{max_size}")
    if max_size >= 1 << 31:  # MPI counts are C ints
        raise InputError("-m", None, f"MAX must be below 2 GiB (2147483648 bytes), got {max_size}")
    for name, v in {"--iterations": iters, "--large-iterations": large_iters}.items():
        if v < 1:
            raise InputError(name, None, f"must be at least 1, got {v}")
    params = dict(
        pairs=pairs,
        min_size=min_size,
        max_size=max_size,
        iters=iters,
        warmup=warmup,
        large_iters=large_iters,
        large_warmup=large_warmup,
        hugepages=hugepages,
    )
    return run_benchmark(
        "pingpong",
        "pingpong",
        native_args(params),
        nranks=2 * pairs,
        parameters=params,
        **launch_kw,
    )
