"""commscope predict variability, end to end on real 1-rank and 2-rank bsp runs."""

import json

import numpy as np
import pytest

from commscope import cli
from commscope.bench.bsp import run_bsp
from commscope.predict.variability import COLUMNS, predict_variability, verdict_summary
from commscope.report.build import build_report
from commscope.runs import Run

QUIET = dict(echo=False, progress=False)


@pytest.fixture(scope="module")
def bsp_runs(tmp_path_factory, default_mpi):
    """FTQ (1 ms normal spins) at 1 and 2 ranks, plus an FWQ run at 2 ranks."""
    root = tmp_path_factory.mktemp("runs")
    common = dict(intervals=60, mean=1e-3, sd=2e-4, runs_root=root, **QUIET)
    one = run_bsp("ftq", ranks=1, seed=1, run_name="ftq-1", **common)
    two = run_bsp("ftq", ranks=2, seed=2, run_name="ftq-2", **common)
    other = run_bsp("fwq", ranks=2, intervals=20, mean=10_000, seed=3, runs_root=root,
                    run_name="fwq-2", **QUIET)
    return root, one, two, other


def test_predicts_and_judges(bsp_runs):
    root, one, two, _ = bsp_runs
    df = predict_variability(one.path, compare=[root], replicas=2000, seed=5)
    assert list(df.columns) == COLUMNS
    # targets default to the compared scales; the fwq run and the calibration are ignored
    assert set(df["target_ranks"]) == {2}
    assert len(df) == 3 * 2
    assert set(df["kind"]) == {"nonparametric", "internode", "intranode"}
    assert df.attrs["compared"] == [str(two.path)]
    assert (df["base_ranks"] == 1).all() and (df["measured_runs"] == 1).all()
    assert (df["ci_low_s"] <= df["median_s"]).all() and (df["median_s"] <= df["ci_high_s"]).all()
    maxima = two.table("maxima")["max_interval_s"].to_numpy()
    imax = df[df["statistic"] == "interval_max_s"]
    np.testing.assert_allclose(imax["measured_median_s"], np.median(maxima))
    rt = df[df["statistic"] == "runtime_s"]
    np.testing.assert_allclose(rt["measured_median_s"], maxima.sum())
    assert (rt["intervals"] == 60).all()
    for row in df.to_dict("records"):
        assert row["inside"] == (row["ci_low_s"] <= row["measured_median_s"] <= row["ci_high_s"])
    summary = verdict_summary(df)
    assert set(summary["judged"]) == {1} and len(summary) == 6
    # the calibration's maxima bound a k = 1 non-parametric prediction
    cal = one.table("maxima")["max_interval_s"].to_numpy()
    k1 = predict_variability(one, [1], kind="nonparametric", replicas=500, seed=1,
                             statistics=("interval_max_s",))
    assert cal.min() <= k1["ci_low_s"].iloc[0] <= k1["ci_high_s"].iloc[0] <= cal.max()
    assert k1["median_s"].iloc[0] in set(cal)


def test_reproducible_and_monotone(bsp_runs):
    _, one, _, _ = bsp_runs
    a = predict_variability(one, [2, 4, 16], replicas=1000, seed=11)
    b = predict_variability(one, [2, 4, 16], replicas=1000, seed=11)
    np.testing.assert_array_equal(a["median_s"], b["median_s"])
    assert a["inside"].isna().all()  # nothing measured at those scales
    for (kind, stat), g in a.groupby(["kind", "statistic"]):
        med = g.sort_values("target_ranks")["median_s"].to_numpy()
        assert np.all(np.diff(med) >= 0), (kind, stat, med)


def test_cli_json_and_table(bsp_runs, capsys):
    root, one, two, _ = bsp_runs
    rc = cli.main(["predict", "variability", str(one.path), "--compare", str(two.path),
                   "--target-ranks", "2,4", "--replicas", "1000", "--seed", "3",
                   "--kind", "intranode", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["base_ranks"] == 1 and out["seed"] == 3
    preds = out["predictions"]
    assert {(p["target_ranks"], p["statistic"]) for p in preds} == {
        (2, "interval_max_s"), (2, "runtime_s"), (4, "interval_max_s"), (4, "runtime_s")}
    assert all(p["kind"] == "intranode" and p["method"] == "pwm" for p in preds)
    assert [p["inside"] is None for p in preds if p["target_ranks"] == 4] == [True, True]
    assert all(isinstance(p["inside"], bool) for p in preds if p["target_ranks"] == 2)
    assert len(out["verdicts"]) == 2
    rc = cli.main(["predict", "variability", str(one.path), "--compare", str(root),
                   "--replicas", "500", "--seed", "3"])
    text = capsys.readouterr().out
    assert rc == 0 and "inside the predicted interval" in text and "nonparametric" in text


def test_report_section(bsp_runs, tmp_path):
    root, *_ = bsp_runs
    out = build_report([root], tmp_path / "report.html")
    page = out.read_text()
    assert "Runtime variability" in page and "Barrier time" in page
    assert "Calibrated on" in page and "ftq-1" in page
    assert page.count("<img") + page.count('<figure class="fig"') >= 1


def _fake_run(root, kind="other"):  # a kind without described parameters
    return Run.create(root, kind, {"x": 1}, name=f"fake-{kind}").finish()


@pytest.mark.parametrize("extra, where", [
    (["--target-ranks", "0"], "--target-ranks"),
    ([], "--target-ranks"),                      # no targets and nothing to compare
    (["--target-ranks", "2", "--confidence", "1.5"], "--confidence"),
    (["--target-ranks", "2", "--replicas", "0"], "--replicas"),
    (["--target-ranks", "2", "--ranks-per-node", "3"], "--ranks-per-node"),
])
def test_bad_options_exit_2(bsp_runs, capsys, extra, where):
    _, one, _, _ = bsp_runs
    rc = cli.main(["predict", "variability", str(one.path), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("commscope: error: ") and where in err


def test_bad_runs_exit_2(bsp_runs, capsys, tmp_path):
    root, one, two, other = bsp_runs
    # below the calibration scale
    assert cli.main(["predict", "variability", str(two.path), "--target-ranks", "1"]) == 2
    assert "below the calibration scale" in capsys.readouterr().err
    # a run of another kind
    fake = _fake_run(tmp_path)
    assert cli.main(["predict", "variability", str(fake.path), "--target-ranks", "2"]) == 2
    err = capsys.readouterr().err
    assert "meta.json: kind" in err and "bsp" in err
    # an explicitly named run of another experiment
    assert cli.main(["predict", "variability", str(one.path), "--compare", str(other.path)]) == 2
    err = capsys.readouterr().err
    assert "fwq-2/meta.json: parameters.workload" in err and "not the same experiment" in err
    # no such directory
    assert cli.main(["predict", "variability", str(tmp_path / "nope"), "--target-ranks", "2"]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_huge_replicas_refused_naming_the_limit(bsp_runs, capsys):
    _, one, _, _ = bsp_runs
    rc = cli.main(["predict", "variability", str(one.path), "--target-ranks", "4",
                   "--kind", "nonparametric", "--replicas", str(10**12)])
    err = capsys.readouterr().err
    assert rc == 2 and "--replicas" in err and "1e+12 needs about" in err and "limit" in err


def test_a_bsp_run_made_before_the_dim_rename_is_the_same_experiment(new_run):
    from commscope.predict.variability import experiment_key
    old = new_run("bsp", workload="dgemm", size=256, reps=1)  # --size, as it was called
    new = new_run("bsp", workload="dgemm", dim=256, reps=1)
    assert experiment_key(old) == experiment_key(new) and dict(experiment_key(new))["dim"] == 256
