"""The main job end to end: real runs of every benchmark -> fit -> machine model -> HTML report."""

import json
import re

import pytest

from commscope.cli import main
from commscope.models.machine_model import load_machine_model

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def study(tmp_path_factory, default_mpi):
    out = tmp_path_factory.mktemp("study") / "s"
    assert main(["study", "--quick", "--output", str(out)]) == 0
    return out


def test_study_writes_runs_machine_model_and_report(study, capsys):
    assert sorted(p.name for p in (study / "runs").iterdir()) == [
        "bsp-ftq-1rank",
        "bsp-ftq-2rank",
        "hvpingpong",
        "hvpingpong-heldout",
        "mtmatch",
        "multirate",
        "partitioned",
        "partitioned-busy",
        "partitioned-calibration",
        "partitioned-calibration-short",
        "pingpong-1pair",
        "pingpong-1pair-heldout",
        "pingpong-2pairs",
        "profile-bsp-halo",
        "progress",
        "threads",
    ]
    machine_model = load_machine_model(study / "machine-model.json")
    assert set(machine_model.localities) <= {"intra-socket", "cross-socket"}  # one node
    rdv = machine_model.get("rendezvous", machine_model.localities[0])
    assert rdv.alpha_s >= 0 and 1e8 < rdv.Rb_Bps < 1e12  # shared memory: 0.1 GB/s .. 1 TB/s
    assert rdv.fit.n_samples > 0 and rdv.fit.rel_error_by_size
    # The eager limits the MPI reported via MPI_T travel into the machine model.
    assert any("eager" in k for k in machine_model.mpi_eager_limits)
    html = (study / "report.html").read_text()
    figures = html.count("<img") + html.count('<figure class="fig"')
    assert figures >= 9  # every section's figures, inline
    assert html.count("<svg") >= 1  # line plots as SVG: zoomable, searchable
    for heading in (
        "Summary",
        "Do the models hold here?",
        "Machine model",
        "Point-to-point",
        "HighVolumePingPong",
        "Multithreaded message matching",
        "Partitioned communication",
        "Progress: does data move",
        "Thread arrivals",
        "Runtime variability",
        "Application profile",
        "Matching queues of traced programs",
        "Multirate",
    ):
        assert f"<h2>{heading}" in html, heading
    assert "residuals" in html
    # from HighVolumePingPong; the quick study (300 messages at most) on a loaded machine can
    # fit no quadratic term at all, so only its presence and sign are certain
    assert machine_model.gamma_s is not None and machine_model.gamma_s >= 0
    # the queue-search form chosen for the study's MPI, shown in the HighVolumePingPong section
    qs = machine_model.queue_search
    assert qs is not None and qs.mpi == machine_model.machine["mpi_name"]
    assert set(qs.orders) == {"ordered", "reversed"}
    assert "Queue-search model fitted per MPI" in html
    assert "pingpong-1pair" in html and "MPI_THREAD" in html  # run metadata
    assert "Load imbalance between ranks" in html  # the profiled harness ran with timers
    # call sites of the profiled harness: its halo exchange's MPI_Waitall, in bsp.c
    import pandas as pd

    sites = pd.read_parquet(study / "runs" / "profile-bsp-halo" / "callsites.parquet")
    waits = sites[sites["function"] == "MPI_Waitall"]
    assert len(waits) and (waits["file"].str.endswith("bsp.c")).all()
    assert (waits["caller"] == "halo_exchange").all()
    assert "Top call sites by time and by bytes" in html


def test_models_hold_on_the_study(study, capsys):
    """The fit never saw the held-out ping-pong: the postal rows are predictions of it."""
    assert "pingpong-1pair-heldout" not in json.dumps(
        load_machine_model(study / "machine-model.json").machine
    )
    html = (study / "report.html").read_text()
    # the answer first, the models' validation below the measurements (issue 38)
    assert (
        html.index("<h2>Summary")
        < html.index("<h2>Machine model")
        < html.index("<h2>Do the models hold here?")
    )
    assert main(["model", "holds", str(study), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine_model"].startswith(str(study / "machine-model.json"))
    rows = {r["model"]: r for r in out["rows"]}
    postal = [r for m, r in rows.items() if m.startswith("postal (")]
    assert postal and all(
        r["runs"] == ["pingpong-1pair-heldout"] and "in-sample" not in r["reason"] for r in postal
    )
    assert "oversubscribed, 4 ranks on 2 cores" in rows["max-rate"]["reason"]
    queue = [r for m, r in rows.items() if m.startswith("queue search, ")]
    assert queue and all(
        r["runs"] == ["hvpingpong-heldout"] and "in-sample" not in r["reason"] for r in queue
    )
    assert rows["stencil counts"]["verdict"] == "holds"
    assert {
        "queue search, ordered",
        "queue search, reversed",
        "partitioned",
        "contention",
        "node-aware",
        "variability (nonparametric)",
    } <= set(rows)


def test_refit_and_report_from_cli(study, tmp_path, capsys):
    model_file = tmp_path / "p.json"
    assert main(["fit", str(study / "runs"), "-o", str(model_file)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"(intra|cross)-socket\s+rendezvous", out)
    two_pairs = json.loads((study / "runs" / "pingpong-2pairs" / "meta.json").read_text())
    fitted = load_machine_model(model_file)
    has_rn = any(p.R_N_Bps != float("inf") for p in fitted.params.values())
    # an R_N fitted from a run with more ranks than cores is flagged, not silently trusted
    # (when the 2-pair run shows no injection limit, R_N stays inf and there is nothing to flag)
    assert ("warning: R_N" in out) == (has_rn and bool(two_pairs["launch"]["oversubscribed"]))
    assert json.loads(model_file.read_text())["schema"] == "commscope.machine-model"
    report = tmp_path / "bw.html"
    assert (
        main(["report", str(study / "runs"), "--machine-model", "bluewaters", "-o", str(report)])
        == 0
    )
    assert report.exists()


def test_study_never_overwrites(study, capsys):
    before = (study / "report.html").stat().st_mtime_ns
    assert main(["study", "--quick", "--output", str(study)]) == 2
    assert (study / "report.html").stat().st_mtime_ns == before


@pytest.mark.parametrize(
    "argv, needle", [(["--pairs", "1"], "--pairs"), (["--only", "nonsense"], "--only")]
)
def test_bad_study_options_create_nothing(tmp_path, capsys, argv, needle):
    out = tmp_path / "study"
    assert main(["study", "--quick", "--output", str(out), *argv]) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()
