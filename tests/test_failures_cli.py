"""Issue 35: one vocabulary for flags, errors said by the command they were given to with
a close match, and help that is true: every column and output file the help and the
docs name is compared with what the command writes (real runs: tests/fuzzkit.py)."""

import argparse
import json
import re
from pathlib import Path

import pytest

from commscope import kinds
from commscope.cli import build_parser, main
from commscope.commands import profile as profile_cmd
from commscope.commands import top as top_cmd
from commscope.runs import open_run

ROOT = Path(__file__).resolve().parents[1]


def _leaves(parser=None, path=()):
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path)
        return
    for name, sub in subs[0].choices.items():
        yield from _leaves(sub, (*path, name))


def _exit(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(_leaves()))
def test_an_unknown_option_is_said_by_its_command(command, capsys):
    """Before: `profile --trcae` printed the top level's usage."""
    code, err = _exit(capsys, [*command.split(), "--no-such-option"])
    assert code == 2
    assert err.startswith(f"usage: commscope {command} "), err
    assert f"commscope {command}: error: " in err


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["profile", "--trcae", "--", "./app"],
            "commscope profile: error: unrecognized arguments: --trcae (did you mean --trace?)",
        ),
        (["reprot", "runs"], "(did you mean report?)"),
        (["stats", "imbalanse", "x"], "(did you mean imbalance?)"),
        (["bench", "pingpnog"], "(did you mean pingpong?)"),
        (["report", "r", "--overwirte"], "(did you mean --overwrite?)"),
        (["export", "r", "--format", "perfeto"], "(did you mean perfetto?)"),
        (["profile", "--xyzzy", "--", "./app"], "unrecognized arguments: --xyzzy\n"),
    ],
)
def test_close_matches_are_suggested(argv, says, capsys):
    code, err = _exit(capsys, argv)
    assert code == 2 and says in err, err


def test_one_overwrite_flag_everywhere():
    """--overwrite in every command that replaces an output; --force (export's old name)
    a hidden alias of it."""
    parser = build_parser()
    with_flag = set()
    for command in _leaves(parser):
        p = parser
        for word in command.split():
            p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[
                word
            ]
        opts = p._option_string_actions
        if "--overwrite" in opts:
            with_flag.add(command)
            assert opts["--force"].dest == opts["--overwrite"].dest == "overwrite", command
        assert "--force" not in p.format_help(), command
    assert {"report", "fit", "export"} <= with_flag


@pytest.mark.mpi
def test_force_still_works_with_a_warning(fuzz_originals, tmp_path, capsys):
    out = tmp_path / "t.json"
    out.write_text("old\n")
    run = str(fuzz_originals["profile"])
    assert main(["export", run, "--format", "perfetto", "-o", str(out)]) == 2
    assert "pass --overwrite to replace it" in capsys.readouterr().err
    assert main(["export", run, "--format", "perfetto", "-o", str(out), "--force"]) == 0
    assert capsys.readouterr().err == (
        "commscope: warning: --force is deprecated: use --overwrite\n"
    )
    assert main(["export", run, "--format", "perfetto", "-o", str(out), "--overwrite"]) == 0
    assert capsys.readouterr().err == ""
    html = tmp_path / "r.html"
    html.write_text("old\n")
    assert main(["report", str(fuzz_originals["pingpong"]), "-o", str(html), "--force"]) == 0
    assert "--force is deprecated: use --overwrite" in capsys.readouterr().err


def test_top_level_help_starts_here(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "start here:"
    examples = [ln.split("#")[0].split() for ln in lines[3:6]]
    assert [e[:2] for e in examples] == [
        ["commscope", "profile"],
        ["commscope", "report"],
        ["commscope", "study"],
    ]
    for e in examples:  # each one parses
        build_parser().parse_args(e[1:])


def test_help_texts_the_issue_named():
    text = build_parser()._subparsers._group_actions[0].choices["profile"].format_help()
    flat = " ".join(text.split())
    assert "every collective (blocking, nonblocking, persistent; not one-sided or MPI-IO)" in flat
    assert "alone it times no thread: --ompt records each thread's time" in flat
    assert "1G is 1 GiB" in flat
    assert "with --threads also threads.parquet" not in flat
    assert "threads.parquet with --ompt:" in flat


# ---- documented files and columns against what the commands write ------------------------


def _profile_epilog_files():
    """{name: condition or None} of the run directory's files in `profile --help`."""
    block = profile_cmd.EXAMPLES.split("The run directory")[1].split("\n\n")[0]
    files = {}
    for line in block.splitlines()[1:]:
        m = re.match(r"  (\S.*?)\s{2,}(.*)", line)
        if not m:
            continue
        what = m.group(2)
        cond = (
            "--callsites"
            if what.startswith("with --callsites")
            else "--ompt"
            if what.startswith("with --ompt")
            else "when"
            if "(when " in what
            else None
        )
        for name in re.split(r",\s*", m.group(1)):
            files[name] = cond
    return files


@pytest.mark.mpi
def test_profile_help_names_every_file_the_run_has(fuzz_originals):
    files = _profile_epilog_files()
    assert {"ranks.parquet", "functions.parquet", "stdout.txt", "stderr.txt", "raw/"} <= set(files)
    runs = {"--callsites": fuzz_originals["profile"], "--ompt": fuzz_originals["profile-ompt"]}
    for run in runs.values():
        have = {p.name + ("/" if p.is_dir() else "") for p in Path(run).iterdir()}
        assert have <= set(files), f"written, not in profile --help: {have - set(files)}"
        for name, cond in files.items():
            if cond is None:
                assert name in have, f"profile --help names {name}, the run has none"
    for name, cond in files.items():
        if cond in runs:
            assert name in {p.name for p in Path(runs[cond]).iterdir()}, name
        if name.endswith(".parquet"):
            assert ("profile", name[:-8]) in kinds.TABLE_COLUMNS, name
    raw = {p.name for p in (Path(fuzz_originals["profile"]) / "raw").iterdir()}
    assert any(n.startswith("trace.") for n in raw) and any(n.startswith("clocks.") for n in raw)


@pytest.mark.mpi
def test_top_help_names_every_column(fuzz_originals, capsys):
    block = top_cmd.EXAMPLES.split("Columns")[1].split("\nLive")[0]
    named = {
        w
        for line in block.splitlines()[1:]
        if re.match(r"  \S", line)
        for w in re.split(r",\s*", re.match(r"  (\S.*?)\s{2,}", line).group(1))
    }
    run = str(fuzz_originals["profile"])
    assert main(["top", run, "--json"]) == 0
    keys = set(json.loads(capsys.readouterr().out)[0])
    assert keys == named
    assert main(["top", run, "--once"]) == 0
    header = capsys.readouterr().out.splitlines()[1].split()
    assert set(header) == named  # bandwidth_Bps printed as 63.1 kB/s


def _doc_profile_tables():
    text = (ROOT / "docs" / "profile.md").read_text()
    part = text.split("At the end, the run directory holds these Parquet tables:")[1]
    part = part.split("\n\n")[1]
    tables = {}
    for item in re.split(r"\n- ", "\n" + part)[1:]:
        name = re.match(r"`(\w+)`", item).group(1)
        cols = item.split(":")[1]  # "value: a row where ...": the columns end at a colon
        while re.search(r"\([^()]*\)", cols):
            cols = re.sub(r"\([^()]*\)", "", cols)
        cols = [c.strip() for c in re.split(r",|\band\b", cols.strip().rstrip(";.")) if c.strip()]
        tables[name] = {c.split()[0] for c in cols if not c.startswith("one column per")}
    return tables


@pytest.mark.mpi
def test_profile_md_names_every_table_and_column(fuzz_originals):
    doc = _doc_profile_tables()
    declared = {t: set(c) for (k, t), c in kinds.TABLE_COLUMNS.items() if k == "profile"}
    assert doc == declared
    for key in ("profile", "profile-ompt"):
        run = open_run(fuzz_originals[key], warn=False)
        for table in run.tables():
            assert set(run.table(table).columns) >= doc[table], table


def _doc_run_directory_tables():
    text = (ROOT / "docs" / "run-directory.md").read_text()
    part = text.split("| kind | table | required columns")[1].split("\n\n")[0]
    rows = {}
    for line in part.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1].split()[0])] = set(re.findall(r"`(\w+)`", cells[2])) - {"NaN"}
    return rows


@pytest.mark.mpi
def test_run_directory_md_columns_are_written(fuzz_originals):
    doc = _doc_run_directory_tables()
    declared = {k for k in kinds.TABLE_COLUMNS if k[0] != "profile"}
    assert set(doc) == declared
    for (kind, table), cols in doc.items():
        allowed = set(kinds.TABLE_COLUMNS[(kind, table)]) | set(
            kinds.DERIVED_COLUMNS.get((kind, table), {})
        )
        assert cols <= allowed, f"{kind}/{table}: documented, not declared: {cols - allowed}"
        if kind in fuzz_originals and table in open_run(fuzz_originals[kind], warn=False).tables():
            have = set(open_run(fuzz_originals[kind], warn=False).table(table).columns)
            assert cols <= have, f"{kind}/{table}: documented, not written: {cols - have}"
