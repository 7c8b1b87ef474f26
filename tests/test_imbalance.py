"""Load imbalance of Eberius (2020) ch. 4: thread level, hierarchical (eqs. 4.4-4.5) and
the GPU form (eq. 4.3) from nvprof / Nsight Compute exports (tests/data/gpu, worked by hand)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from commscope import mpi as mpimod
from commscope.cli import main as cli_main
from commscope.errors import InputError
from commscope.profile import imbalance as im
from needs import need_ompt_runtime

GPU = Path(__file__).resolve().parent / "data" / "gpu"


def test_thread_efficiency_and_hierarchical_form():
    th = pd.DataFrame(
        {
            "rank": [0, 0, 0, 1, 1, 1],
            "thread": [0, 1, 2, 0, 1, 2],
            "region": "r",
            "instance": 1,
            "compute_time_s": [1.0, 2.0, 3.0, 2.0, 2.0, 2.0],
        }
    )
    per = im.thread_imbalance(th).set_index("rank")
    assert per.loc[0, "efficiency"] == pytest.approx(2 / 3)
    assert per.loc[0, "thread_imbalance_pct"] == pytest.approx(50.0)
    assert per.loc[1, "efficiency"] == 1.0 and per.loc[1, "thread_imbalance_pct"] == 0.0
    loads = pd.DataFrame({"rank": [0, 1], "load_s": [15.0, 10.0]})
    rows, summary = im.hierarchical_imbalance(loads, per.reset_index())
    assert summary["process_imbalance_pct"] == pytest.approx(20.0)  # (15 - 12.5) / 12.5
    assert rows["adjusted_load_s"].tolist() == pytest.approx([10.0, 10.0])
    assert summary["adjusted_imbalance_pct"] == pytest.approx(0.0)
    reg = im.region_process_imbalance(th).iloc[0]
    assert reg["max_load_s"] == 3.0 and reg["process_imbalance_pct"] == pytest.approx(20.0)


def test_gpu_forms_from_nsight_compute_and_nvprof():
    # ncu rank 0: force 3 ms (SM 80 %, 24/32 threads per warp), pack 1 ms (40 %, 32/32),
    # weighted by time: SM 0.7, warp 0.8125, GPU_eff 0.56875; rank 1: 2 ms, 0.9 x 1.
    per, s = im.gpu_imbalance([GPU / "ncu_rank0.csv", GPU / "ncu_rank1.csv"])
    assert per["sm_efficiency"].tolist() == pytest.approx([0.7, 0.9])
    assert per["warp_efficiency"].tolist() == pytest.approx([0.8125, 1.0])
    assert per["time_s"].tolist() == pytest.approx([4e-3, 2e-3])
    assert s["process_imbalance_pct"] == pytest.approx(100 / 3)
    # adjusted 2.275 ms and 1.8 ms: (2.275 - 2.0375) / 2.0375
    assert s["adjusted_imbalance_pct"] == pytest.approx(100 * 0.2375 / 2.0375)
    # nvprof: weighted by invocations (100 force, 300 pack): SM 0.675, warp 0.95
    e = im.gpu_efficiency(GPU / "nvprof_rank0.csv")
    assert (e["sm_efficiency"], e["warp_efficiency"]) == pytest.approx((0.675, 0.95))
    assert e["efficiency"] == pytest.approx(0.64125)
    per, s = im.gpu_imbalance([GPU / "nvprof_rank0.csv", GPU / "ncu_rank1.csv"], [1.0, 1.0])
    assert s["process_imbalance_pct"] == 0.0
    assert per["adjusted_load_s"].tolist() == pytest.approx([0.64125, 0.9])


def test_gpu_files_with_missing_parts_name_file_and_column(tmp_path, capsys):
    assert cli_main(["stats", "imbalance", "--gpu-metrics", str(GPU / "ncu_no_warp.csv")]) == 2
    err = capsys.readouterr().err
    assert "ncu_no_warp.csv" in err and "warp_execution_efficiency" in err
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="Metric Name"):
        im.gpu_efficiency(bad)
    unit = tmp_path / "unit.csv"
    unit.write_text((GPU / "ncu_rank1.csv").read_text().replace("msecond", "fortnight"))
    with pytest.raises(InputError, match="unknown unit"):
        im.gpu_efficiency(unit)
    with pytest.raises(InputError, match="no kernel time"):
        im.gpu_imbalance([GPU / "nvprof_rank0.csv"])


@pytest.mark.mpi
def test_imbalance_of_a_profiled_hybrid_run(tmp_path, default_mpi, capsys):
    need_ompt_runtime()
    prog = mpimod.binary(default_mpi, "threads")
    runs = tmp_path / "runs"
    assert (
        cli_main(
            [
                "profile",
                "--counters",
                "all",
                "--ompt",
                "--threads",
                "2",
                "-n",
                "2",
                "--runs",
                str(runs),
                "--quiet",
                "--",
                str(prog),
                "-i",
                "10",
                "--compute-mode",
                "sleep",
                "--compute",
                "2e-3",
                "--laggard-prob",
                "0.3",
                "--laggard-extra",
                "3e-3",
            ]
        )
        == 0
    )
    run_dir = next(runs.iterdir())
    capsys.readouterr()
    assert cli_main(["stats", "imbalance", str(run_dir), "--by-region", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["process"]["imbalance_pct"] >= 0
    assert len(d["threads"]) == 2
    for r in d["threads"]:
        assert 0 < r["efficiency"] <= 1 and r["threads"] == 2
    h = d["hierarchical"]
    assert h["ranks"] == 2 and len(h["per_rank"]) == 2 and h["adjusted_imbalance_pct"] >= 0
    for r in h["per_rank"]:
        assert r["adjusted_load_s"] == pytest.approx(r["load_s"] * r["efficiency"])
    closing = [r for r in d["regions"] if "#" not in r["region"]]
    assert len(closing) == 1 and closing[0]["region"].startswith("threads.c:")
    assert closing[0]["ranks"] == 2
    # a threads table emptied afterwards is damaged input: named, exit 2 (was a KeyError)
    th = pd.read_parquet(run_dir / "threads.parquet")
    th.iloc[0:0].to_parquet(run_dir / "threads.parquet")
    assert cli_main(["stats", "imbalance", str(run_dir), "--by-region"]) == 2
    assert "threads.parquet: no rows" in capsys.readouterr().err
