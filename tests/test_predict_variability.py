"""commscope predict variability, end to end on real 1-rank and 2-rank bsp runs."""

import json

import numpy as np
import pytest

from commscope import cli
from commscope.bench.bsp import run_bsp
from commscope.predict.variability import COLUMNS, predict_variability, verdict_summary
from commscope.report.build import build_report
from commscope.runs import Run
from machine import on_two_cores

QUIET = dict(echo=False, progress=False)


@pytest.fixture(scope="module")
def bsp_runs(tmp_path_factory, default_mpi):
    """FTQ (1 ms normal spins) at 1 and 2 ranks, plus an FWQ run at 2 ranks."""
    root = tmp_path_factory.mktemp("runs")
    common = dict(intervals=60, mean=1e-3, sd=2e-4, runs_root=root, **QUIET)
    with on_two_cores():  # the runs' topology says 2 cores: 4 ranks oversubscribe (more_runs)
        one = run_bsp("ftq", ranks=1, seed=1, run_name="ftq-1", **common)
        two = run_bsp("ftq", ranks=2, seed=2, run_name="ftq-2", **common)
        other = run_bsp(
            "fwq",
            ranks=2,
            intervals=20,
            mean=10_000,
            seed=3,
            runs_root=root,
            run_name="fwq-2",
            **QUIET,
        )
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
    k1 = predict_variability(
        one, [1], kind="nonparametric", replicas=500, seed=1, statistics=("interval_max_s",)
    )
    assert cal.min() <= k1["ci_low_s"].iloc[0] <= k1["ci_high_s"].iloc[0] <= cal.max()
    # ... and, at k = 1, one run's median maximum predicts the calibration's own (a median
    # of 60 resampled values is a mean of two of them, not always one of the values)
    assert k1["ci_low_s"].iloc[0] <= np.median(cal) <= k1["ci_high_s"].iloc[0]


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
    rc = cli.main(
        [
            "predict",
            "variability",
            str(one.path),
            "--compare",
            str(two.path),
            "--target-ranks",
            "2,4",
            "--replicas",
            "1000",
            "--seed",
            "3",
            "--kind",
            "intranode",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["base_ranks"] == 1 and out["seed"] == 3
    preds = out["predictions"]
    assert {(p["target_ranks"], p["statistic"]) for p in preds} == {
        (2, "interval_max_s"),
        (2, "runtime_s"),
        (4, "interval_max_s"),
        (4, "runtime_s"),
    }
    assert all(p["kind"] == "intranode" and p["method"] == "pwm" for p in preds)
    assert [p["inside"] is None for p in preds if p["target_ranks"] == 4] == [True, True]
    assert all(isinstance(p["inside"], bool) for p in preds if p["target_ranks"] == 2)
    assert len(out["verdicts"]) == 2
    rc = cli.main(
        [
            "predict",
            "variability",
            str(one.path),
            "--compare",
            str(root),
            "--replicas",
            "500",
            "--seed",
            "3",
        ]
    )
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


@pytest.mark.parametrize(
    "extra, where",
    [
        (["--target-ranks", "0"], "--target-ranks"),
        ([], "--target-ranks"),  # no targets and nothing to compare
        (["--target-ranks", "2", "--confidence", "1.5"], "--confidence"),
        (["--target-ranks", "2", "--replicas", "0"], "--replicas"),
        (["--target-ranks", "2", "--ranks-per-node", "3"], "--ranks-per-node"),
    ],
)
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
    rc = cli.main(
        [
            "predict",
            "variability",
            str(one.path),
            "--target-ranks",
            "4",
            "--kind",
            "nonparametric",
            "--replicas",
            str(10**12),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--replicas" in err and "1e+12 needs about" in err and "limit" in err


def test_a_bsp_run_made_before_the_dim_rename_is_the_same_experiment(new_run):
    from commscope.predict.variability import experiment_key

    old = new_run("bsp", workload="dgemm", size=256, reps=1)  # --size, as it was called
    new = new_run("bsp", workload="dgemm", dim=256, reps=1)
    assert experiment_key(old) == experiment_key(new) and dict(experiment_key(new))["dim"] == 256


# --- issue 26 part 3: target-run intervals, repeats, notes ------------------------------


@pytest.fixture(scope="module")
def more_runs(tmp_path_factory, default_mpi, bsp_runs):
    """A repeat of the 1-rank FTQ run and a 4-rank run (oversubscribed on 2 cores, on any
    host: tests/machine.py)."""
    root = tmp_path_factory.mktemp("more")
    common = dict(intervals=60, mean=1e-3, sd=2e-4, runs_root=root, **QUIET)
    with on_two_cores():
        again = run_bsp("ftq", ranks=1, seed=7, run_name="ftq-1b", **common)
        four = run_bsp("ftq", ranks=4, seed=8, run_name="ftq-4", **common)
    return again, four


def _cores(run):
    return run.meta["topology"]["usable_cpus"]


def test_oversubscribed_target_carries_a_note(bsp_runs, more_runs, capsys, tmp_path):
    _, one, two, _ = bsp_runs
    _, four = more_runs
    cores = _cores(one)
    assert cores <= 2 and four.meta["launch"]["oversubscribed"]  # forced: tests/machine.py
    df = predict_variability(one, [2, 4, 2 * cores + 1], compare=[two, four], replicas=300, seed=1)
    for row in df.to_dict("records"):
        over = row["target_ranks"] > cores
        assert row["oversubscribed"] == over
        assert ("target oversubscribed" in row["note"]) == over, row
    at4 = df[df["target_ranks"] == 4]["note"]
    assert at4.str.contains("1 measured run").all() and at4.str.contains("time-slice").all()
    beyond = df[df["target_ranks"] == 2 * cores + 1]["note"]
    assert beyond.str.contains(f"on this machine .{2 * cores + 1} ranks > {cores} cores").all()
    # the table numbers the notes, --json carries them whole
    assert (
        cli.main(
            [
                "predict",
                "variability",
                str(one.path),
                "--compare",
                str(four.path),
                "--replicas",
                "300",
                "--seed",
                "1",
                "--kind",
                "nonparametric",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    ref = next(ln for ln in text.splitlines() if "target oversubscribed" in ln)
    assert ref.startswith("# [") and "notes" in text
    assert (
        cli.main(
            [
                "predict",
                "variability",
                str(one.path),
                "--compare",
                str(four.path),
                "--replicas",
                "300",
                "--seed",
                "1",
                "--json",
            ]
        )
        == 0
    )
    preds = json.loads(capsys.readouterr().out)["predictions"]
    assert all("target oversubscribed" in p["note"] and p["oversubscribed"] for p in preds)
    # and the report says so under the table
    page = build_report([one.path, four.path], tmp_path / "r.html").read_text()
    assert "target oversubscribed" in page


def test_repeats_join_the_calibration(bsp_runs, more_runs, capsys):
    root, one, two, other = bsp_runs
    again, four = more_runs
    alone = predict_variability(one, [2], compare=[two], replicas=500, seed=2)
    assert alone["note"].str.contains("one calibration run").all()
    both = predict_variability(one, [2], compare=[two], repeats=[again], replicas=500, seed=2)
    assert both.attrs["repeats"] == [str(again.path)]
    assert not both["note"].str.contains("one calibration run").any()
    assert (both["interval"] == "run").all() and (both["run_sd_rel"] >= 0).all()
    assert (both["block"] >= 1).all()
    # a repeat must be the same experiment at the same scale
    for bad, field in ((other, "parameters.workload"), (two, "parameters.ranks")):
        rc = cli.main(
            [
                "predict",
                "variability",
                str(one.path),
                "--target-ranks",
                "2",
                "--repeats",
                str(bad.path),
            ]
        )
        err = capsys.readouterr().err
        assert rc == 2 and f"{bad.path.name}/meta.json: {field}" in err


def test_thesis_intervals_are_the_bootstrap_as_printed(bsp_runs):
    from commscope.stats import bootstrap

    _, one, two, _ = bsp_runs
    df = predict_variability(
        one,
        [2],
        compare=[two],
        replicas=800,
        seed=9,
        interval="thesis",
        kind="nonparametric",
        statistics=("interval_max_s",),
    )
    ref = bootstrap.bootstrap_nonparametric(
        one.table("maxima")["max_interval_s"], 1, 2.0, replicas=800, seed=9
    )
    assert df["median_s"].iloc[0] == ref.median_s and df["ci_low_s"].iloc[0] == ref.ci_low_s
    # the run interval is for the run's median maximum: far narrower than one interval's
    run = predict_variability(
        one,
        [2],
        compare=[two],
        replicas=800,
        seed=9,
        kind="nonparametric",
        statistics=("interval_max_s",),
    )
    width = lambda d: d["ci_high_s"].iloc[0] - d["ci_low_s"].iloc[0]  # noqa: E731
    assert width(run) < width(df) / 2


def test_rejected_assumptions_are_named():
    from commscope.predict.variability import _assumption_notes

    rng = np.random.default_rng(0)
    e = rng.standard_normal(400)
    ar = np.empty(400)
    ar[0] = e[0]
    for t in range(1, 400):
        ar[t] = 0.7 * ar[t - 1] + e[t]
    ar = 1.0 + 0.01 * ar
    notes = _assumption_notes("intranode", [[ar]], "thesis", 1, 1, "pwm")
    auto = [n for n in notes if "autocorrelated" in n]
    assert len(auto) == 1 and "too narrow" in auto[0]
    assert 0.6 < float(auto[0].split("lag-1 r = ")[1].split(",")[0]) < 0.8
    bimodal = np.r_[rng.normal(1.0, 0.01, 200), rng.normal(2.0, 0.01, 200)]
    notes = _assumption_notes("intranode", [[bimodal[rng.permutation(400)]]], "run", 1, 3, "pwm")
    assert notes and "GEV fit rejected" in notes[0]
    notes = _assumption_notes("nonparametric", [[1.0 + rng.random(20)]], "run", 1, 1, "pwm")
    assert "only 20 calibration intervals" in notes[0] and "one calibration run" in notes[-1]


def test_ranks_that_slow_each_other_get_a_note(monkeypatch):
    """The bootstraps assume ranks do not slow each other: a measured target whose
    intervals are longer than every calibration run's, beyond their spread, says so."""
    from commscope.predict import variability as v

    medians = {"c1": 2.00e-3, "c2": 2.02e-3, "c3": 2.01e-3, "t_slow": 2.10e-3, "t_same": 2.015e-3}
    monkeypatch.setattr(v, "_median_interval_s", lambda run: medians[run])
    note = v._slowdown_note(["c1", "c2", "c3"], ["t_slow"], 2)
    assert (
        "ranks at 2 slow each other" in note and "4.5% longer" in note
    )  # 2.10 / 2.01 (the calibration median)
    assert v._slowdown_note(["c1", "c2", "c3"], ["t_same"], 2) == ""
    assert v._slowdown_note(["c1", "c2", "c3"], [], 2) == ""
    # within the calibration runs' own spread: no note
    medians.update(c3=2.2e-3)
    assert v._slowdown_note(["c1", "c2", "c3"], ["t_slow"], 2) == ""
