"""The partitioned model's terms (issue 26 part 1): a real 2-rank calibration run, its fit
into the machine model, the calibrated prediction, provenance and missing-term refusals."""

import json

import pandas as pd
import pytest

from commscope.bench.partitioned import run_partitioned
from commscope.bench.pingpong import run_pingpong
from commscope.cli import main
from commscope.errors import InputError
from commscope.machine_fit import fit_runs
from commscope.models.machine_model import load_machine_model, save_machine_model
from commscope.models.partitioned_terms import BENCHMARK, fit_terms
from commscope.predict.partitioned import accuracy, comparison_table, predict_partitioned

pytestmark = pytest.mark.mpi

QUIET = dict(echo=False, progress=False, timeout=180)
SIZES = [65536, 262144, 1048576]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    pp = run_pingpong(
        min_size=1,
        max_size=1 << 20,
        iters=30,
        warmup=3,
        large_iters=5,
        large_warmup=1,
        runs_root=root,
        **QUIET,
    )
    cal = run_partitioned(
        threads=2,
        compute_s=0.004,
        sizes=SIZES,
        runs_per_size=3,
        calibrate=True,
        runs_root=root,
        run_name="cal",
        **QUIET,
    )
    target = run_partitioned(
        threads=2,
        compute_s=0.004,
        variability=0.4,
        sizes=SIZES,
        runs_per_size=3,
        seed=3,
        runs_root=root,
        run_name="target",
        **QUIET,
    )
    path = root / "machine-model.json"
    save_machine_model(fit_runs([pp.path, cal.path, target.path]), path)
    return dict(pp=pp, cal=cal, target=target, model=path, root=root)


def test_calibration_records_each_partitions_pready_and_arrival(runs):
    cal = runs["cal"]
    assert cal.meta["parameters"]["calibration"] is True
    assert cal.meta["parameters"]["dist"] == "stagger"
    comp = cal.table("compute")
    part = comp[comp["method"] == "partitioned"]
    assert (part["call_s"] > 0).all() and (part["arrived_s"] > 0).all()
    # stagger: thread 0 at compute - sigma, thread 1 at compute + sigma (sigma = compute / 2)
    req = part.groupby("thread")["requested_s"].first()
    assert req[0] == pytest.approx(0.002) and req[1] == pytest.approx(0.006)
    # a partition cannot arrive before its thread made it ready
    assert (part["arrived_s"] >= part["actual_s"]).all()


def test_terms_fitted_into_the_machine_model_with_their_source_runs(runs):
    mm = load_machine_model(runs["model"])
    terms = mm.partitioned
    assert set(terms.terms) == {"partition_s", "single_s", "pready_s", "progress"}
    assert sorted(terms.terms["single_s"].by_size) == SIZES
    assert sorted(terms.terms["partition_s"].by_size) == [s // 2 for s in SIZES]
    assert all(v > 0 for v in terms.terms["partition_s"].by_size.values())
    assert 0 < terms.terms["pready_s"].value < 0.004
    assert 0 <= terms.terms["progress"].value <= 1
    assert terms.terms["single_s"].flags == [] and terms.terms["partition_s"].flags == []
    assert terms.conditions["threads"] == 2 and terms.conditions["compute_s"] == 0.004
    sources = mm.machine["term_sources"]
    assert [s["path"] for s in sources["partitioned"]] == [str(runs["cal"].path)]
    assert [s["path"] for s in sources["postal/max-rate"]] == [str(runs["pp"].path)]
    # the ordinary partitioned run was given to fit too, and used for nothing
    assert not any(str(runs["target"].path) == s["path"] for ids in sources.values() for s in ids)


def test_too_few_sizes_are_flagged(runs):
    cal = runs["cal"]
    samples, comp = cal.table("samples"), cal.table("compute")
    keep = [SIZES[0], SIZES[-1]]
    terms = fit_terms(
        samples[samples["size_bytes"].isin(keep)], comp[comp["size_bytes"].isin(keep)], {}, []
    )
    assert any("too few points" in f for f in terms.terms["single_s"].flags)
    assert any("too few points" in f for f in terms.terms["partition_s"].flags)


def test_calibrated_prediction_has_ratio_and_verdict(runs):
    pred = predict_partitioned(runs["target"], machine_model=runs["model"], replicas=200)
    assert pred.attrs["model"] == "calibrated"
    cal = pred[pred["source"] == "calibrated"]
    assert set(cal["method"]) == {"partitioned", "single"} and (cal["elapsed_s"] > 0).all()
    table = comparison_table(pred)
    assert (table["model"] == "calibrated").all()
    for col in ("ratio_partitioned", "ratio_single"):
        assert (table[col] > 0).all()
    # a verdict per size, or none where the measured medians or the model's times tie
    # (within the noise of the runs, or of the calibration behind the model)
    assert table["model_verdict"].isin(["early-bird", "single", "tie"]).all()
    ties = (table["measured_verdict"] == "tie") | (table["model_verdict"] == "tie")
    assert table.loc[~ties, "verdict_agrees"].isin([True, False]).all()
    assert table.loc[ties, "verdict_agrees"].isna().all()
    # the calibrated times carry the calibration's run-to-run standard error
    se = pred.loc[pred["source"] == "calibrated", "elapsed_se_s"]
    assert se.notna().all() and (se >= 0).all()
    acc = accuracy(table)
    assert acc["sizes"] == 2  # 256 KiB and 1 MiB


def test_a_calibration_lead_far_from_the_runs_is_noted(runs):
    # the calibration staggers its threads by compute_s (4 ms); the target's two normal
    # draws (sd 0.64 ms) are about 0.6 ms apart
    terms = load_machine_model(runs["model"]).partitioned
    assert terms.conditions["lead_s"] == pytest.approx(0.004, rel=0.25)
    notes = predict_partitioned(runs["target"], machine_model=runs["model"], replicas=200).attrs[
        "notes"
    ]
    assert any("before the last" in n and "below 1 MiB" in n for n in notes)


def test_refuses_to_predict_a_run_the_model_was_fitted_from(runs, tmp_path, capsys):
    with pytest.raises(InputError, match="must not be checked against the data"):
        predict_partitioned(runs["cal"], machine_model=runs["model"])
    # the same when the machine model names the run (moved since) among any term's sources
    data = json.loads(runs["model"].read_text())
    data["machine"]["term_sources"]["gamma"] = [
        {
            "path": f"/elsewhere/{runs['target'].path.name}",
            "kind": "partitioned",
            "start_time": runs["target"].meta["start_time"],
        }
    ]
    bad = tmp_path / "mm.json"
    bad.write_text(json.dumps(data))
    assert (
        main(["predict", "partitioned", str(runs["target"].path), "--machine-model", str(bad)]) == 2
    )
    err = capsys.readouterr().err
    assert "gamma term was fitted from" in err and str(runs["target"].path) in err


@pytest.mark.parametrize("drop", ["all", "progress"])
def test_missing_term_names_it_and_its_benchmark(runs, tmp_path, capsys, drop):
    data = json.loads(runs["model"].read_text())
    if drop == "all":
        del data["partitioned"]  # a machine model fitted from ping-pong alone
    else:
        del data["partitioned"]["terms"]["progress"]
    path = tmp_path / "mm.json"
    path.write_text(json.dumps(data))
    assert (
        main(
            [
                "predict",
                "partitioned",
                str(runs["target"].path),
                "--machine-model",
                str(path),
                "--replicas",
                "100",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert BENCHMARK in err and str(path) in err
    assert ("'progress'" if drop == "progress" else "'partition_s'") in err
    # the thesis's model, asked for by name, needs no calibration
    assert (
        main(
            [
                "predict",
                "partitioned",
                str(runs["target"].path),
                "--machine-model",
                str(path),
                "--model",
                "postal",
                "--replicas",
                "100",
            ]
        )
        == 0
    )


def test_machine_model_round_trip_keeps_the_terms(runs, tmp_path):
    mm = load_machine_model(runs["model"])
    again = tmp_path / "again.json"
    save_machine_model(mm, again)
    assert load_machine_model(again).partitioned.to_dict() == mm.partitioned.to_dict()
    # each per-size median keeps its relative standard error (3 runs per size)
    for name in ("partition_s", "single_s"):
        t = mm.partitioned.terms[name]
        assert set(t.rel_se_by_size) == set(t.by_size)
        assert all(v >= 0 for v in t.rel_se_by_size.values())


def test_a_malformed_relative_error_names_its_field(runs, tmp_path):
    data = json.loads(runs["model"].read_text())
    size = next(iter(data["partitioned"]["terms"]["partition_s"]["rel_se_by_size"]))
    data["partitioned"]["terms"]["partition_s"]["rel_se_by_size"][size] = -0.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match="rel_se_by_size"):
        load_machine_model(bad)


def test_a_run_started_in_the_same_second_is_not_a_source_run(runs):
    """Start times have one-second steps: the calibration and the predicted run of a
    script often share one, and must still be told apart."""
    from types import SimpleNamespace
    from commscope.models.machine_model import terms_fitted_from

    cal, target = runs["cal"], runs["target"]
    same_second = {
        "path": str(cal.path),
        "kind": target.kind,
        "start_time": target.meta["start_time"],
    }
    mm = SimpleNamespace(machine={"term_sources": {"partitioned": [same_second]}})
    assert terms_fitted_from(target, mm) == []
    moved = dict(same_second, path=f"/elsewhere/{target.path.name}")
    mm = SimpleNamespace(machine={"term_sources": {"partitioned": [moved]}})
    assert terms_fitted_from(target, mm) == ["partitioned"]


def _calibration(lead, flights, calibration, runs=3):
    """Synthetic tables of a 2-thread calibration whose threads are ``lead`` apart:
    ``flights`` {partition bytes: the last partition's flight}."""
    compute, samples = [], []
    for p_bytes, flight in flights.items():
        for run in range(runs):
            t0 = 1.0 + run
            compute += [
                dict(
                    method="partitioned",
                    size_bytes=2 * p_bytes,
                    run=run,
                    thread=0,
                    actual_s=t0,
                    call_s=2e-6,
                    arrived_s=t0 + min(flight, lead) / 2,
                    calibration=calibration,
                ),
                dict(
                    method="partitioned",
                    size_bytes=2 * p_bytes,
                    run=run,
                    thread=1,
                    actual_s=t0 + lead,
                    call_s=2e-6,
                    arrived_s=t0 + lead + flight * (1 + 0.01 * run),
                    calibration=calibration,
                ),
            ]
            samples.append(
                dict(
                    method="single",
                    size_bytes=2 * p_bytes,
                    run=run,
                    elapsed_s=2 * flight,
                    mismatches=0,
                )
            )
    return pd.DataFrame(compute), pd.DataFrame(samples)


def test_each_partition_size_takes_the_shortest_lead_clear_of_the_one_before():
    # 36 KiB partitions: 100 us after a 20 ms idle lead, 30 us after 1 ms; 4 MiB ones
    # take 1.5 ms, and behind a 1 ms lead the last one also waits for the first (2.5 ms)
    long_c, long_s = _calibration(20e-3, {36864: 100e-6, 4 << 20: 1.5e-3}, 0)
    short_c, short_s = _calibration(1e-3, {36864: 30e-6, 4 << 20: 2.5e-3}, 1)
    terms = fit_terms(pd.concat([long_s, short_s]), pd.concat([long_c, short_c]), {}, [])
    part = terms.terms["partition_s"].by_size
    assert part[36864] == pytest.approx(30.3e-6)  # the 1 ms lead: as warm as a run's
    assert part[4 << 20] == pytest.approx(1.515e-3)  # the 20 ms lead: nothing in its way
    # runs of different calibrations are different sends, not one of four partitions
    assert set(part) == {36864, 4 << 20}
