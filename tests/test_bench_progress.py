"""The progress probe (bench progress): real 2-rank jobs, its table, the machine model's
progress section and the queries of models/progress.py; bad input refused."""

import json
import math

import pytest

from commscope import cli
from commscope.bench.progress import run_progress, verdict_table
from commscope.models import progress as pg
from commscope.models.machine_model import load_machine_model, machine_model_from_dict

from progress_models import progress_model

SIZES = [1 << 10, 1 << 20]  # eager and rendezvous under both wheels


@pytest.fixture(scope="module")
def probe(tmp_path_factory, default_mpi):
    root = tmp_path_factory.mktemp("runs")
    return run_progress(
        sizes=SIZES, reps=3, runs_root=root, echo=False, progress=False, timeout=120
    )


def test_every_size_and_case_has_its_rows_and_a_verdict(probe):
    assert probe.meta["status"] == "complete"
    samples = probe.table("samples")
    assert len(samples) == len(SIZES) * 3 * 2 * 2 * 3  # sizes x cases x senders x receivers x reps
    assert (samples["mismatches"] == 0).all()
    table = verdict_table(probe)
    assert len(table) == len(SIZES) * 3 * 2 * 2
    assert set(table["verdict"]) <= set(pg.VERDICTS)
    measured = table["overlap_fraction"].dropna()
    assert ((measured >= 0) & (measured <= 1)).all()
    assert ((samples["overlap_fraction"].dropna() >= 0) & (samples["overlap_fraction"] <= 1)).all()
    # a polling receiver completes a rendezvous Isend during T on every MPI here (with
    # either sender kind: on a shared 2-core machine one may lose its core)
    big = table[
        (table["size_bytes"] == SIZES[-1])
        & (table["case"] == "isend")
        & (table["receiver"] == "polling")
    ]
    assert big["overlap_fraction"].max() >= pg.MOVES, big


def test_the_command_prints_the_table_and_json(probe, capsys):
    from commscope.bench.progress import show_progress

    show_progress(probe)
    out = capsys.readouterr().out
    assert "overlap_fraction" in out and "early-pready" in out and str(probe.path) in out
    show_progress(probe, json=True)
    data = json.loads(capsys.readouterr().out)
    assert {r["case"] for r in data["verdicts"]} == set(pg.CASES)


def test_fit_writes_the_progress_section_and_the_queries_read_it(probe, tmp_path, default_mpi):
    from commscope.bench.pingpong import run_pingpong

    pp = run_pingpong(
        min_size=1,
        max_size=1 << 16,
        iters=20,
        warmup=2,
        large_iters=10,
        large_warmup=1,
        runs_root=tmp_path,
        echo=False,
        progress=False,
    )
    out = tmp_path / "machine-model.json"
    assert cli.main(["fit", str(pp.path), str(probe.path), "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    (key,) = data["progress"]
    entry = data["progress"][key]
    assert set(entry["sizes"]) == {str(s) for s in SIZES}
    assert entry["source_runs"][0]["kind"] == "progress"
    mm = load_machine_model(out)
    assert pg.entry(mm) is entry or pg.entry(mm) == entry
    o = pg.overlaps(mm, SIZES[-1], "isend", sender="busy", receiver="idle")
    assert o is not None and 0 <= o <= 1
    assert pg.verdict(mm, SIZES[-1], "isend/busy/polling") == "moves at Isend"
    # a size between the measured ones takes the nearest on a log scale
    assert pg.overlaps(mm, 600 << 10, "isend") == pg.overlaps(mm, SIZES[-1], "isend")
    s = pg.summary(mm)
    assert s["size_bytes"] == SIZES[-1]
    assert s["rendezvous_completes_while_receiver_polls"] is not False  # None: a lost core
    assert s["rendezvous_completes_while_receiver_computes"] in (True, False, None)
    assert pg.summary(mm, mpi=default_mpi.name) == s


def test_the_report_summary_answers(probe, tmp_path):
    from commscope.report.build import build_report

    path = build_report([probe.path], tmp_path / "r.html")
    text = path.read_text()
    assert "verdict (overlap) per size and case" in text


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--cases", "isend,bogus"], "unknown value 'bogus'"),
        (["--sizes", "0"], "at least 1"),
        (["--sizes", "1K,1001"], "not a multiple of --partitions"),
        (["--sender", "sleepy"], "unknown value 'sleepy'"),
        (["--partitions", "1"], "at least 2"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(argv, says, tmp_path, capsys):
    assert cli.main(["bench", "progress", *argv, "--runs", str(tmp_path)]) == 2
    assert says in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # no run directory


_model = progress_model


def test_verdicts_and_summary_of_a_whole_buffer_mpi():
    """MPICH-like: every partition ready moves (polling), but none before the last Pready."""
    big = 8 << 20
    mm = _model(
        {
            (big, "isend", "busy", "idle"): 0.0,
            (big, "isend", "blocked", "idle"): 0.1,
            (big, "isend", "busy", "polling"): 1.0,
            (big, "partitioned", "busy", "polling"): 0.95,
            (big, "early-pready", "busy", "polling"): 0.0,
            (big, "early-pready", "busy", "idle"): 0.0,
            (1024, "isend", "busy", "idle"): float("nan"),
        }
    )
    assert pg.verdict(mm, big, "early-pready", "busy", "polling") == pg.WHOLE_BUFFER
    assert pg.verdict(mm, big, "early-pready", "busy", "idle") == pg.INSIDE_MPI
    assert pg.verdict(mm, big, "isend", "busy", "idle") == pg.INSIDE_MPI
    assert pg.overlaps(mm, 1024, "isend") is None  # not supported / not measured
    assert pg.verdict(mm, 1024, "isend") == pg.UNSUPPORTED
    assert pg.overlaps(mm, big, "partitioned", "blocked", "idle") is None  # no such case
    s = pg.summary(mm)
    assert s["rendezvous_completes_while_receiver_computes"] is False
    assert math.isclose(s["rendezvous_overlap_fraction"], 0.1)
    assert s["moves_per_partition"] is False
    assert any("no" in line for line in pg.progress_lines(mm))


def test_queries_without_a_section_and_with_bad_arguments():
    from commscope.models.machine_model import bluewaters_machine_model

    mm = bluewaters_machine_model()
    assert pg.overlaps(mm, 1 << 20, "isend") is None
    assert pg.summary(mm) is None
    with pytest.raises(ValueError, match="unknown case"):
        pg.overlaps(mm, 1 << 20, "rput")
    with pytest.raises(ValueError, match="unknown receiver"):
        pg.verdict(mm, 1 << 20, "isend/busy/asleep")
    with pytest.raises(ValueError, match="positive"):
        pg.overlaps(_model({(1024, "isend", "busy", "idle"): 0.5}), 0, "isend")


def test_a_machine_model_with_an_overlap_outside_0_1_is_refused():
    from commscope.errors import InputError

    mm = _model({(1024, "isend", "busy", "idle"): 0.5})
    data = mm.to_dict()
    (key,) = data["progress"]
    data["progress"][key]["sizes"]["1024"]["cases"]["isend/busy/idle"]["overlap_fraction"] = 1.5
    with pytest.raises(InputError, match="overlap_fraction"):
        machine_model_from_dict(data, source="m.json")
