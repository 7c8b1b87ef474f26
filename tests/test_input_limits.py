"""Bad input anywhere: one message naming the option or file, exit 2, nothing created.

The cases issue 11 reported, one per class: sizes beyond 2^63, outputs whose parent
is missing or a file, a non-mpicc given as --mpi, messages naming another option or an
internal temporary file, a directory where a file belongs, a machine model without the
locality asked for; and commscope's own bsp output read by stats gev/bootstrap.
"""

import json

import pandas as pd
import pytest

from commscope.cli import main
from commscope.models.machine_model import bluewaters_machine_model
from commscope.paths import write_text_atomic


def _run(capsys, argv):
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (
            [
                "model",
                "p2p",
                "--machine-model",
                "bluewaters",
                "--sizes",
                str(2**64),
                "--locality",
                "inter-node",
            ],
            "--sizes",
        ),
        (
            [
                "model",
                "p2p",
                "--machine-model",
                "bluewaters",
                "--sizes",
                "1:16EB",
                "--locality",
                "inter-node",
            ],
            "--sizes",
        ),
        (
            [
                "model",
                "partitioned",
                "--latency",
                "1e-6",
                "--bandwidth",
                "1e9",
                "--threads",
                "2",
                "--compute",
                "0.01",
                "--sigma",
                "0.001",
                "--sizes",
                "1e23",
            ],
            "--sizes",
        ),
        (
            [
                "model",
                "partitioned",
                "--latency",
                "1e-6",
                "--bandwidth",
                "1e9",
                "--threads",
                "2",
                "--compute",
                "0.01",
                "--sigma",
                "0.001",
                "--sizes",
                str(2**63),
            ],
            "larger than 2^63",
        ),
    ],
)
def test_sizes_beyond_int64_are_refused(capsys, argv, needle):
    status, err = _run(capsys, argv)
    assert status == 2 and needle in err


def test_an_output_outside_the_current_directory_needs_its_parent(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, err = _run(capsys, ["slurm", "-o", "/nonexistent-commscope/dir/s.sbatch"])
    assert status == 2 and "does not exist" in err and "/nonexistent-commscope/dir" in err
    assert not __import__("os").path.exists("/nonexistent-commscope")
    status, err = _run(capsys, ["slurm", "-o", "new/sub/s.sbatch"])  # inside: created, said
    assert status == 0 and (tmp_path / "new/sub/s.sbatch").exists() and "created" in err
    (tmp_path / "plain").write_text("x")
    status, err = _run(capsys, ["slurm", "-o", "plain/s.sbatch"])
    assert status == 2 and "is a file" in err and "File exists" not in err
    status, err = _run(capsys, ["slurm", "-o", str(tmp_path)])
    assert status == 2 and "is a directory" in err


def test_a_failed_write_names_the_file_not_the_temporary(tmp_path):
    with pytest.raises(OSError) as exc:
        write_text_atomic("/proc/commscope-test.json", "x")
    assert exc.value.filename == "/proc/commscope-test.json"


def test_a_program_that_is_not_an_mpicc_is_refused_before_building(capsys, runs_root):
    status, err = _run(capsys, ["bench", "pingpong", "--mpi", "/bin/ls", "--runs", str(runs_root)])
    assert status == 2 and "not an mpicc" in err and "/bin/ls" in err
    assert list(runs_root.iterdir()) == []


def test_a_directory_where_a_file_belongs(tmp_path, capsys):
    status, err = _run(
        capsys,
        [
            "model",
            "p2p",
            "--machine-model",
            str(tmp_path),
            "--sizes",
            "1K",
            "--locality",
            "inter-node",
        ],
    )
    assert status == 2 and "is a directory" in err and "no such file" not in err
    status, err = _run(capsys, ["stats", "gev", str(tmp_path)])
    assert status == 2 and "is a directory" in err
    (tmp_path / "meta.json").write_text("{}")
    (tmp_path / "maxima.parquet").write_bytes(b"")
    status, err = _run(capsys, ["stats", "gev", str(tmp_path)])  # a run: which of its tables
    assert status == 2 and "is a run directory" in err and f"{tmp_path}/maxima.parquet" in err


def test_a_machine_model_without_the_locality_names_the_file_and_what_it_has(tmp_path, capsys):
    one_node = bluewaters_machine_model().to_dict()
    one_node["parameters"] = [p for p in one_node["parameters"] if p["locality"] != "inter-node"]
    one_node["breakpoints"].pop("inter-node", None)
    path = tmp_path / "one-node.json"
    path.write_text(json.dumps(one_node))
    status, err = _run(
        capsys,
        ["model", "p2p", "--machine-model", str(path), "--sizes", "1K", "--locality", "inter-node"],
    )
    assert status == 2 and str(path) in err and "intra-socket" in err


def test_stats_read_bench_bsp_output_by_default(tmp_path, capsys):
    """The columns `bench bsp` writes (intervals.parquet, maxima.parquet) need no --column."""
    rows = [
        dict(interval=i, rank=r, host="vm", interval_s=0.01 + 0.001 * ((i * 7 + r * 3) % 5))
        for i in range(40)
        for r in range(2)
    ]
    intervals = pd.DataFrame(rows)
    intervals.to_parquet(tmp_path / "intervals.parquet")
    maxima = (
        intervals.groupby("interval")["interval_s"].max().rename("max_interval_s").reset_index()
    )
    maxima.to_parquet(tmp_path / "maxima.parquet")
    status, err = _run(capsys, ["stats", "gev", str(tmp_path / "maxima.parquet"), "--json"])
    assert status == 0, err
    status, err = _run(
        capsys,
        [
            "stats",
            "bootstrap",
            str(tmp_path / "intervals.parquet"),
            "--target-ranks",
            "4",
            "--replicas",
            "200",
            "--seed",
            "1",
        ],
    )
    assert status == 0, err
    status, err = _run(
        capsys,
        [
            "stats",
            "bootstrap",
            str(tmp_path / "intervals.parquet"),
            "--column",
            "nope",
            "--target-ranks",
            "4",
        ],
    )
    assert status == 2 and "nope" in err
