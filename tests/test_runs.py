"""Run directories: writing, reading, and every bad-input path."""

import json

import pandas as pd
import pytest

from commscope.cli import main
from commscope.errors import InputError
from commscope.kinds import TABLE_COLUMNS
from commscope.runs import SCHEMA_VERSION, Run, open_run


@pytest.fixture(autouse=True)
def _unit_kind(monkeypatch):
    """A kind of run only these tests know, taken out again after each (the registry is
    global: other modules' tests must not see it)."""
    monkeypatch.setitem(
        TABLE_COLUMNS, ("unit", "samples"), {"size_bytes": "i", "time_s": "f", "locality": "O"}
    )
    monkeypatch.setitem(
        TABLE_COLUMNS,
        ("unit", "labels"),
        {"decomposition": "*", "size_bytes": "p", "locality": "O"},
    )


def make_run(root, **kw):
    run = Run.create(root, "unit", {"n": 3}, seeds={"numpy": 7}, argv=["commscope", "x"], **kw)
    (run.raw_dir / "samples.csv").write_text(
        "size_bytes,time_s,locality\n1,1e-6,intra-socket\n2,2e-6,intra-socket\n"
    )
    return run


def test_create_finish_and_read_back(runs_root):
    run = make_run(runs_root)
    assert json.loads((run.path / "meta.json").read_text())["status"] == "running"
    run.finish()
    again = open_run(run.path)
    assert again.meta["status"] == "complete"
    assert again.meta["end_time"] is not None
    assert again.meta["seeds"] == {"numpy": 7}
    assert again.meta["schema_version"] == SCHEMA_VERSION
    df = again.table("samples")
    assert list(df["size_bytes"]) == [1, 2]
    assert (run.path / "samples.parquet").exists()


def test_killed_run_keeps_raw_samples(runs_root):
    run = make_run(runs_root)  # never finished: as if the job was killed
    reopened = open_run(run.path)
    assert reopened.meta["status"] == "running"
    assert len(reopened.table("samples")) == 2


def test_never_reuses_a_directory(runs_root):
    a = make_run(runs_root, name=None)
    b = make_run(runs_root, name=None)
    assert a.path != b.path
    with pytest.raises(InputError, match="exists"):
        make_run(runs_root, name=a.path.name)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda m: m.update(schema_version=99), "schema_version"),
        (lambda m: m.pop("schema_version"), "schema_version"),
        (lambda m: m.update(schema="other"), "schema"),
        (lambda m: m.pop("parameters"), "parameters"),
        (lambda m: m.update(hosts="vm"), "hosts"),
        (lambda m: m.update(status="weird"), "status"),
    ],
)
def test_bad_meta_names_file_and_field(runs_root, mutate, field):
    run = make_run(runs_root)
    meta = json.loads((run.path / "meta.json").read_text())
    mutate(meta)
    (run.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(InputError) as exc:
        open_run(run.path)
    assert exc.value.field == field
    assert str(run.path / "meta.json") in str(exc.value)


def test_truncated_meta(runs_root):
    run = make_run(runs_root)
    text = (run.path / "meta.json").read_text()
    (run.path / "meta.json").write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match="truncated"):
        open_run(run.path)


def test_missing_meta_and_directory(runs_root):
    with pytest.raises(InputError, match="no such directory"):
        open_run(runs_root / "nope")
    (runs_root / "empty").mkdir()
    with pytest.raises(InputError, match="meta.json"):
        open_run(runs_root / "empty")


def test_bad_tables(runs_root):
    run = make_run(runs_root).finish()
    (run.path / "samples.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="Parquet") as exc:
        open_run(run.path).table("samples")
    assert "samples.parquet" in str(exc.value)
    pd.DataFrame({"size_bytes": [1], "locality": ["x"]}).to_parquet(run.path / "samples.parquet")
    with pytest.raises(InputError) as exc:
        open_run(run.path).table("samples")
    assert exc.value.field == "time_s"
    pd.DataFrame({"size_bytes": [1], "time_s": ["fast"], "locality": ["x"]}).to_parquet(
        run.path / "samples.parquet"
    )
    with pytest.raises(InputError, match="number"):
        open_run(run.path).table("samples")


@pytest.mark.parametrize(
    "column, values, says",
    [
        ("decomposition", [float("nan")], "missing"),  # a label: never missing
        ("locality", ["nan"], 'holds the text "nan"'),  # a NaN written as text
        ("size_bytes", [0], "must be positive, found 0"),
        ("size_bytes", [1.5], "expected integer"),
    ],
)
def test_label_and_positive_columns(runs_root, column, values, says):
    run = make_run(runs_root).finish()
    good = {"decomposition": ["2x1x1"], "size_bytes": [8], "locality": ["intra-socket"]}
    pd.DataFrame(good).to_parquet(run.path / "labels.parquet")
    assert len(open_run(run.path).table("labels")) == 1
    pd.DataFrame({**good, column: values}).to_parquet(run.path / "labels.parquet")
    with pytest.raises(InputError, match=says) as exc:
        open_run(run.path).table("labels")
    assert exc.value.source.endswith("labels.parquet") and exc.value.field == column


def test_a_missing_table_names_its_file(runs_root):
    run = open_run(make_run(runs_root).finish().path)
    with pytest.raises(InputError, match="missing") as exc:
        run.table("nothing")
    assert exc.value.source == str(run.path / "nothing.parquet")
    assert run.table_file("samples") == run.path / "samples.parquet"


def test_cli_reports_bad_run_with_exit_2_and_writes_nothing(runs_root, tmp_path, capsys):
    run = make_run(runs_root)
    (run.path / "meta.json").write_text("{ not json")
    out = tmp_path / "r.html"
    assert main(["report", str(run.path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "meta.json" in err and err.count("\n") == 1
    assert not out.exists()


def test_report_and_fit_refuse_to_overwrite(runs_root, tmp_path, capsys):
    existing = tmp_path / "report.html"
    existing.write_text("keep me")
    assert main(["report", str(runs_root), "-o", str(existing)]) == 2
    assert existing.read_text() == "keep me"
    model_file = tmp_path / "machine-model.json"
    model_file.write_text("keep me too")
    assert main(["fit", str(runs_root), "-o", str(model_file)]) == 2
    assert model_file.read_text() == "keep me too"


def test_killed_mid_line_drops_only_the_partial_sample(runs_root):
    run = make_run(runs_root)
    with open(run.raw_dir / "samples.csv", "a") as fh:
        fh.write("3,3e")  # the writer died here
    df = open_run(run.path).table("samples")
    assert list(df["size_bytes"]) == [1, 2]
    assert df["time_s"].dtype.kind == "f"


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", "..", ""])
def test_run_name_must_be_a_plain_directory_name(runs_root, bad):
    with pytest.raises(InputError, match="--name"):
        make_run(runs_root, name=bad)
    assert not (runs_root.parent / "escape").exists()


def test_report_temporary_file_never_touches_a_user_file(runs_root, tmp_path):
    make_run(runs_root).finish()
    keep = tmp_path / "report.tmp"  # what a naive with_suffix(".tmp") would clobber
    keep.write_text("mine")
    assert main(["report", str(runs_root), "-o", str(tmp_path / "report.html")]) == 0
    assert keep.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.tmp", "runs"]


def test_unwritable_output_is_one_line_exit_2(runs_root, tmp_path, capsys):
    make_run(runs_root).finish()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["report", str(runs_root), "-o", str(blocker / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("commscope: error:") and err.count("\n") == 1
    assert blocker.read_text() == "x"
