"""Synthetic traced runs (commscope.profile.synthetic, trace=True): what the generator
writes reads back through the real trace reader, its times are those of a real run
(every receive completes after its send began), and `commscope diagnose` names the
rank planted late, as it is by construction."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module")
def template(default_mpi, tmp_path_factory):
    """A real run's node.<n>.json: the layout the generator lays its files out from."""
    from commscope.cli import main
    from commscope.collect.node_files import node_keys
    from commscope.runs import open_run

    tmp = tmp_path_factory.mktemp("template")
    exe = tmp / "alltoall_small"
    subprocess.run(
        [default_mpi.mpicc, "-O2", str(PROGRAMS / "alltoall_small.c"), "-o", str(exe)], check=True
    )
    runs = tmp / "runs"
    assert main(["profile", "-n", "2", "--runs", str(runs), "--quiet", "--", str(exe)]) == 0
    raw = open_run(sorted(runs.iterdir())[-1]).raw_dir
    return raw / f"node.{node_keys(raw)[0]}.json"


def _traced(tmp_path, template, ranks, late, **kw):
    from commscope.profile.run import convert_run
    from commscope.profile.synthetic import write_run

    path = write_run(
        tmp_path / f"syn{ranks}",
        template,
        ranks=ranks,
        ranks_per_node=kw.pop("ranks_per_node", 4),
        trace=True,
        late=late,
        **kw,
    )
    return convert_run(path)


@pytest.mark.mpi
def test_the_trace_reads_back_whole_and_in_time(template, tmp_path):
    from commscope.collect import completeness
    from commscope.collect.trace import read_trace
    from commscope.profile.export import match_messages
    from commscope.profile.synthetic import PER_ITERATION

    iterations = 20
    run = _traced(tmp_path, template, 8, (3,), iterations=iterations)
    c = completeness.check(run)
    assert not c.damaged and c.counted == 8 * iterations * PER_ITERATION
    trace = read_trace(run.raw_dir)
    ev = trace.events
    assert len(ev) == 8 * iterations * PER_ITERATION
    assert sorted(set(ev["function"])) == ["MPI_Allreduce", "MPI_Irecv", "MPI_Isend", "MPI_Waitall"]
    # ticks become the run's seconds: the last record within each rank's wall time
    wall = run.table("ranks").set_index("rank")["wall_s"]
    assert (ev.groupby("rank")["time_end_s"].max() <= wall + 1e-9).all()
    m = match_messages(trace)
    assert (m["send"] >= 0).all() and (m["recv"] >= 0).all()  # every message has both ends
    assert len(m) == 8 * iterations * 6
    sent = ev["time_begin_s"].to_numpy()[m["send"].to_numpy()]
    done = ev["time_end_s"].to_numpy()[m["recv"].to_numpy()]
    assert (done > sent).all()
    # the planted rank works twice as long between the Allreduce and its first Irecv
    for rank, d in ev.sort_values(["rank", "record"]).groupby("rank"):
        t = d["time_begin_s"].to_numpy().reshape(iterations, PER_ITERATION)
        e = d["time_end_s"].to_numpy().reshape(iterations, PER_ITERATION)
        work = t[1:, 0] - e[:-1, -1]
        assert np.median(work) == pytest.approx(2e-3 if rank == 3 else 1e-3, rel=0.05)
    run_s = ev.groupby("rank")["time_end_s"].max()
    assert np.ptp(run_s.to_numpy()) < 1e-3  # the Allreduce holds every rank together


@pytest.mark.mpi
def test_the_diagnosis_names_the_planted_rank(template, tmp_path):
    from commscope.diagnose.findings import diagnose
    from commscope.profile.api import open as open_profile

    run = _traced(tmp_path, template, 64, (21,), ranks_per_node=16)
    d = diagnose(open_profile(run.path))
    top = d.findings[0]
    assert top.kind in ("load_imbalance", "late_sender"), d.findings
    assert top.culprit_ranks == [21]
    assert top.share_of_runtime > 0.3  # 1 ms of the others' 2 ms an iteration
    assert d.replay["error_pct"] == pytest.approx(0, abs=1)
