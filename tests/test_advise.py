"""The early-bird advisor (commscope advise) on real OMPT-timed runs."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from commscope.bench.partitioned import run_partitioned
from commscope.bench.threads import run_threads
from commscope.cli import main as cli_main
from commscope.models import partitioned as pm
from commscope.models.machine_model import load_machine_model
from commscope.predict import earlybird as eb
from needs import need_ompt_runtime, needs

QUIET = dict(echo=False, progress=False, timeout=180)
PROGRAMS = Path(__file__).resolve().parent / "programs"


@pytest.fixture(scope="module")
def partitioned_run(tmp_path_factory, default_mpi):
    need_ompt_runtime()
    return run_partitioned(
        threads=2,
        compute_s=0.004,
        sigma_s=1e-3,
        sizes=[1 << 20, 4 << 20],
        runs_per_size=6,
        methods=["partitioned", "single"],
        ompt=True,
        runs_root=tmp_path_factory.mktemp("runs"),
        **QUIET,
    )


def test_measured_arrival_vectors_are_resampled_whole():
    rows = np.array([[1.0, 2.0], [10.0, 20.0]])
    draws = pm._draw_thread_times(rows, 500, 2, np.random.default_rng(0))
    assert {tuple(d) for d in draws} == {(1.0, 2.0), (10.0, 20.0)}
    # A partition is sent when its thread arrives: with ready times 0 and 1 ms and a
    # 0.4 ms message, the first is done before the last thread, so elapsed = one message.
    link = pm.ConstantLink(0.0, 1e9)
    mc = pm.simulate_partitioned(link, 2, [8e5], np.array([[0.0, 1e-3]]), replicas=10)
    assert mc["mc_elapsed_s"].iloc[0] == pytest.approx(4e-4)


@pytest.mark.mpi
def test_advise_ranks_regions_of_bench_partitioned(partitioned_run, capsys):
    assert cli_main(["advise", str(partitioned_run.path), "--size", "4MiB", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    regions = d["regions"]
    savings = [r["saving_mc_s"] for r in regions]
    assert savings == sorted(savings, reverse=True)
    main = next(r for r in regions if "#" not in r["region"])
    assert main["region"].startswith("partitioned.c:")
    assert main["instances"] == 2 * 2 * 7  # sizes x methods x (runs + warm-up)
    assert main["threads"] == 2 and main["bytes_per_iteration"] == 4 << 20
    # sigma 1 ms: the threads' arrivals spread by about a millisecond
    assert 2e-4 < main["spread_s"] < 5e-3
    link = pm.MachineModelLink(load_machine_model("bluewaters"), d["link"]["locality"])
    single = pm.model_single_send(link, [4 << 20])["single_elapsed_s"].iloc[0]
    assert main["single_s"] == pytest.approx(single)
    # a partition of 2 MiB takes longer than the spread: at most one message is saved
    assert 0 < main["saving_mc_s"] <= single / 2 + 1e-9
    assert main["worth_changing"] and "worth trying" in main["verdict"]
    assert "worth changing; best: partitioned.c:" in d["conclusion"]


def _probed_like(run, early_pready_polling):
    """A machine model whose progress probe of the run's own MPI saw the early partitions
    (2 MiB, busy threads) arrive before the last MPI_Pready with this share while the
    receiver polled, and none while it computed."""
    from commscope.models.progress import library_of
    from progress_models import progress_model

    lib = library_of(run)
    return progress_model(
        {
            (2 << 20, "early-pready", "busy", "polling"): early_pready_polling,
            (2 << 20, "early-pready", "busy", "idle"): 0.0,
            (2 << 20, "partitioned", "busy", "polling"): 1.0,
        },
        mpi_library=lib,
    )


@pytest.mark.mpi
def test_advise_follows_the_progress_probe(partitioned_run, tmp_path, capsys):
    from commscope.models.machine_model import save_machine_model

    def advise(model, *extra):
        path = tmp_path / f"mm-{len(list(tmp_path.iterdir()))}.json"
        save_machine_model(model, path)
        argv = ["advise", str(partitioned_run.path), "--size", "4MiB", "--machine-model"]
        assert cli_main([*argv, str(path), *extra, "--json"]) == 0
        regions = json.loads(capsys.readouterr().out)["regions"]
        return next(r for r in regions if "#" not in r["region"])

    # no per-partition path (MPICH): nothing to save, and why
    whole = advise(_probed_like(partitioned_run, 0.0), "--mpi-calls")
    assert whole["saving_mc_s"] > 0 and whole["saving_s"] == 0
    assert whole["progress"] == "whole buffer after the last Pready"
    assert not whole["worth_changing"]
    assert whole["verdict"].startswith("no gain on this MPI: no saving")
    assert "MPIR_CVAR_ASYNC_PROGRESS=1" in whole["verdict"]
    # partitions that move only inside MPI calls (Open MPI): only with the program's calls
    inside = advise(_probed_like(partitioned_run, 1.0))
    assert inside["progress"] == "moves only inside MPI calls" and inside["saving_s"] == 0
    polled = advise(_probed_like(partitioned_run, 1.0), "--mpi-calls")
    assert polled["saving_s"] == pytest.approx(polled["saving_mc_s"])
    assert polled["worth_changing"]
    # the advisor's text names the condition
    assert cli_main(["advise", str(partitioned_run.path), "--size", "4MiB"]) == 0
    assert "assumes each 2 MiB partition moves at its MPI_Pready" in capsys.readouterr().out


@pytest.mark.mpi
def test_advise_says_plainly_when_nothing_is_worth_changing(tmp_path, default_mpi, capsys):
    need_ompt_runtime()
    run = run_threads(
        ranks=1,
        threads=2,
        iterations=20,
        work=5e-4,
        dist="constant",
        compute="sleep",
        ompt=True,
        runs_root=tmp_path,
        **QUIET,
    )
    assert cli_main(["advise", str(run.path), "--size", "64"]) == 0
    out = capsys.readouterr().out
    assert "Nothing worth changing" in out
    t = eb.advise(run, eb.link_for(run)[0])  # counters absent: bytes unknown
    assert t["bytes_source"].str.contains("give --size").all()
    assert not t["worth_changing"].any()


def test_advise_needs_thread_arrivals(tmp_path, capsys):
    from commscope.runs import Run

    run = Run.create(tmp_path, "threads", dict(ranks=1, threads=1, iterations=1, trials=1))
    assert cli_main(["advise", str(run.path)]) == 2
    assert "profile --ompt" in capsys.readouterr().err


@pytest.mark.mpi
@needs(
    shutil.which("lmp") is not None and os.access("/usr/bin/mpicc", os.X_OK),
    "Debian's lammps and Open MPI are not installed: scripts/setup.sh (as root) installs them",
)
def test_profile_threads_and_advise_on_lammps(tmp_path, capsys):
    """A real MPI+OpenMP program not part of commscope: Debian's LAMMPS (built with GCC's
    OpenMP, no OPENMP package; PPPM runs FFTW's threads)."""
    need_ompt_runtime()
    runs = tmp_path / "runs"
    code = cli_main(
        [
            "profile",
            "--mpi",
            "/usr/bin/mpicc",
            "--ompt",
            "--trace",
            "--threads",
            "2",
            "-n",
            "2",
            "--runs",
            str(runs),
            "--quiet",
            "--",
            shutil.which("lmp"),
            "-in",
            str(PROGRAMS / "lammps_pppm.in"),
            "-log",
            "none",
        ]
    )
    assert code == 0
    run_dir = next(runs.iterdir())
    capsys.readouterr()
    assert cli_main(["advise", str(run_dir), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    regions = {r["region"]: r for r in d["regions"]}
    fftw = next(r for name, r in regions.items() if name.startswith("fftw_spawn_loop"))
    assert fftw["instances"] > 100 and fftw["threads"] == 2
    assert fftw["bytes_source"].startswith("trace") and fftw["bytes_per_iteration"] > 0
    assert any(name.startswith("LAMMPS_NS::KSpace::qsum_qsq") for name in regions)


@pytest.mark.mpi
def test_report_has_an_advisor_section(partitioned_run, tmp_path):
    from commscope.report.build import build_report

    out = build_report([partitioned_run.path], tmp_path / "r.html")
    html = Path(out).read_text()
    assert "Early-bird advisor" in html and "partitioned.c:" in html
    assert "bytes sent unknown" in html  # a bench run has no MPI counters


@pytest.mark.mpi
def test_advise_refuses_huge_replicas(partitioned_run, capsys):
    assert (
        cli_main(["advise", str(partitioned_run.path), "--size", "4MiB", "--replicas", str(10**11)])
        == 2
    )
    err = capsys.readouterr().err
    assert "--replicas" in err and "limit" in err
