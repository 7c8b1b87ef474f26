"""Fault injection: degenerate samples and huge options.

Every estimator gives an answer or a reason, never a non-finite number as a result,
and agreement is claimed only between usable fits.  Options that size an allocation
are refused before anything is allocated, naming the option and the limit.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from commscope.cli import main
from commscope.errors import InputError
from commscope.stats import bootstrap, evt


def _hvpp_like(seed=1):
    """Like HighVolumePingPong times: a timer-quantised bulk and a few huge outliers."""
    rng = np.random.default_rng(seed)
    return np.concatenate([1e-6 + 1e-9 * rng.integers(0, 5, 950), 1e-5 + 1e-4 * rng.random(50)])


def _finite_numbers(obj):
    """Every number in a JSON document is finite (NaN/inf would show as null or strings)."""
    if isinstance(obj, dict):
        return all(_finite_numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_finite_numbers(v) for v in obj)
    if isinstance(obj, str):
        return obj not in ("inf", "-inf", "nan")
    return not isinstance(obj, float) or math.isfinite(obj)


def test_heavy_tail_mle_is_refused_with_reason():
    s = evt.fit_all(_hvpp_like())
    assert "mle" in s.failures and "no finite mean" in s.failures["mle"]
    for g in s.fits.values():
        assert all(math.isfinite(v) for v in (g.loc, g.scale, g.shape)) and -1 < g.shape < 1
    assert s.agree in (True, False) and len(s.fits) >= 2  # compared among usable fits only


def test_cli_gev_on_degenerate_sample_prints_no_nonfinite_result(tmp_path, capsys):
    f = tmp_path / "hv.csv"
    pd.DataFrame({"time_s": _hvpp_like()}).to_csv(f, index=False)
    assert main(["stats", "gev", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert _finite_numbers(out) and None not in [r["emma_s"] for r in out["maxima"]]
    mle = next(x for x in out["fits"] if x["method"] == "mle")
    assert mle["shape_k"] is None and "shape k" in mle["problem"]
    assert "mle" not in out["agree_among"]
    assert all(r["distribution"] != "mle" for r in out["maxima"])
    assert main(["stats", "gev", str(f)]) == 0
    text = capsys.readouterr().out
    assert "mle: no usable fit: shape k = " in text
    assert "inf" not in text.split() and "nan" not in text.split()
    assert "types agree:" in text and "among mom, pwm" in text


def test_one_usable_fit_claims_no_agreement():
    s = evt.FitSummary({"pwm": evt.GEV(0.0, 1.0, 0.1)}, 100, failures={"mle": "x", "mom": "y"})
    assert s.agree is None and s.to_dict()["agree"] is None


@pytest.mark.parametrize(
    "sample, reason",
    [
        ([1.0, 1.0, 2.0, 2.0, 1.0, 2.0], "only 2 distinct values"),
        ([3.0] * 20, "all values are equal"),
        ([1.0, 2.0], "at least 3"),
        ([1.0, 2.0, np.inf, 3.0], "NaN or infinite"),
    ],
)
def test_gev_degenerate_samples_say_why(sample, reason):
    with pytest.raises(InputError, match=reason):
        evt.fit_all(sample)


def test_bootstrap_constant_and_tied_samples():
    # constant per-interval maxima: the non-parametric answer is that constant, finite
    r = bootstrap.bootstrap_nonparametric(np.full(50, 2e-3), 4, 64, replicas=500, seed=1)
    assert r.median_s == r.ci_low_s == r.ci_high_s == 2e-3
    # a parametric fit to a constant group is refused with the reason
    with pytest.raises(InputError, match="constant"):
        bootstrap.bootstrap_intranode(np.full((50, 4), 1e-3), 4, 64, replicas=200, seed=1)
    # few distinct values: many resamples tie completely; never a NaN result
    times = np.where(np.random.default_rng(2).random((8, 4)) < 0.9, 1e-3, 2e-3)
    times[0, :] = [1e-3, 2e-3, 3e-3, 4e-3]
    try:
        r = bootstrap.bootstrap_intranode(times, 4, 64, replicas=400, seed=3)
    except InputError as exc:
        assert "gave no usable GEV fit" in str(exc)
    else:
        assert all(math.isfinite(v) for v in (r.median_s, r.ci_low_s, r.ci_high_s))
        assert r.failed_replicas >= 0 and r.replicas + r.failed_replicas >= 400


def test_fit_on_too_few_sizes_says_why(tmp_path, capsys, new_run):
    run = new_run("pingpong", max_size=2)
    pd.DataFrame(
        {
            "size_bytes": [1, 1, 2, 2],
            "pair": 0,
            "rep": [0, 1, 0, 1],
            "time_s": [1e-6, 1.1e-6, 1.2e-6, 1.3e-6],
            "locality": "intra-socket",
            "pairs": 1,
        }
    ).to_csv(run.raw_dir / "samples.csv", index=False)
    run.finish("complete")
    assert main(["fit", str(run.path), "-o", str(tmp_path / "p.json")]) == 2
    assert "distinct sizes" in capsys.readouterr().err


# --- huge options -----------------------------------------------------------------------


def test_bootstrap_replicas_refused_before_allocating(tmp_path, capsys):
    f = tmp_path / "m.csv"
    pd.DataFrame({"max_time_s": np.random.default_rng(0).gumbel(1e-3, 1e-5, 100)}).to_csv(
        f, index=False
    )
    assert (
        main(
            [
                "stats",
                "bootstrap",
                str(f),
                "--base-ranks",
                "4",
                "--target-ranks",
                "64",
                "--replicas",
                "1e12",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--replicas" in err and "1e+12 needs about" in err and "limit" in err
    assert (
        main(
            [
                "stats",
                "bootstrap",
                str(f),
                "--base-ranks",
                "4",
                "--target-ranks",
                "64",
                "--replicas",
                "1e4",
                "--seed",
                "1",
            ]
        )
        == 0
    )  # float notation accepted
    assert "--replicas" in main_help("stats", "bootstrap") and "24 bytes" in main_help(
        "stats", "bootstrap"
    )


def test_a_library_check_names_the_option_given(tmp_path, capsys):
    # the bootstrap checks its parameter target_ranks; the user typed --target-ranks
    f = tmp_path / "m.csv"
    pd.DataFrame({"max_time_s": np.random.default_rng(0).gumbel(1e-3, 1e-5, 100)}).to_csv(
        f, index=False
    )
    assert main(["stats", "bootstrap", str(f), "--base-ranks", "4", "--target-ranks", "0"]) == 2
    assert (
        capsys.readouterr().err == "commscope: error: --target-ranks: must be positive, got 0.0\n"
    )


def test_arrivals_bin_width_refused_before_allocating(tmp_path, capsys):
    rng = np.random.default_rng(1)
    rows = [
        dict(trial=0, rank=0, iteration=i, thread=t, compute_time_s=rng.normal(1e-3, 1e-5))
        for i in range(30)
        for t in range(4)
    ]
    rows[5]["compute_time_s"] = 5e-3  # one laggard, so an example histogram is drawn
    f = tmp_path / "a.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    for width in ("2.2e-16", "0", "-1"):
        assert main(["stats", "arrivals", str(f), "--json", "--bin-width", width]) == 2, width
        assert "--bin-width" in capsys.readouterr().err
    for width in ("nan", "inf"):  # not a number any option means: argparse says so
        with pytest.raises(SystemExit) as stop:
            main(["stats", "arrivals", str(f), "--json", "--bin-width", width])
        assert stop.value.code == 2
        assert "--bin-width: expected a finite number" in capsys.readouterr().err
    assert main(["stats", "arrivals", str(f), "--json", "--bin-width", "1e-6"]) == 0


def main_help(*words):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        main([*words, "--help"])
    return buf.getvalue()
