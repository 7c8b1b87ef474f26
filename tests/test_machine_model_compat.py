"""What an earlier commscope wrote and typed still works for one release: the option
``--profile`` (now ``--machine-model``) and a ``machine-profile.json`` (schema
``commscope.machine-profile``, now ``commscope.machine-model``), each with one warning line.
"""

import json

import pytest

from commscope.cli import build_parser, main
from commscope.errors import InputError
from commscope.models.machine_model import (
    DEFAULT_FILE,
    LEGACY_SCHEMA,
    SCHEMA,
    bluewaters_machine_model,
    load_machine_model,
)
from commscope.runs import Run

OPTION_WARNING = "commscope: warning: --profile is deprecated: use --machine-model"
P2P = ["model", "p2p", "--sizes", "1K,1M", "--locality", "inter-node", "--ppn", "4", "--json"]


def _old_file(tmp_path):
    """The Blue Waters machine model as an earlier commscope saved it."""
    data = dict(bluewaters_machine_model().to_dict(), schema=LEGACY_SCHEMA)
    path = tmp_path / "machine-profile.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _warnings(err):
    return [line for line in err.splitlines() if line.startswith("commscope: warning:")]


@pytest.mark.parametrize(
    "argv",
    [
        P2P,
        ["model", "pattern", "--messages", "{pattern}", "--json"],
        [
            "model",
            "partitioned",
            "--locality",
            "inter-node",
            "--threads",
            "4",
            "--compute",
            "0.01",
            "--variability",
            "0.1",
            "--sizes",
            "1MiB",
            "--json",
        ],
    ],
)
def test_the_old_option_gives_the_same_result_and_one_warning(argv, tmp_path, capsys):
    pattern = tmp_path / "pattern.csv"
    pattern.write_text("rank,peer_locality,size_bytes,count\n0,inter-node,1024,4\n")
    argv = [a.format(pattern=pattern) for a in argv]
    assert main([*argv, "--machine-model", "bluewaters"]) == 0
    new = capsys.readouterr()
    assert _warnings(new.err) == []
    assert main([*argv, "--profile", "bluewaters"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out
    assert _warnings(old.err) == [OPTION_WARNING]


def test_the_old_option_given_twice_warns_once(capsys):
    assert main([*P2P, "--profile", "nonsense", "--profile", "bluewaters"]) == 0
    assert _warnings(capsys.readouterr().err) == [OPTION_WARNING]


def test_old_and_new_option_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main([*P2P, "--profile", "bluewaters", "--machine-model", "bluewaters"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_old_option_is_not_in_the_help():
    parser = build_parser()
    for argv in (["model", "p2p"], ["report"], ["predict", "partitioned"], ["advise"]):
        sub = parser
        for word in argv:
            sub = next(a for a in sub._actions if a.dest in ("command", "subcommand")).choices[word]
        assert "--machine-model" in sub.format_help() and "--profile" not in sub.format_help()


def test_an_old_machine_profile_file_loads_with_one_warning(tmp_path, capsys):
    path = _old_file(tmp_path)
    loaded = load_machine_model(path)
    assert loaded.to_dict() == bluewaters_machine_model().to_dict()  # written back: the new schema
    assert loaded.to_dict()["schema"] == SCHEMA
    (warning,) = _warnings(capsys.readouterr().err)
    assert str(path) in warning and "deprecated" in warning and LEGACY_SCHEMA in warning
    assert path.read_text().count(LEGACY_SCHEMA) == 1  # reading never rewrites the file


def test_an_old_file_through_the_cli(tmp_path, capsys):
    path = _old_file(tmp_path)
    assert main([*P2P, "--machine-model", "bluewaters"]) == 0
    expected = capsys.readouterr().out
    assert main([*P2P, "--machine-model", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == expected and len(_warnings(err)) == 1
    # both old: the option's warning and the file's
    assert main([*P2P, "--profile", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == expected
    assert _warnings(err)[0] == OPTION_WARNING and len(_warnings(err)) == 2


def test_report_takes_the_old_option_and_file(tmp_path, runs_root, capsys):
    run = Run.create(runs_root, "unit", {"n": 1}, argv=["commscope", "x"])
    (run.raw_dir / "samples.csv").write_text("size_bytes,time_s\n1,1e-6\n")
    run.finish()
    out = tmp_path / "r.html"
    assert (
        main(["report", str(run.path), "--profile", str(_old_file(tmp_path)), "-o", str(out)]) == 0
    )
    assert out.exists()
    assert len(_warnings(capsys.readouterr().err)) == 2


def test_an_old_file_with_another_schema_is_still_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(dict(bluewaters_machine_model().to_dict(), schema="commscope.machine-thing"))
    )
    with pytest.raises(InputError) as exc:
        load_machine_model(path)
    assert exc.value.field == "schema"


def test_fit_writes_machine_model_json_by_default():
    args = build_parser().parse_args(["fit", "runs"])
    assert args.output == DEFAULT_FILE == "machine-model.json"
