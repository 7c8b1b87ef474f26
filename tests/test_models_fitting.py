"""Fitting (paper 004 parameters): known parameters recovered from seeded synthetic data."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from commscope.errors import InputError
from commscope.models.fitting import (
    MAX_MEDIAN_REL_ERROR,
    MIN_SIZES_PER_SEGMENT,
    breakpoint_contradictions,
    compare_breakpoints,
    find_protocol_breakpoints,
    fit_gamma,
    fit_maxrate,
    fit_postal,
    fit_machine_model,
    fit_protocol,
    protocol_switches,
)
from commscope.models.message_time import message_seconds
from commscope.models.p2p import hvpingpong_time
from commscope.models.machine_model import (
    bluewaters_machine_model,
    load_machine_model,
    machine_model_from_dict,
    save_machine_model,
)

SIZES = 2 ** np.arange(0, 23)  # 1 B .. 4 MiB: times span about four decades

# locality -> ([(alpha_s, Rb_Bps) per protocol segment], breakpoints, R_N of rendezvous)
TRUE = {
    "intra-socket": ([(3e-7, 2e9), (8e-7, 3e9), (4e-6, 8e9)], (512, 16384), math.inf),
    "intra-node": ([(1e-6, 1e9), (5e-6, 5e9)], (4096,), math.inf),  # alias of cross-socket
    "inter-node": ([(2.3e-6, 1.3e9), (7.0e-6, 7.5e8), (3.0e-6, 2.9e9)], (256, 8192), 6.6e9),
}


def true_time(loc, s, pairs=1):
    segs, bps, r_n = TRUE[loc]
    k = sum(s > b for b in bps)
    alpha, rb = segs[k]
    r_n = r_n if k == len(segs) - 1 else math.inf
    return alpha + pairs * s / min(r_n, pairs * rb)  # eq. 2


def pingpong(seed, reps=8, noise=0.02, pairs=(1, 2, 4, 8)):
    """Tidy samples: every repetition kept, multiplicative lognormal noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for loc in TRUE:
        for s in SIZES:
            for k in pairs if loc == "inter-node" else (1,):
                t = true_time(loc, s, k)
                rows += [(loc, k, int(s), t * rng.lognormal(0, noise)) for _ in range(reps)]
    return pd.DataFrame(rows, columns=["locality", "pairs", "size_bytes", "time_s"])


# ------------------------------------------------------------------ postal


@pytest.mark.parametrize("seed", range(4))
def test_fit_postal_recovers_alpha_beta(seed):
    rng = np.random.default_rng(seed)
    alpha, beta = 2.0e-6, 1 / 3.0e9
    s = np.repeat(SIZES, 10).astype(float)
    t = (alpha + beta * s) * rng.lognormal(0, 0.03, s.size)
    fit = fit_postal(s, t)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.03)
    assert fit.beta_s_per_byte == pytest.approx(beta, rel=0.03)
    assert fit.n_samples == s.size
    assert set(fit.rel_error_by_size) == set(int(x) for x in SIZES)
    assert fit.max_rel_error < 0.05


def test_fit_postal_exact_and_non_negative():
    s = np.array([1, 10, 100, 1000.0])
    fit = fit_postal(s, 1e-6 + 1e-9 * s)
    assert (fit.alpha_s, fit.beta_s_per_byte) == pytest.approx((1e-6, 1e-9), rel=1e-9)
    # decreasing times would need beta < 0: clipped to 0, alpha absorbs them
    fit = fit_postal(s, 2e-6 - 1e-10 * s)
    assert fit.beta_s_per_byte == 0 and fit.alpha_s > 0 and math.isinf(fit.Rb_Bps)


def test_relative_weighting_keeps_small_sizes():
    # Unweighted least squares would let the 4 MiB point swamp alpha; relative does not.
    s = SIZES.astype(float)
    t = 5e-6 + s / 1e10
    t[-1] *= 1.5  # one large-size outlier
    assert fit_postal(s, t).alpha_s == pytest.approx(5e-6, rel=0.05)


# ------------------------------------------------------------------ breakpoints


@pytest.mark.parametrize("seed", range(5))
def test_breakpoints_found_at_protocol_switches(seed):
    df = pingpong(seed, pairs=(1,))
    for loc, (_, bps, _) in TRUE.items():
        sub = df[df["locality"] == loc]
        found = find_protocol_breakpoints(sub["size_bytes"], sub["time_s"])
        assert found.breakpoints == bps, loc
        assert len(found.segments) == len(bps) + 1


@pytest.mark.parametrize("seed", range(10))
def test_no_breakpoint_in_single_regime_data(seed):
    rng = np.random.default_rng(100 + seed)
    s = np.repeat(SIZES, 8).astype(float)
    t = (3e-6 + s / 2.9e9) * rng.lognormal(0, 0.03, s.size)
    assert find_protocol_breakpoints(s, t).breakpoints == ()


def test_breakpoints_without_repetitions_use_bic():
    s = SIZES.astype(float)
    t = np.array([true_time("inter-node", x) for x in s])
    assert find_protocol_breakpoints(s, t).breakpoints == (256, 8192)
    assert find_protocol_breakpoints(s, 3e-6 + s / 2.9e9).breakpoints == ()
    assert find_protocol_breakpoints(s, t, max_breakpoints=1).breakpoints in ((256,), (8192,))


# ------------------------------------------------------------------ max-rate


def test_fit_maxrate_recovers_injection_limit():
    df = pingpong(1)
    fit = fit_maxrate(df[df["locality"] == "inter-node"])
    assert fit.min_size_bytes == 16384  # rendezvous segment found
    assert fit.Rb_Bps == pytest.approx(2.9e9, rel=0.03)
    assert fit.R_N_Bps == pytest.approx(6.6e9, rel=0.03)
    assert fit.limited_pairs == [4, 8]  # 2 * 2.9e9 = 5.8e9 < R_N
    assert fit.node_rate_Bps_by_pairs[2] == pytest.approx(2 * 2.9e9, rel=0.03)


def test_fit_maxrate_without_limit_gives_inf():
    rng = np.random.default_rng(7)
    rows = [
        (k, int(s), (3e-6 + s / 2.9e9) * rng.lognormal(0, 0.02))
        for s in SIZES[14:]
        for k in (1, 4, 16)
        for _ in range(6)
    ]
    df = pd.DataFrame(rows, columns=["pairs", "size_bytes", "time_s"])
    fit = fit_maxrate(df, min_size_bytes=16384)
    assert math.isinf(fit.R_N_Bps) and fit.limited_pairs == []


# ------------------------------------------------------------------ whole machine model


def test_fit_machine_model_recovers_every_locality(tmp_path):
    df = pingpong(2)
    machine_model = fit_machine_model(
        df, mpi_eager_limits={"btl_sm_eager_limit": 4096}, machine={"host": "synthetic"}
    )
    names = {3: ("short", "eager", "rendezvous"), 2: ("eager", "rendezvous")}
    for loc, (segs, bps, _) in TRUE.items():
        canon = "cross-socket" if loc == "intra-node" else loc
        bp = machine_model.breakpoints[canon]
        assert tuple(x for x in (bp.short_max_bytes, bp.eager_max_bytes) if x is not None) == bps
        for proto, (alpha, rb) in zip(names[len(segs)], segs):
            p = machine_model.params[(proto, canon)]
            assert p.alpha_s == pytest.approx(alpha, rel=0.05), (loc, proto)
            if (loc, proto) != ("inter-node", "short"):
                assert p.Rb_Bps == pytest.approx(rb, rel=0.05), (loc, proto)
            assert p.fit.n_samples > 0 and p.fit.max_rel_error < 0.05
        # the fitted machine model predicts the noiseless times at every size
        for s in SIZES:
            assert message_seconds(machine_model, s, canon) == pytest.approx(
                true_time(loc, s), rel=0.03
            )
    assert machine_model.params[("rendezvous", "inter-node")].R_N_Bps == pytest.approx(
        6.6e9, rel=0.03
    )
    assert math.isinf(machine_model.params[("rendezvous", "intra-socket")].R_N_Bps)
    assert ("short", "cross-socket") not in machine_model.params  # two regimes: eager + rendezvous
    assert machine_model.protocol_of(1, "cross-socket") == "eager"
    table = compare_breakpoints(machine_model).set_index("locality")
    assert table.loc["cross-socket", "eager_max_bytes"] == 4096
    assert table.loc["inter-node", "mpi:btl_sm_eager_limit"] == 4096
    assert machine_model.gamma_s is None
    back = load_machine_model(save_machine_model(machine_model, tmp_path / "fit.json"))
    assert back.to_dict() == machine_model.to_dict()


def test_fit_machine_model_without_pairs_column_and_with_hvpp():
    df = pingpong(3, pairs=(1,)).drop(columns="pairs")
    machine_model = fit_machine_model(df, hvpp=hvpp_samples(4, gamma=6e-9))
    assert math.isinf(machine_model.params[("rendezvous", "inter-node")].R_N_Bps)
    assert machine_model.gamma_s == pytest.approx(6e-9, rel=0.05)


# ------------------------------------------------------------------ queue search


def hvpp_samples(seed, gamma, reps=5, noise=0.03, search="upper"):
    """HighVolumePingPong samples from the model with a known gamma, noisy."""
    rng = np.random.default_rng(seed)
    machine_model = bluewaters_machine_model()
    machine_model.gamma_s = gamma
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])[:, None]
    s = np.array([8, 256, 4096])[None, :]
    frames = []
    for order in ("ordered", "reversed"):
        m = hvpingpong_time(machine_model, n, s, "intra-socket", order, reversed_search=search)
        m = m.loc[m.index.repeat(reps)].copy()
        m["time_s"] = m["total_s"] * rng.lognormal(0, noise, len(m))
        frames.append(m[["n_messages", "size_bytes", "order", "time_s"]])
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("seed", range(3))
def test_fit_gamma_recovers_upper_bound_gamma(seed):
    g = fit_gamma(hvpp_samples(seed, gamma=8.4e-9))
    assert g.gamma_s == pytest.approx(8.4e-9, rel=0.05)
    assert g.n_cells == 10 * 3


def test_fit_gamma_triangular_form():
    df = hvpp_samples(11, gamma=5e-9, search="triangular")
    assert fit_gamma(df, search="triangular").gamma_s == pytest.approx(5e-9, rel=0.05)
    # read as the n^2 bound, the same data give about half the per-element cost
    assert fit_gamma(df, search="upper").gamma_s == pytest.approx(2.5e-9, rel=0.1)


def test_fit_gamma_robust_to_outlier_repetitions():
    df = hvpp_samples(5, gamma=8.4e-9)
    spoil = df.sample(frac=0.1, random_state=0).index  # 10% of repetitions 5x slower
    df.loc[spoil, "time_s"] *= 5
    assert fit_gamma(df).gamma_s == pytest.approx(8.4e-9, rel=0.1)


# ------------------------------------------------------------------ bad input

GOOD = pingpong(0, reps=3, pairs=(1,))


@pytest.mark.parametrize(
    "df",
    [
        GOOD.iloc[0:0],
        GOOD.drop(columns="time_s"),
        GOOD.drop(columns="locality"),
        GOOD.assign(time_s=0.0),
        GOOD.assign(time_s=-GOOD["time_s"]),
        GOOD.assign(size_bytes="big"),
        GOOD.assign(locality="moon"),
        GOOD.assign(pairs=2),  # no single-pair samples
        GOOD.assign(pairs=0),
    ],
)
def test_fit_machine_model_bad_input(df):
    with pytest.raises(InputError):
        fit_machine_model(df)


def test_fit_functions_bad_input():
    with pytest.raises(InputError):
        fit_postal([], [])
    with pytest.raises(InputError):
        fit_postal([8, 8, 8], [1e-6, 1e-6, 1e-6])  # one distinct size
    with pytest.raises(InputError):
        fit_postal([1, 2], [1e-6, 0.0])
    with pytest.raises(InputError):
        fit_postal([1, 2, 3], [1e-6, 2e-6])
    with pytest.raises(InputError):
        find_protocol_breakpoints([1, 2], [1e-6, 2e-6])  # fewer than 3 sizes
    with pytest.raises(InputError):
        fit_maxrate(GOOD.assign(pairs=4))
    with pytest.raises(InputError):
        fit_maxrate(GOOD.drop(columns="pairs"))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.iloc[0:0],
        lambda d: d.drop(columns="order"),
        lambda d: d[d["order"] == "ordered"],
        lambda d: d.assign(order="sideways"),
        lambda d: d.assign(time_s=0.0),
        lambda d: d[d["n_messages"] == 1],
    ],
)
def test_fit_gamma_bad_input(mutate):
    with pytest.raises(InputError):
        fit_gamma(mutate(hvpp_samples(0, gamma=8.4e-9, reps=2)))
    with pytest.raises(InputError):
        fit_gamma(hvpp_samples(0, gamma=8.4e-9, reps=2), search="cubic")


def test_cache_slope_change_is_not_a_protocol_switch():
    # Eager up to 2 KiB, then rendezvous with a jump; above 512 KiB the per-byte
    # cost doubles without a jump (messages leave the cache), as on this machine.
    rng = np.random.default_rng(5)
    s = np.repeat(SIZES, 6).astype(float)
    eager = 2e-7 + s / 9e9
    rndv = 2.2e-6 + s / 12e9
    cache_knee = 512 << 10
    rndv = np.where(s > cache_knee, 2.2e-6 + cache_knee / 12e9 + (s - cache_knee) / 6e9, rndv)
    t = np.where(s <= 2048, eager, rndv) * rng.lognormal(0, 0.02, s.size)
    search, continuous = protocol_switches(s, t)
    assert search.breakpoints == (2048,)
    assert continuous == (cache_knee,)
    assert search.segments == [(1, 2048), (4096, 4 << 20)]
    machine_model = fit_machine_model(
        pd.DataFrame({"size_bytes": s, "time_s": t, "locality": "intra-socket"})
    )
    assert machine_model.machine["regime_changes_bytes"] == {"intra-socket": [cache_knee]}
    assert machine_model.protocol_of(4096, "intra-socket") == "rendezvous"


def _cache_knee_samples(max_size, seed=5, knee=512 << 10):
    """Rendezvous (12 GB/s) whose per-byte cost doubles, without a jump, past ``knee``."""
    rng = np.random.default_rng(seed)
    s = np.repeat(2 ** np.arange(12, int(math.log2(max_size)) + 1), 6).astype(float)
    t = 2.2e-6 + np.minimum(s, knee) / 12e9 + np.maximum(s - knee, 0) / 6e9
    return pd.DataFrame(
        {"size_bytes": s, "time_s": t * rng.lognormal(0, 0.02, s.size), "locality": "intra-socket"}
    )


def test_capacity_regime_is_modelled_with_three_sizes_beyond_it(tmp_path):
    knee = 512 << 10
    mm = fit_machine_model(_cache_knee_samples(4 << 20))  # 1, 2 and 4 MiB beyond the knee
    p = mm.params[("rendezvous", "intra-socket")]
    assert p.capacity_bytes == knee
    assert 1 / p.beta_beyond_s_per_byte == pytest.approx(6e9, rel=0.05)
    assert 1 / p.beta_s_per_byte == pytest.approx(12e9, rel=0.05)
    truth = 2.2e-6 + knee / 12e9 + ((4 << 20) - knee) / 6e9
    assert message_seconds(mm, 4 << 20, "intra-socket") == pytest.approx(truth, rel=0.03)
    # below the knee the postal line alone; the fit's error covers every size
    assert float(p.postal_s(knee)) == pytest.approx(p.alpha_s + knee * p.beta_s_per_byte)
    assert p.fit.max_rel_error < 0.1 and max(p.fit.rel_error_by_size) == 4 << 20
    path = tmp_path / "mm.json"
    save_machine_model(mm, path)
    back = load_machine_model(path).params[("rendezvous", "intra-socket")]
    assert (back.capacity_bytes, back.beta_beyond_s_per_byte) == (knee, p.beta_beyond_s_per_byte)


def test_capacity_regime_needs_three_sizes_beyond_it():
    df = _cache_knee_samples(2 << 20)  # only 1 and 2 MiB beyond
    par, fit = fit_protocol(df["size_bytes"], df["time_s"], capacity_changes=(512 << 10,))
    assert par.capacity_bytes is None and par.beta_beyond_s_per_byte is None
    assert (par.alpha_s, par.beta_s_per_byte) == (fit.alpha_s, fit.beta_s_per_byte)
    df = _cache_knee_samples(4 << 20)
    assert fit_protocol(df["size_bytes"], df["time_s"], (512 << 10,))[0].capacity_bytes == 512 << 10


def test_capacity_field_is_checked_when_loaded(tmp_path):
    data = bluewaters_machine_model().to_dict()
    data["parameters"][0]["capacity"] = {"bytes": 1 << 20}
    with pytest.raises(InputError, match=r"capacity.*beta_beyond_s_per_byte"):
        machine_model_from_dict(data, "mm.json")


# ------------------------------------------------------------------ fit quality


def _noisy_pingpong(seed=11, max_size=64 << 10, reps=20):
    """1 B .. 64 KiB on a busy machine: one rendezvous-like regime, half the repetitions
    delayed by a descheduling of 5-50 us (what `bench pingpong -m 1:64K` showed)."""
    rng = np.random.default_rng(seed)
    s = np.repeat(2 ** np.arange(0, int(math.log2(max_size)) + 1), reps).astype(float)
    t = 3e-7 + s / 8e9
    t = t + np.where(rng.random(s.size) < 0.5, rng.uniform(5e-6, 5e-5, s.size), 0.0)
    return pd.DataFrame({"size_bytes": s, "time_s": t, "locality": "intra-socket"})


def test_noisy_fit_is_flagged_and_every_segment_is_finite_and_wide_enough():
    machine_model = fit_machine_model(
        _noisy_pingpong(), mpi_eager_limits={"btl_sm_eager_limit": 4096}
    )
    for (proto, loc), p in machine_model.params.items():
        assert p.beta_s_per_byte > 0 and math.isfinite(p.Rb_Bps), proto  # no infinite bandwidth
        assert len(p.fit.rel_error_by_size) >= MIN_SIZES_PER_SEGMENT, proto
        lo, hi = p.fit.ci95["alpha_s"]
        assert lo <= p.alpha_s <= hi or math.isclose(p.alpha_s, lo) or math.isclose(p.alpha_s, hi)
        assert p.fit.ci95["Rb_Bps"][0] <= p.Rb_Bps <= p.fit.ci95["Rb_Bps"][1]
    flagged = [p for p in machine_model.params.values() if p.fit.flags]
    assert flagged, "a fit with errors of tens of percent must be flagged"
    assert all(p.fit.median_rel_error > MAX_MEDIAN_REL_ERROR for p in flagged)
    assert any("fit flagged" in w for w in machine_model.machine["warnings"])
    # the flags survive the machine-model file and show in the printed table
    again = machine_model_from_dict(json.loads(json.dumps(machine_model.to_dict())), "p.json")
    assert [p.fit.flags for p in again.params.values()] == [
        p.fit.flags for p in machine_model.params.values()
    ]
    from commscope.machine_fit import machine_model_table

    assert any(r["quality"].startswith("FLAGGED") for r in machine_model_table(machine_model))


def test_clean_fit_is_not_flagged_and_its_intervals_are_tight():
    machine_model = fit_machine_model(pingpong(2, noise=0.01, pairs=(1,)))
    for p in machine_model.params.values():
        assert p.fit.flags == []
        lo, hi = p.fit.ci95["alpha_s"]
        assert hi - lo < 0.2 * p.alpha_s + 1e-9


@pytest.mark.slow
def test_gamma_and_r_n_get_bootstrap_intervals():
    machine_model = fit_machine_model(
        pingpong(2, noise=0.01, pairs=(1, 4)), hvpp=hvpp_samples(4, gamma=8.4e-9)
    )
    lo, hi = machine_model.machine["gamma_ci95_s"]
    assert lo <= machine_model.gamma_s <= hi and hi < 2 * machine_model.gamma_s
    rn = machine_model.params[("rendezvous", "inter-node")]
    assert rn.R_N_Bps == pytest.approx(6.6e9, rel=0.1)
    assert rn.fit.ci95["R_N_Bps"][0] <= rn.R_N_Bps <= rn.fit.ci95["R_N_Bps"][1]


def test_a_breakpoint_no_mpi_t_limit_explains_is_said():
    machine_model = bluewaters_machine_model()
    machine_model.mpi_eager_limits = {"btl_sm_eager_limit": 4096}
    said = breakpoint_contradictions(machine_model)
    assert said and all("MPI_T" in s for s in said)  # 499 and 7999 B: no 4096 nearby...
    machine_model.mpi_eager_limits = {"a": 512, "b": 8192}
    assert breakpoint_contradictions(machine_model) == []  # ...but 512 and 8192 explain them
