"""Partitioned (Finepoints) communication model: Algorithm 1 of Dominguez-Trujillo (2021),
the single-send baseline, and a Monte-Carlo version without the analytic assumptions.

Setting (thesis Sec. 4.2-4.3): ``N`` threads each compute on ``1/N`` of a buffer; thread
compute times are random. *Single send*: the threads join, then one message of the whole
buffer goes out. *Partitioned*: each thread's partition may be sent as soon as that
thread finishes, so part of the transfer overlaps the slower threads' compute. Both are
judged by the time elapsed from the last thread's finish to the transfer's completion and
by the effective bandwidth ``size / elapsed`` (eq. 4.3).

Link
    Every function takes a ``link``: any object with ``latency_s(size_bytes)`` and
    ``bandwidth_Bps(size_bytes)`` (vectorised). :class:`commscope.models.osu.OSUTable`
    is one (the thesis feeds OSU tables); :class:`ConstantLink` is another, built
    directly or from postal parameters with :func:`link_from_alpha_beta`
    (``beta_s_per_byte`` as in Bienz et al.; the thesis's eq. 2.12 uses beta in bytes/s).
    Message time is the postal model ``latency(s) + s / bandwidth(s)``.

Deviations from the printed text (see /work/shared/seeds/README.md), all deliberate:

* ``variability`` follows Algorithm 1: ``sigma = T_compute * variability**2`` (the thesis's
  "10% runtime standard deviation" is sigma = 1000 us for T_compute = 100 ms, not 10 ms).
  ``sigma_s`` may be given directly instead.
* ``M_size = size / N`` is computed per buffer size (inside the loop; the printed
  algorithm sets it once, before the loop over sizes).
* ``T_overlap`` means ``T_overlap,avg``.
* EMMA (eq. 2.9) comes from :func:`commscope.stats.evt.emma`.
* The expected spread ``T_overlap,avg`` is computed as ``E[max] - E[min]`` with EMMA for
  both ends (``F^-1(P)`` and ``F^-1(1-P)``). For the symmetric distributions the thesis
  assumes this equals its ``2 (T_lastThread - mu)`` exactly; it also gives a meaningful
  answer for skewed distributions.
* ``M_overlap,avg`` is kept fractional, as Algorithm 1 writes it (the example rounds
  nothing because the cap ``N - 1`` applies).
* Effective bandwidths are in bytes/s. The thesis's MiB/s figures multiply MB/s by
  1.048576; the correct conversion divides by it (x 0.9537). Use :data:`MIB` to convert.
* The single-send baseline adds no ``T_wait`` (Example 4.2.1: ``T_elapsed = T_send``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..limits import check_memory

from ..stats.evt import emma, emma_probability
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")
stats = lazy("scipy.stats")


MIB = 1024.0**2


def _emma_min(dist, n):
    """Expected minimum of ``n`` draws by EMMA mirrored: ``F^-1(1 - P)``, P of eq. 2.9."""
    return float(dist.ppf(1.0 - emma_probability(n)))


@dataclass(frozen=True)
class ConstantLink:
    """A link whose latency (s) and bandwidth (bytes/s) do not depend on message size."""

    latency: float
    bandwidth: float

    def __post_init__(self):
        if not (self.latency >= 0 and np.isfinite(self.latency)):
            raise InputError("link", "latency_s", "must be a finite number >= 0")
        if not (self.bandwidth > 0):
            raise InputError("link", "bandwidth_Bps", "must be > 0")

    def latency_s(self, size_bytes):
        return np.full(np.shape(size_bytes), float(self.latency))

    def bandwidth_Bps(self, size_bytes):
        return np.full(np.shape(size_bytes), float(self.bandwidth))


def link_from_alpha_beta(alpha_s: float, beta_s_per_byte: float) -> ConstantLink:
    """Postal-model link ``T(s) = alpha + beta * s`` (beta in seconds per byte)."""
    if not beta_s_per_byte > 0:
        raise InputError("link", "beta_s_per_byte", "must be > 0")
    return ConstantLink(float(alpha_s), 1.0 / float(beta_s_per_byte))


class MachineModelLink:
    """A machine model (:mod:`commscope.models.machine_model`) seen as a link.

    Latency and per-message rate are those of
    :func:`commscope.models.message_time.message_time` for the protocol each size falls
    in, so the postal time here is that function's time.
    """

    def __init__(self, machine_model, locality: str = "inter-node", ppn: int = 1):
        self.machine_model, self.locality, self.ppn = machine_model, locality, ppn

    def _terms(self, size_bytes):
        from .message_time import message_time  # only needed for links from a machine model

        sizes = np.asarray(size_bytes, dtype=float)
        return message_time(self.machine_model, sizes.ravel(), self.locality, self.ppn), sizes.shape

    def latency_s(self, size_bytes):
        t, shape = self._terms(size_bytes)
        return np.asarray(t.alpha_s, float).reshape(shape)

    def bandwidth_Bps(self, size_bytes):
        t, shape = self._terms(size_bytes)
        return np.asarray(t.rate_Bps, float).reshape(shape)


def message_time_s(link, size_bytes):
    """Postal model time of one message: ``latency(s) + s / bandwidth(s)`` (seconds)."""
    size = np.asarray(size_bytes, dtype=float)
    return link.latency_s(size) + size / link.bandwidth_Bps(size)


def sigma_from_variability(t_compute_s: float, variability: float) -> float:
    """Standard deviation in the thesis's convention: ``T_compute * variability**2``.

    "10% runtime standard deviation" (variability 0.1) of a 100 ms compute is 1 ms.
    """
    return float(t_compute_s) * float(variability) ** 2


def buffer_sweep_bytes(j_min: int = -6, j_max: int = 8) -> np.ndarray:
    """The thesis figures' buffer sizes, ``18 * 2**j`` MiB (0.28 MiB .. 4608 MiB by default)."""
    return np.array([18 * MIB * 2.0**j for j in range(j_min, j_max + 1)])


class PointMass:
    """Every draw equals ``value`` (the zero-variability limit), with the scipy methods used here."""

    def __init__(self, value):
        self.value = float(value)

    def ppf(self, q):
        return np.full(np.shape(q), self.value) if np.ndim(q) else self.value

    isf = ppf

    def rvs(self, size=None, random_state=None):
        return np.full(size, self.value)

    def mean(self):
        return self.value

    def std(self):
        return 0.0


DISTRIBUTIONS = ("normal", "uniform", "lognormal", "exponential", "gumbel")


def thread_time_distribution(t_compute_s: float, sigma_s: float, name: str = "normal"):
    """A frozen scipy distribution of thread compute times with the given mean and sd.

    ``exponential`` is shifted so that its mean is ``t_compute_s`` (scale = sd).
    """
    mu, sd = float(t_compute_s), float(sigma_s)
    if not (mu > 0 and np.isfinite(mu)):
        raise InputError("--compute", "t_compute_s", "must be a positive number of seconds")
    if not (sd >= 0 and np.isfinite(sd)):
        raise InputError("--sigma", "sigma_s", "must be a finite number >= 0")
    if name not in DISTRIBUTIONS:
        raise InputError("--dist", "dist", f"unknown distribution '{name}'; one of {DISTRIBUTIONS}")
    if sd == 0:  # scipy's scale=0 gives NaN; all threads then finish together
        return PointMass(mu)
    if name == "normal":
        return stats.norm(mu, sd)
    if name == "uniform":  # width sqrt(12) sd
        w = sd * np.sqrt(12.0)
        return stats.uniform(mu - w / 2, w)
    if name == "lognormal":
        s2 = np.log1p((sd / mu) ** 2)
        return stats.lognorm(np.sqrt(s2), scale=mu * np.exp(-s2 / 2))
    if name == "exponential":
        return stats.expon(mu - sd, sd)
    if name == "gumbel":
        beta = sd * np.sqrt(6.0) / np.pi
        return stats.gumbel_r(mu - 0.5772156649015329 * beta, beta)


def _check_common(threads, sizes_bytes, t_wait_s):
    if int(threads) != threads or threads < 1:
        raise InputError("--threads", "threads", "must be a positive integer")
    sizes = np.atleast_1d(np.asarray(sizes_bytes, dtype=float))
    if sizes.size == 0 or not np.all(np.isfinite(sizes)) or np.any(sizes <= 0):
        raise InputError("--sizes", "size_bytes", "buffer sizes must be positive numbers")
    if not (t_wait_s >= 0 and np.isfinite(t_wait_s)):
        raise InputError("--t-wait", "t_wait_s", "must be a finite number >= 0")
    return int(threads), sizes


def _resolve_dist(t_compute_s, variability, sigma_s, dist):
    if dist is not None:
        return dist
    if (variability is None) == (sigma_s is None):
        raise InputError(
            "--variability", "variability", "give exactly one of variability or sigma_s"
        )
    if variability is not None:
        if not (variability >= 0 and np.isfinite(variability)):
            raise InputError("--variability", "variability", "must be a number >= 0")
        sigma_s = sigma_from_variability(t_compute_s, variability)
    return thread_time_distribution(t_compute_s, sigma_s, "normal")


def model_single_send(link, sizes_bytes) -> pd.DataFrame:
    """Single-send baseline: after the join, one message of the whole buffer.

    Columns ``size_bytes, single_elapsed_s, single_bandwidth_Bps``; the elapsed time from the
    last thread's finish is the postal time of the whole buffer (Example 4.2.1).
    """
    _, sizes = _check_common(1, sizes_bytes, 0.0)
    elapsed = message_time_s(link, sizes)
    return pd.DataFrame(
        {"size_bytes": sizes, "single_elapsed_s": elapsed, "single_bandwidth_Bps": sizes / elapsed}
    )


def model_partitioned(
    link,
    threads: int,
    sizes_bytes,
    t_compute_s: float,
    *,
    variability: float | None = None,
    sigma_s: float | None = None,
    t_wait_s: float = 0.0,
    dist=None,
) -> pd.DataFrame:
    """Algorithm 1 (analytic): expected partitioned-send performance per buffer size.

    Thread times are ``Normal(t_compute_s, sigma)`` with ``sigma`` from ``variability``
    (thesis convention, see :func:`sigma_from_variability`) or ``sigma_s``; or any frozen
    scipy distribution ``dist``. Per size: ``partition_bytes = size / threads``,
    ``message_s`` (postal), ``last_thread_s`` (EMMA), ``overlap_s`` = expected spread
    between first and last thread, ``messages_overlapped = min(overlap / message, N-1)``,
    ``elapsed_s = message * (N - messages_overlapped) + t_wait`` and
    ``bandwidth_Bps = size / elapsed_s``.
    """
    n, sizes = _check_common(threads, sizes_bytes, t_wait_s)
    d = _resolve_dist(t_compute_s, variability, sigma_s, dist)
    t_last = float(emma(d, n))
    overlap = max(t_last - _emma_min(d, n), 0.0) if n > 1 else 0.0
    part = sizes / n
    t_msg = message_time_s(link, part)
    m_overlap = np.minimum(overlap / t_msg, n - 1)
    elapsed = t_msg * (n - m_overlap) + t_wait_s
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "partition_bytes": part,
            "message_s": t_msg,
            "last_thread_s": t_last,
            "overlap_s": overlap,
            "messages_overlapped": m_overlap,
            "elapsed_s": elapsed,
            "bandwidth_Bps": sizes / elapsed,
        }
    )


def _draw_thread_times(thread_times, replicas, threads, rng):
    """(replicas, threads) compute times from a scipy distribution or resampled data.

    Data of shape (iterations, threads) are measured arrival vectors: whole rows are
    resampled, so the threads of one iteration stay together (their correlation and
    the iteration's own spread are kept); any other shape is pooled samples.
    """
    if hasattr(thread_times, "rvs"):
        return thread_times.rvs(size=(replicas, threads), random_state=rng)
    data = np.asarray(thread_times, dtype=float)
    if data.ndim == 2 and data.shape[1] == threads and data.shape[0] > 0:
        if not np.all(np.isfinite(data)):
            raise InputError("thread_times", "compute_time_s", "need finite measured samples")
        return data[rng.integers(0, data.shape[0], size=replicas)]
    data = data.ravel()
    if data.size == 0 or not np.all(np.isfinite(data)):
        raise InputError("thread_times", "compute_time_s", "need finite measured samples")
    return rng.choice(data, size=(replicas, threads), replace=True)


#: Peak bytes per replica and thread: the draws, their sorted copy, ready + remaining * m
#: and the comparison of np.max.
BYTES_PER_REPLICA_THREAD = 4 * 8


def simulate_partitioned(
    link,
    threads: int,
    sizes_bytes,
    thread_times,
    *,
    replicas: int = 2000,
    seed: int = 0,
    t_wait_s: float = 0.0,
) -> pd.DataFrame:
    """Monte-Carlo partitioned send without Algorithm 1's symmetry/continuity assumptions.

    ``thread_times`` is a frozen scipy distribution, an array of measured compute times
    (resampled with replacement), or an (iterations, threads) array of measured arrival
    vectors (whole iterations resampled). In each replica, partition ``k`` becomes ready when its
    thread finishes (time ``r_k``) and the link is serial: a partition starts at
    ``max(r_k, link free)``. With equal message time ``m`` and ready times sorted, the
    last transfer completes at ``max_k (r_(k) + (N - k + 1) m)``, which is evaluated for all
    replicas at once. The same draws are reused for every size (common random numbers).

    Columns: ``mc_elapsed_s`` (mean over replicas), ``mc_elapsed_p05_s``,
    ``mc_elapsed_p95_s``, ``mc_bandwidth_Bps`` (size / mean elapsed),
    ``mc_bandwidth_mean_Bps`` (mean of per-replica bandwidths, as the benchmark averages),
    ``mc_messages_overlapped`` (message-equivalents sent before the last thread finished,
    ``N - (elapsed - t_wait) / m``, the quantity Algorithm 1 calls ``M_overlap,avg``) and
    ``mc_last_thread_s`` (mean finish time of the slowest thread).
    """
    n, sizes = _check_common(threads, sizes_bytes, t_wait_s)
    if int(replicas) != replicas or replicas < 1:
        raise InputError("--replicas", "replicas", "must be a positive integer")
    check_memory(
        "--replicas",
        replicas,
        int(replicas) * n * BYTES_PER_REPLICA_THREAD,
        f"{BYTES_PER_REPLICA_THREAD} bytes per replica and thread, {n} threads",
    )
    rng = np.random.default_rng(seed)
    ready = np.sort(_draw_thread_times(thread_times, int(replicas), n, rng), axis=1)
    t_last = ready[:, -1]
    remaining = np.arange(n, 0, -1, dtype=float)  # partitions from k-th finisher onward
    part = sizes / n
    t_msg = message_time_s(link, part)
    rows = []
    for size, m in zip(sizes, t_msg):
        done = np.max(ready + remaining * m, axis=1)
        elapsed = done - t_last + t_wait_s
        rows.append(
            {
                "size_bytes": size,
                "partition_bytes": size / n,
                "message_s": m,
                "mc_elapsed_s": elapsed.mean(),
                "mc_elapsed_p05_s": np.percentile(elapsed, 5),
                "mc_elapsed_p95_s": np.percentile(elapsed, 95),
                "mc_bandwidth_Bps": size / elapsed.mean(),
                "mc_bandwidth_mean_Bps": np.mean(size / elapsed),
                "mc_messages_overlapped": n - (elapsed.mean() - t_wait_s) / m,
                "mc_last_thread_s": t_last.mean(),
            }
        )
    return pd.DataFrame(rows)


def compare_partitioned(
    link,
    threads: int,
    sizes_bytes,
    t_compute_s: float,
    *,
    variability: float | None = None,
    sigma_s: float | None = None,
    t_wait_s: float = 0.0,
    dist: str = "normal",
    monte_carlo: bool = False,
    samples=None,
    replicas: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Single send, Algorithm 1 and (optionally) Monte Carlo side by side, one row per size.

    ``dist`` names the thread-time distribution (mean ``t_compute_s``, sd from
    ``variability``/``sigma_s``); ``samples`` (measured compute times) replaces it in the
    Monte Carlo. The analytic columns are prefixed ``model_``.
    """
    _check_common(threads, sizes_bytes, t_wait_s)
    if (variability is None) == (sigma_s is None):
        raise InputError("--variability", "variability", "give exactly one of variability or sigma")
    if variability is not None:
        if not (variability >= 0 and np.isfinite(variability)):
            raise InputError("--variability", "variability", "must be a number >= 0")
        sigma_s = sigma_from_variability(t_compute_s, variability)
    d = thread_time_distribution(t_compute_s, sigma_s, dist)
    single = model_single_send(link, sizes_bytes)
    model = model_partitioned(link, threads, sizes_bytes, t_compute_s, dist=d, t_wait_s=t_wait_s)
    out = single.copy()
    out["model_elapsed_s"] = model["elapsed_s"]
    out["model_bandwidth_Bps"] = model["bandwidth_Bps"]
    out["model_messages_overlapped"] = model["messages_overlapped"]
    if monte_carlo or samples is not None:
        mc = simulate_partitioned(
            link,
            threads,
            sizes_bytes,
            d if samples is None else samples,
            replicas=replicas,
            seed=seed,
            t_wait_s=t_wait_s,
        )
        for col in ("mc_elapsed_s", "mc_bandwidth_Bps", "mc_messages_overlapped"):
            out[col] = mc[col].to_numpy()
    return out
