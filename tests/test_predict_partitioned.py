"""commscope predict partitioned on a real (small) partitioned run, and its report section."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from commscope.paths import DATA_DIR
from commscope.bench.partitioned import run_partitioned
from commscope.bench.pingpong import run_pingpong
from commscope.cli import main
from commscope.models.partitioned import ConstantLink
from commscope.predict.partitioned import (
    comparison_table,
    measured_rows,
    peak,
    predict_partitioned,
    range_text,
    win_ranges,
)
from commscope.machine_fit import fit_runs
from commscope.report.build import build_report
from commscope.runs import open_run
from commscope.stats.evt import emma_probability

QUIET = dict(echo=False, progress=False, timeout=180)
OSU = str(DATA_DIR / "osu_intranode_lassen_quartz.csv")
SIZES = [65536, 1048576, 4194304]


@pytest.fixture(scope="module")
def prun(tmp_path_factory, default_mpi):  # a real run: its users get the mpi marker
    root = tmp_path_factory.mktemp("runs")
    return run_partitioned(
        threads=2,
        compute_s=0.004,
        variability=0.4,
        sizes=SIZES,
        runs_per_size=3,
        seed=5,
        runs_root=root,
        **QUIET,
    )


@pytest.fixture(scope="module")
def machine_model_path(tmp_path_factory, default_mpi):
    root = tmp_path_factory.mktemp("pp")
    run = run_pingpong(
        min_size=1,
        max_size=4 << 20,
        iters=50,
        warmup=5,
        large_iters=10,
        large_warmup=2,
        runs_root=root,
        **QUIET,
    )
    from commscope.models.machine_model import save_machine_model

    path = root / "machine-model.json"
    save_machine_model(fit_runs([run.path]), path)
    return path


def test_tidy_rows_per_size_method_source(prun):
    df = predict_partitioned(prun, link=ConstantLink(5e-6, 1e10), replicas=500)
    keys = set(zip(df["method"], df["source"]))
    assert keys == {
        ("partitioned", "measured"),
        ("isend", "measured"),
        ("single", "measured"),
        ("partitioned", "analytic"),
        ("single", "analytic"),
        ("partitioned", "monte-carlo"),
        ("partitioned", "monte-carlo-measured"),
    }
    assert len(df) == len(SIZES) * len(keys)
    assert sorted(df["size_bytes"].unique()) == SIZES
    # measured rows are the run's own medians
    s = prun.table("samples")
    m = df[df["source"] == "measured"].set_index(["size_bytes", "method"])["elapsed_s"]
    np.testing.assert_allclose(
        m.sort_index(), s.groupby(["size_bytes", "method"])["elapsed_s"].median().sort_index()
    )
    assert (df.loc[df["source"] == "measured", "runs"] == 3).all()


def test_a_preempted_run_does_not_move_the_measured_time(prun, tmp_path):
    # one run 3 ms late (an OS time slice on a shared core) moves a 3-run mean by 1 ms,
    # the median only to the slower of the other two
    copy = tmp_path / "preempted"
    shutil.copytree(prun.path, copy)
    s = pd.read_parquet(copy / "samples.parquet")
    cell = (s["size_bytes"] == SIZES[0]) & (s["method"] == "partitioned")
    others = s.loc[cell & (s["run"] != 0), "elapsed_s"]
    # late past both others (a measured run may itself be a few ms slow on a busy machine)
    s.loc[cell & (s["run"] == 0), "elapsed_s"] = others.max() + 3e-3
    s.to_parquet(copy / "samples.parquet")
    rows = measured_rows(open_run(copy)).set_index(["size_bytes", "method"])
    assert rows.loc[(SIZES[0], "partitioned"), "elapsed_s"] == pytest.approx(others.max())
    assert np.isfinite(rows["elapsed_se_s"]).all() and (rows["elapsed_se_s"] >= 0).all()


def test_model_rows_use_the_runs_parameters(prun):
    """Algorithm 1 by hand with the run's threads, compute, sigma and sizes."""
    lat, bw = 5e-6, 1e10
    df = predict_partitioned(prun, link=ConstantLink(lat, bw), replicas=200)
    mu, sigma, n = 0.004, 0.004 * 0.4**2, 2
    t_last = stats.norm(mu, sigma).ppf(emma_probability(n))
    overlap = 2 * (t_last - mu)
    for size in SIZES:
        t_msg = lat + size / n / bw
        m = min(overlap / t_msg, n - 1)
        row = df[(df["size_bytes"] == size) & (df["source"] == "analytic")]
        part = row[row["method"] == "partitioned"].iloc[0]
        single = row[row["method"] == "single"].iloc[0]
        assert part["elapsed_s"] == pytest.approx(t_msg * (n - m), rel=1e-9)
        assert single["elapsed_s"] == pytest.approx(lat + size / bw, rel=1e-12)
        assert part["effective_bandwidth_Bps"] == pytest.approx(size / part["elapsed_s"])


def test_machine_model_link_and_locality(prun, machine_model_path):
    df = predict_partitioned(prun, machine_model=machine_model_path, replicas=200, model="postal")
    assert df.attrs["link"] == "machine-model" and df.attrs["locality"] == "intra-socket"
    assert df["elapsed_s"].notna().all() and (df["elapsed_s"] > 0).all()
    from commscope.errors import InputError

    with pytest.raises(InputError, match="inter-node"):
        predict_partitioned(
            prun, machine_model=machine_model_path, locality="inter-node", model="postal"
        )


def test_wins_and_peak_from_a_known_table():
    rows = []
    for size, (mp, ms, ap, as_) in {
        100: (1, 2, 1, 2),
        200: (3, 2, 1, 2),
        400: (1, 2, 3, 2),
    }.items():
        rows += [
            dict(
                size_bytes=size,
                method="partitioned",
                source="measured",
                elapsed_s=mp,
                effective_bandwidth_Bps=size / mp,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="measured",
                elapsed_s=ms,
                effective_bandwidth_Bps=size / ms,
            ),
            dict(
                size_bytes=size,
                method="partitioned",
                source="analytic",
                elapsed_s=ap,
                effective_bandwidth_Bps=size / ap,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="analytic",
                elapsed_s=as_,
                effective_bandwidth_Bps=size / as_,
            ),
            dict(
                size_bytes=size,
                method="partitioned",
                source="monte-carlo",
                elapsed_s=ap,
                effective_bandwidth_Bps=size / ap,
            ),
        ]
    t = comparison_table(pd.DataFrame(rows))
    assert list(t["measured_partitioned_beats_single"]) == [True, False, True]
    assert list(t["analytic_beats_single"]) == [True, True, False]
    r = win_ranges(t)
    # 200 B loses: the measured wins are two runs, never one range over the loss
    assert r["measured_partitioned"] == [(100, 100), (400, 400)]
    assert r["analytic"] == [(100, 200)] and r["measured_isend"] == []
    assert range_text(r["measured_partitioned"]) == "100 B, 400 B"
    assert range_text(r["measured_isend"]) == "nowhere"
    pk = peak(t)
    assert pk["size_bytes"] == 400 and pk["measured_Bps"] == 400
    assert pk["measured_over_analytic"] == pytest.approx(400 / (400 / 3))


def test_measured_medians_within_noise_are_a_tie_not_a_verdict():
    # 18.897 ms vs 18.887 ms, each median +- 0.2 ms: no verdict to agree or disagree with
    rows = []
    for size, (mp, ms, sem) in {
        100: (18.897e-3, 18.887e-3, 2e-4),
        200: (10e-3, 20e-3, 2e-4),
        400: (20e-3, 19e-3, 1e-4),
    }.items():
        rows += [
            dict(
                size_bytes=size,
                method="partitioned",
                source="measured",
                elapsed_s=mp,
                elapsed_se_s=sem,
                effective_bandwidth_Bps=size / mp,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="measured",
                elapsed_s=ms,
                elapsed_se_s=sem,
                effective_bandwidth_Bps=size / ms,
            ),
            dict(
                size_bytes=size,
                method="partitioned",
                source="analytic",
                elapsed_s=1e-3,
                effective_bandwidth_Bps=size / 1e-3,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="analytic",
                elapsed_s=2e-3,
                effective_bandwidth_Bps=size / 2e-3,
            ),
        ]
    t = comparison_table(pd.DataFrame(rows))
    assert list(t["measured_verdict"]) == ["tie", "early-bird", "single"]
    assert list(t["verdict_agrees"]) == [None, True, False]  # the model says early-bird


def test_a_model_margin_within_its_calibrations_noise_is_no_verdict():
    # measured: early-bird clearly; the calibrated model: 10.0 vs 10.4 ms, each +- 0.3 ms
    # from its calibration runs (a tie), then 10.0 vs 14.0 ms (a verdict)
    rows = []
    for size, ms in {100: 10.4e-3, 200: 14e-3}.items():
        rows += [
            dict(
                size_bytes=size,
                method="partitioned",
                source="measured",
                elapsed_s=5e-3,
                elapsed_se_s=1e-4,
                effective_bandwidth_Bps=size / 5e-3,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="measured",
                elapsed_s=9e-3,
                elapsed_se_s=1e-4,
                effective_bandwidth_Bps=size / 9e-3,
            ),
            dict(
                size_bytes=size,
                method="partitioned",
                source="calibrated",
                elapsed_s=10e-3,
                elapsed_se_s=3e-4,
                effective_bandwidth_Bps=size / 10e-3,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="calibrated",
                elapsed_s=ms,
                elapsed_se_s=3e-4,
                effective_bandwidth_Bps=size / ms,
            ),
            dict(
                size_bytes=size,
                method="partitioned",
                source="analytic",
                elapsed_s=1e-3,
                effective_bandwidth_Bps=size / 1e-3,
            ),
            dict(
                size_bytes=size,
                method="single",
                source="analytic",
                elapsed_s=2e-3,
                effective_bandwidth_Bps=size / 2e-3,
            ),
        ]
    t = comparison_table(pd.DataFrame(rows))
    assert list(t["model_verdict"]) == ["tie", "early-bird"]
    assert list(t["measured_verdict"]) == ["early-bird", "early-bird"]
    assert list(t["verdict_agrees"]) == [None, True]


def test_cli_json_with_osu_table(prun, capsys):
    assert (
        main(
            [
                "predict",
                "partitioned",
                str(prun.path),
                "--osu",
                OSU,
                "--machine",
                "quartz",
                "--replicas",
                "200",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["machine"] == "quartz" and out["parameters"]["threads"] == 2
    assert len(out["comparison"]) == len(SIZES)
    assert set(out["beats_single"]) == {
        "measured_partitioned",
        "measured_isend",
        "analytic",
        "mc",
        "model",
    }
    assert out["peak"]["partitioned"]["size_bytes"] in SIZES


def test_cli_table_with_machine_model(prun, machine_model_path, capsys):
    assert (
        main(
            [
                "predict",
                "partitioned",
                str(prun.path),
                "--machine-model",
                str(machine_model_path),
                "--model",
                "postal",
                "--replicas",
                "200",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "effective bandwidth" in text and "model, Algorithm 1" in text
    assert "measured partitioned peak" in text


def test_the_saving_follows_this_mpis_progress_probe(prun, machine_model_path, tmp_path, capsys):
    """The run's receiver polls, so partitions that move only inside MPI calls move; a
    probe that saw no early partition even then leaves no saving, and says why."""
    from commscope.models import progress as pg
    from commscope.models.machine_model import load_machine_model, save_machine_model
    from commscope.models.progress import library_of
    from progress_models import progress_model

    lib = library_of(prun)
    mm = load_machine_model(machine_model_path)
    regimes = {}
    for polling in (1.0, 0.0):
        probed = progress_model(
            {
                (1 << 20, "early-pready", "blocked", r): o
                for r, o in (("polling", polling), ("idle", 0.0))
            },
            mpi_library=lib,
        )
        mm.progress = probed.progress
        t = comparison_table(
            predict_partitioned(prun, machine_model=mm, model="postal", replicas=100)
        )
        assert (t["model_saving_s"] == t["model_single_s"] - t["model_partitioned_s"]).all()
        regimes[polling] = t
    moves = regimes[1.0]
    assert set(moves["progress"]) == {pg.INSIDE_MPI}
    assert np.allclose(moves["saving_s"], moves["model_saving_s"])
    assert (regimes[0.0]["saving_s"] == 0).all()
    assert set(regimes[0.0]["progress"]) == {pg.WHOLE_BUFFER}
    path = tmp_path / "probed.json"
    save_machine_model(mm, path)
    argv = ["predict", "partitioned", str(prun.path), "--machine-model", str(path)]
    assert main([*argv, "--model", "postal", "--replicas", "100"]) == 0
    text = capsys.readouterr().out
    assert "this MPI's progress allows (blocked threads, receiver polling)" in text
    assert "whole buffer after the last Pready: no saving" in text
    # a machine model without a probe: the model's saving, on the assumption, said
    mm.progress = None
    t = comparison_table(predict_partitioned(prun, machine_model=mm, model="postal", replicas=100))
    assert np.allclose(t["saving_s"], t["model_saving_s"])
    assert t["progress_note"].str.contains("commscope bench progress").all()


def test_cli_bad_inputs_exit_2(prun, machine_model_path, tmp_path, capsys):
    run = str(prun.path)
    bad = [
        [run],  # no link
        [run, "--machine-model", str(machine_model_path), "--osu", OSU],  # two links
        [run, "--osu", OSU],  # two machines, none chosen
        [run, "--osu", OSU, "--machine", "nosuch"],
        [run, "--machine-model", str(tmp_path / "missing.json")],
        [str(tmp_path), "--osu", OSU, "--machine", "quartz"],  # not a run directory
        [run, "--osu", OSU, "--machine", "quartz", "--replicas", "0"],
        [run, "--osu", OSU, "--machine", "quartz", "--t-wait", "-1"],
    ]
    for argv in bad:
        assert main(["predict", "partitioned", *argv]) == 2, argv
        assert "commscope: error:" in capsys.readouterr().err


def test_refuses_runs_with_corrupted_data(prun, tmp_path):
    """A run whose receiver saw wrong bytes is not a measurement to model."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(prun.path, copy)
    s = pd.read_parquet(copy / "samples.parquet")
    s.loc[0, "mismatches"] = 3
    s.to_parquet(copy / "samples.parquet", index=False)
    from commscope.errors import InputError

    with pytest.raises(InputError, match="mismatches"):
        predict_partitioned(open_run(copy), link=ConstantLink(1e-6, 1e10))


@pytest.mark.slow  # builds a whole report
def test_report_section(prun, machine_model_path, tmp_path):
    from commscope.models.machine_model import load_machine_model

    out = build_report(
        [prun.path], tmp_path / "with.html", machine_model=load_machine_model(machine_model_path)
    )
    page = out.read_text()
    assert "Partitioned communication" in page and (
        'aria-label="partitioned ' in page or 'alt="partitioned ' in page
    )
    assert "Algorithm 1" in page and "Early-bird send beats the single send" in page
    bare = build_report([prun.path], tmp_path / "bare.html").read_text()
    assert "measured only" in bare and (
        'aria-label="partitioned ' in bare or 'alt="partitioned ' in bare
    )


def test_huge_replicas_refused_naming_the_limit(prun, capsys):
    assert (
        main(
            [
                "predict",
                "partitioned",
                str(prun.path),
                "--osu",
                OSU,
                "--machine",
                "quartz",
                "--replicas",
                str(10**11),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--replicas" in err and "bytes per replica and thread" in err and "limit" in err


def test_summary_line_names_each_compute_kind(prun, tmp_path):
    """The report's headline on early-bird sends says under which compute kind they pay
    off: each measured run's own, and for a kind no run measured the progress probe's."""
    from commscope.report.sections.summary import _partitioned_rows
    from commscope.models.progress import library_of
    from progress_models import progress_model

    lib = library_of(prun)
    # busy threads: no early partition arrives even with the receiver polling
    probed = progress_model(
        {
            (s, "early-pready", "busy", r): 0.0
            for s in (1 << 15, 1 << 21)
            for r in ("polling", "idle")
        },
        mpi_library=lib,
    )
    rows = _partitioned_rows([prun], probed)
    assert rows[0].what.endswith("blocked threads (sleep)")
    head = rows[-1].headline
    assert head.startswith("early-bird partitioned sends ") and "when the threads block" in head
    assert head.endswith(
        ", not with busy threads (the progress probe: whole buffer after the last Pready)"
    )
    assert _partitioned_rows([prun], None)[-1].headline.endswith("when the threads block")
    busy = run_partitioned(
        threads=2,
        compute_s=0.004,
        variability=0.4,
        sizes=SIZES[:1],
        runs_per_size=2,
        compute_mode="spin",
        runs_root=tmp_path,
        **QUIET,
    )
    rows = _partitioned_rows([prun, busy], probed)
    assert rows[1].what.endswith("busy threads (spin)")
    assert "with busy threads" in rows[-1].headline and "progress probe" not in rows[-1].headline
