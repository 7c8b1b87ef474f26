"""The job-wide summary (raw/summary.json, reduced inside the job at MPI_Finalize):
what `profile --summary` prints beyond PER_RANK_ROWS ranks, and its reader on bad input."""

import json
import re

import pytest

from commscope.cli import main
from commscope.errors import InputError
from commscope.profile import summary
from commscope.units import format_seconds

from test_profile import compile_program


@pytest.mark.mpi
def test_summary_beyond_per_rank_rows_prints_the_job_summary(
    capsys, runs_root, tmp_path, default_mpi, monkeypatch
):
    """exact_threads: rank 0 sends 976 messages, rank 1 148 (its header comment)."""
    exe = compile_program(default_mpi, "exact_threads", tmp_path)
    monkeypatch.setattr(summary, "PER_RANK_ROWS", 1)
    assert main(["profile", "--runs", str(runs_root), "-n", "2", "--summary", "--", str(exe)]) == 0
    out = capsys.readouterr().out
    assert "job summary, 2 of 2 ranks" in out
    line = next(ln.split() for ln in out.splitlines() if ln.split()[:1] == ["messages_sent"])
    # name total mean min min_rank max max_rank
    assert line[1:] == ["1124", "562", "148", "1", "976", "0"]
    run_dir = next(runs_root.iterdir())
    job = summary.read_job_summary(run_dir / "raw")
    assert job["functions"]["MPI_Finalize"]["calls"]["total"] == 2
    # and the ranks' wall time, time in MPI (mean over a rank's threads) and MPI %
    from commscope.profile.views import rank_times
    from commscope.runs import open_run

    times = rank_times(open_run(run_dir)).set_index("rank")
    # cells are apart by two spaces or more; a value carries its unit ("7.71 s", "42 %")
    rows = {
        ln.split()[0]: re.split(r"\s{2,}", ln.strip())
        for ln in out.splitlines()
        if ln.split()[:1] in (["wall_s"], ["mpi_time_s"], ["mpi_pct"])
    }
    assert rows["mpi_time_s"][1] == format_seconds(times["mpi_time_s"].sum())
    assert rows["mpi_pct"][1] == "-"  # a share has no total
    assert rows["mpi_pct"][2].endswith(" %")
    assert int(rows["mpi_pct"][6]) == times["mpi_pct"].idxmax()
    assert 0 < times["mpi_pct"].max() < 100
    # without timers: not measured, and the option that adds them
    assert (
        main(
            [
                "profile",
                "--runs",
                str(runs_root),
                "-n",
                "2",
                "--summary",
                "--counters",
                "bytes",
                "--",
                str(exe),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["mpi_time_s"])
    assert line.count("not measured") == 4 and "--counters default" in out


def _write(tmp_path, doc):
    (tmp_path / "summary.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return tmp_path


GOOD = {
    "schema": "commscope.summary",
    "schema_version": 1,
    "ranks": 2,
    "ranks_profiled": 2,
    "counters": {
        "messages_sent": {"total": 3, "mean": 1.5, "min": 1, "min_rank": 1, "max": 2, "max_rank": 0}
    },
    "functions": {
        "MPI_Send": {
            k: {"total": 3, "mean": 1.5, "min": 1, "min_rank": 1, "max": 2, "max_rank": 0}
            for k in ("calls", "bytes", "time_s")
        }
    },
}


def test_job_summary_rows_list_nonzero_counters_and_busiest_functions(tmp_path):
    doc = summary.read_job_summary(_write(tmp_path, GOOD))
    assert [r["name"] for r in summary.job_rows(doc)] == ["messages_sent", "MPI_Send calls"]


def test_job_summary_has_no_total_of_a_watermark(tmp_path):
    hwm = {"total": 9, "mean": 4.5, "min": 4, "min_rank": 1, "max": 5, "max_rank": 0}
    doc = summary.read_job_summary(
        _write(tmp_path, dict(GOOD, counters=dict(GOOD["counters"], outstanding_requests_hwm=hwm)))
    )
    rows = {r["name"]: r for r in summary.job_rows(doc)}
    assert rows["outstanding_requests_hwm"]["total"] is None
    assert rows["outstanding_requests_hwm"]["max"] == 5
    assert rows["messages_sent"]["total"] == 3


def test_no_summary_file_is_none(tmp_path):
    assert summary.read_job_summary(tmp_path) is None


@pytest.mark.parametrize(
    "doc, field",
    [
        ("{not json", None),
        (dict(GOOD, schema="other"), "schema"),
        (dict(GOOD, counters=[]), "counters"),
        (dict(GOOD, counters={"messages_sent": {"total": 1}}), "counters.messages_sent"),
        (
            '{"schema": "commscope.summary", "counters": {"x": {"total": NaN, "mean": 0, "min": 0,'
            ' "min_rank": 0, "max": 0, "max_rank": 0}}, "functions": {}}',
            "counters.x",
        ),
        (dict(GOOD, functions={"MPI_Send": {"calls": None}}), "functions.MPI_Send.calls"),
    ],
)
def test_bad_summary_names_file_and_field(tmp_path, doc, field):
    with pytest.raises(InputError) as err:
        summary.read_job_summary(_write(tmp_path, doc))
    assert err.value.field == field and "summary.json" in str(err.value)
