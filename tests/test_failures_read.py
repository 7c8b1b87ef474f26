"""Issue 35, the reading side: every reader, one rule.  A damaged, missing or unreadable
table of a run a command was asked to read is one error naming the file (exit 2), or,
for `report` of several runs, a warning per damaged run and exit 2 unless --keep-going;
never a silent exit 0, never a sentence that says the data does not exist.  Every table
declares its row key (duplicates refused by name) and the checks between its columns.

Reads real runs of every kind (tests/fuzzkit.py's originals), damaged one way each."""

import shutil

import pandas as pd
import pytest

from commscope import kinds
from commscope.cli import main
from commscope.errors import InputError
from commscope.runs import open_run


def test_every_table_declares_its_row_key():
    for (kind, table), columns in kinds.TABLE_COLUMNS.items():
        key = kinds.TABLE_KEYS.get((kind, table))
        assert key, f"{kind}/{table}: no row key in kinds.TABLE_KEYS"
        assert set(key) <= set(columns) | set(kinds.DERIVED_COLUMNS.get((kind, table), {})), (
            f"{kind}/{table}: key {key} names undeclared columns"
        )
    for (kind, table), checks in kinds.TABLE_CHECKS.items():
        columns = {
            **kinds.TABLE_COLUMNS[(kind, table)],
            **kinds.DERIVED_COLUMNS.get((kind, table), {}),
        }
        for check in checks:
            assert check.column in columns, f"{kind}/{table}: check names {check.column}"


def _copy(originals, kind, tmp_path):
    dst = tmp_path / kind
    shutil.copytree(originals[kind], dst, symlinks=True)
    return dst


def _edit(run_dir, table, change):
    path = run_dir / f"{table}.parquet"
    change(pd.read_parquet(path)).to_parquet(path, index=False)
    return path


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.mpi
def test_real_runs_of_every_kind_pass_every_check(fuzz_originals):
    for kind, path in fuzz_originals.items():
        if kind != "machine-model":
            run = open_run(path, warn=False).check()
            for table in run.tables():
                key = kinds.TABLE_KEYS.get((run.kind, table))
                assert key or (run.kind, table) not in kinds.TABLE_COLUMNS, (kind, table)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "kind, table",
    [
        ("pingpong", "samples"),
        ("mtmatch", "trials"),
        ("profile", "callsites"),
        ("profile", "functions"),
        ("profile", "ranks"),
        ("bsp", "intervals"),
        ("partitioned", "samples"),
    ],
)
def test_rows_twice_are_refused_by_the_key(kind, table, fuzz_originals, tmp_path):
    run_dir = _copy(fuzz_originals, kind, tmp_path)
    path = _edit(run_dir, table, lambda d: pd.concat([d, d]))
    with pytest.raises(InputError) as exc:
        open_run(run_dir, warn=False).table(table)
    assert exc.value.source == str(path)
    assert exc.value.field == ",".join(kinds.TABLE_KEYS[(kind, table)])
    assert "repeat another row's key" in exc.value.message


@pytest.mark.mpi
def test_top_callsites_refuses_doubled_rows(fuzz_originals, tmp_path, capsys):
    """Before: every callsites row twice showed doubled calls, bytes and time, exit 0."""
    run_dir = _copy(fuzz_originals, "profile", tmp_path)
    _edit(run_dir, "callsites", lambda d: pd.concat([d, d]))
    code, out, err = _cli(capsys, "top", str(run_dir), "--callsites")
    assert code == 2 and out == ""
    assert err.startswith(f"commscope: error: {run_dir}/callsites.parquet: rank,function,")


@pytest.mark.mpi
def test_columns_that_contradict_each_other_are_damage(fuzz_originals, tmp_path, capsys):
    """Before: an mtmatch run whose messages column is 0 beside non-zero search depths and
    drain times was reported as 0 messages, exit 0."""
    run_dir = _copy(fuzz_originals, "mtmatch", tmp_path)
    _edit(run_dir, "trials", lambda d: d.assign(messages=0))
    out = tmp_path / "r.html"
    code, _, err = _cli(capsys, "report", str(run_dir), "-o", str(out))
    assert code == 2 and not out.exists()
    assert err == (
        f"commscope: error: {run_dir}/trials.parquet: messages: must be at least 1 "
        "where a search depth or drain time was measured; 2 rows are not (config "
        "0, trial 0): messages = 0\n"
    )


@pytest.mark.mpi
@pytest.mark.parametrize("damage", ["truncate", "delete", "no rows"])
def test_report_of_one_damaged_profile_is_one_error(damage, fuzz_originals, tmp_path, capsys):
    """Before: a truncated functions.parquet gave exit 0 and "cannot show" inside the HTML;
    a deleted one "No counters were recorded."."""
    run_dir = _copy(fuzz_originals, "profile", tmp_path)
    victim = run_dir / "functions.parquet"
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:200])
    elif damage == "delete":
        victim.unlink()
    else:
        _edit(run_dir, "functions", lambda d: d.iloc[:0])
    out = tmp_path / "r.html"
    out.write_text("an older report\n")
    code, stdout, err = _cli(capsys, "report", str(run_dir), "-o", str(out), "--overwrite")
    assert code == 2 and stdout == ""
    assert err.startswith(f"commscope: error: {victim}: ") and err.count("\n") == 1, err
    assert out.read_text() == "an older report\n"  # nothing overwritten
    if damage == "delete":
        assert "missing, though the run's conversion wrote it" in err
    if damage == "no rows":  # every rank counts its MPI_Init: none is damage
        assert "no rows, though 2 ranks left counters" in err


@pytest.mark.mpi
def test_report_of_several_runs_warns_per_damaged_run(fuzz_originals, tmp_path, capsys):
    bad = _copy(fuzz_originals, "profile", tmp_path)
    (bad / "functions.parquet").write_bytes(b"PAR1 not really")
    bad2 = _copy(fuzz_originals, "bsp", tmp_path)
    _edit(bad2, "maxima", lambda d: pd.concat([d, d]))
    good = fuzz_originals["pingpong"]
    out = tmp_path / "r.html"
    code, _, err = _cli(capsys, "report", str(bad), str(good), str(bad2), "-o", str(out))
    lines = err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert [ln.split(":")[2] for ln in lines[:2]] == [f" {bad}", f" {bad2}"]
    assert all(ln.startswith("commscope: warning: ") for ln in lines[:2])
    assert lines[-1].startswith(f"commscope: error: {bad}/functions.parquet: ")
    assert "and 1 more damaged run" in lines[-1] and "--keep-going" in lines[-1]
    code, _, err = _cli(
        capsys, "report", str(bad), str(good), str(bad2), "-o", str(out), "--keep-going"
    )
    assert code == 0 and out.exists(), err
    assert err.count("damaged, left out of the report") == 2
    html = out.read_text()
    assert "Left out of this report (--keep-going), damaged" in html and str(bad2) in html


@pytest.mark.mpi
def test_a_profile_never_converted_says_how(fuzz_originals, tmp_path, capsys):
    """Before: a profile run with only raw/ left was reported with "No counters were
    recorded.", exit 0."""
    run_dir = _copy(fuzz_originals, "profile", tmp_path)
    tables = sorted(p.name for p in run_dir.glob("*.parquet"))
    for p in run_dir.glob("*.parquet"):
        p.unlink()
    code, _, err = _cli(capsys, "report", str(run_dir), "-o", str(tmp_path / "r.html"))
    assert code == 2
    assert err == (
        f"commscope: error: {run_dir}/ranks.parquet: missing: the run's raw counters "
        "(raw/node.*) were never converted to tables (was its commscope stopped "
        "before the end?); convert them with `commscope profile --convert "
        f"{run_dir}`\n"
    )
    code, out, err = _cli(capsys, "profile", "--convert", str(run_dir))
    assert code == 0, err
    assert out.strip() == str(run_dir)
    assert sorted(p.name for p in run_dir.glob("*.parquet")) == tables
    assert _cli(capsys, "report", str(run_dir), "-o", str(tmp_path / "r.html"))[0] == 0
    assert _cli(capsys, "profile", "--convert", str(fuzz_originals["bsp"]))[0] == 2


@pytest.mark.mpi
def test_model_holds_with_an_empty_table_names_it_on_stderr(fuzz_originals, tmp_path, capsys):
    """Before: exit 0, the file named only on stdout ("none could be fitted")."""
    run_dir = _copy(fuzz_originals, "pingpong", tmp_path)
    path = _edit(run_dir, "samples", lambda d: d.iloc[:0])
    code, out, err = _cli(capsys, "model", "holds", str(run_dir))
    assert code == 2 and out == ""
    assert err == (
        f"commscope: error: {path}: no rows, though the run is complete (damaged or cut short)\n"
    )


@pytest.mark.mpi
def test_a_complete_run_missing_points_is_damaged(fuzz_originals, tmp_path):
    run_dir = _copy(fuzz_originals, "pingpong", tmp_path)
    _edit(run_dir, "samples", lambda d: d[d["size_bytes"] <= 64])
    with pytest.raises(
        InputError,
        match=r"only 7 of 25 sizes complete, though the run is "
        r"complete",
    ) as exc:
        open_run(run_dir, warn=False).table("samples")
    assert exc.value.source == str(run_dir / "samples.parquet")


@pytest.mark.mpi
def test_a_profile_whose_commscope_was_killed_is_converted_on_request(
    fuzz_originals, tmp_path, capsys
):
    """A SIGKILLed commscope leaves meta.json "running" and only raw/: readers say how
    to convert it; --convert writes the tables and marks it interrupted."""
    import json

    run_dir = _copy(fuzz_originals, "profile", tmp_path)
    for p in run_dir.glob("*.parquet"):
        p.unlink()
    meta = json.loads((run_dir / "meta.json").read_text())
    meta.update(status="running", end_time=None, commscope_pid=2**22 + 7, commscope_pid_start=None)
    (run_dir / "meta.json").write_text(json.dumps(meta))
    code, _, err = _cli(capsys, "diagnose", str(run_dir))
    assert code == 2 and f"commscope profile --convert {run_dir}" in err
    assert _cli(capsys, "profile", "--convert", str(run_dir))[0] == 0
    run = open_run(run_dir, warn=False)
    assert run.meta["status"] == "interrupted" and run.check()
    assert _cli(capsys, "diagnose", str(run_dir))[0] == 0
