"""Fault injection: hostile paths around every output commscope writes.

Symlinks planted at the temporary names older versions used (``.<name>.<pid>.tmp``,
``.<table>.parquet.tmp``) and at the destination itself must not redirect a write
outside the destination; concurrent writers must not collide; a failed write leaves
no temporary behind.
"""

import os
import threading

import pandas as pd
import pytest

from commscope.cli import main
from commscope.paths import atomic_output, write_text_atomic
from commscope.runs import Run, open_run


@pytest.fixture
def victim(tmp_path):
    """A file outside the destination directory that nothing may change."""
    outside = tmp_path / "outside"
    outside.mkdir()
    f = outside / "precious.txt"
    f.write_text("untouched\n")
    return f


def _plant(dest_dir, names, target):
    for name in names:
        (dest_dir / name).symlink_to(target)


def _assert_untouched(victim, dest_dir, planted):
    assert victim.read_text() == "untouched\n"
    for name in planted:
        assert (dest_dir / name).is_symlink()  # still the attacker's link, not followed
    leftovers = [
        p.name for p in dest_dir.iterdir() if p.name.endswith(".tmp") and p.name not in planted
    ]
    assert leftovers == []


def test_write_text_atomic_ignores_planted_links(tmp_path, victim):
    dest = tmp_path / "dest"
    dest.mkdir()
    planted = [f".out.txt.{pid}.tmp" for pid in (os.getpid(), os.getpid() + 1)]
    _plant(dest, planted, victim)
    write_text_atomic(dest / "out.txt", "result\n")
    assert (dest / "out.txt").read_text() == "result\n"
    _assert_untouched(victim, dest, planted)


def test_symlink_at_destination_is_replaced_not_followed(tmp_path, victim):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "out.txt").symlink_to(victim)
    write_text_atomic(dest / "out.txt", "result\n")
    assert not (dest / "out.txt").is_symlink() and (dest / "out.txt").read_text() == "result\n"
    assert victim.read_text() == "untouched\n"


def test_failed_write_leaves_no_temporary(tmp_path):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with atomic_output(tmp_path / "x.bin") as tmp:
            tmp.write_bytes(b"half")
            raise Boom
    assert list(tmp_path.iterdir()) == []


def test_output_permissions_follow_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "x.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o644


def test_parquet_tables_ignore_planted_links_and_concurrent_writers(new_run, victim):
    run = new_run("pingpong")
    planted = [".samples.parquet.tmp", f".samples.parquet.{os.getpid()}.tmp"]
    _plant(run.path, planted, victim)
    frames = [
        pd.DataFrame({"size_bytes": [i] * 1000, "time_s": [float(i)] * 1000}) for i in range(8)
    ]
    errors = []

    def write(df):
        try:
            run.write_table("samples", df)
        except Exception as exc:  # noqa: BLE001  (collected and asserted below)
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(df,)) for df in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = pd.read_parquet(run.path / "samples.parquet")
    assert len(final) == 1000 and final["size_bytes"].nunique() == 1  # one whole writer won
    _assert_untouched(victim, run.path, planted)


def test_meta_json_ignores_planted_links(new_run, victim):
    run = new_run("pingpong")
    planted = [f".meta.json.{os.getpid()}.tmp"]
    _plant(run.path, planted, victim)
    run.finish("complete")
    assert open_run(run.path).meta["status"] == "complete"
    _assert_untouched(victim, run.path, planted)


def test_slurm_output_ignores_planted_links(tmp_path, victim, capsys):
    dest = tmp_path / "dest"
    dest.mkdir()
    planted = [f".job.sh.{os.getpid()}.tmp"]
    _plant(dest, planted, victim)
    assert main(["slurm", "-o", str(dest / "job.sh")]) == 0
    assert (dest / "job.sh").read_text().startswith("#!")
    _assert_untouched(victim, dest, planted)


def test_plot_ignores_planted_links(tmp_path, victim):
    dest = tmp_path / "dest"
    dest.mkdir()
    csv = tmp_path / "m.csv"
    pd.DataFrame(
        {
            "rank": [0, 1],
            "peer_locality": ["inter-node", "intra-socket"],
            "size_bytes": [8000, 100],
            "count": [10, 5],
        }
    ).to_csv(csv, index=False)
    planted = [f".p.png.{os.getpid()}.tmp"]
    _plant(dest, planted, victim)
    assert (
        main(
            [
                "model",
                "pattern",
                "--machine-model",
                "bluewaters",
                "--messages",
                str(csv),
                "--ppn",
                "16",
                "--hops",
                "2",
                "--plot",
                str(dest / "p.png"),
            ]
        )
        == 0
    )
    assert (dest / "p.png").read_bytes()[:4] == b"\x89PNG"
    _assert_untouched(victim, dest, planted)


def test_report_ignores_planted_links(runs_root, tmp_path, victim):
    run = Run.create(runs_root, "no-section-kind", {})  # the run list alone
    run.finish("complete")
    dest = tmp_path / "dest"
    dest.mkdir()
    planted = [f".r.html.{os.getpid()}.tmp"]
    _plant(dest, planted, victim)
    assert main(["report", str(run.path), "-o", str(dest / "r.html")]) == 0
    assert "<html" in (dest / "r.html").read_text().lower()
    _assert_untouched(victim, dest, planted)
