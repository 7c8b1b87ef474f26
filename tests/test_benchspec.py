"""The benchmark descriptors (commscope.benchspec): one table makes the CLI, the C
program's arguments and parser, the docs and the table checks, and they agree."""

import subprocess
import sys
from pathlib import Path

import pytest

from commscope import cli, kinds
from commscope.benchspec import BENCHMARKS, docs
from commscope.benchspec.cgen import header
from commscope.errors import InputError


def test_docs_page_is_what_the_descriptors_write():
    assert docs.PATH.read_text() == docs.render(), (
        "docs/benchmarks.md is stale: python -m commscope.benchspec.docs --write"
    )


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_cli_options_and_defaults_come_from_the_descriptor(name):
    bench = BENCHMARKS[name]
    parser = cli.build_parser()
    text = subprocess.run(
        [str(Path(sys.executable).parent / "commscope"), "bench", name, "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for opt in (o for o in bench.options if o.cli):
        assert opt.flag in text, opt.flag
        if opt.default is not None and opt.kind != "flag":
            assert f"(default {opt.default})" in " ".join(text.split()), opt.flag
    args = parser.parse_args(["bench", name])
    assert args.benchmark == name


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_native_args_of_the_defaults_parse_back_to_the_defaults(name):
    """What commscope passes the C program is what the descriptor's parser reads back."""
    bench = BENCHMARKS[name]
    defaults = bench.defaults()
    argv = bench.native_args(defaults)
    back = {}
    for opt in (o for o in bench.options if o.native):
        if opt.kind == "flag":
            back[opt.params[0]] = opt.flag in argv
        elif opt.flag in argv:
            back.update(opt.parse(argv[argv.index(opt.flag) + 1]))
        else:
            back.update(opt.defaults())
    assert back == {p: defaults[p] for p in back}


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_generated_c_header_names_every_native_option_and_constant(name):
    bench = BENCHMARKS[name]
    text = header(bench)
    for opt in (o for o in bench.options if o.native):
        assert f'{{"{opt.name}", ' in text
    for key, value in bench.constants.items():
        assert f"#define CS_{name.upper()}_{key} {value}" in text
    for opt in (o for o in bench.options if not o.native):  # launch-only options stay out
        assert f'{{"{opt.name}", ' not in text


def test_descriptor_tables_reach_the_readers():
    for bench in BENCHMARKS.values():
        for table, t in bench.tables.items():
            assert kinds.TABLE_COLUMNS[(bench.name, table)] == t.columns
            assert kinds.TABLE_KEYS[(bench.name, table)] == t.key
        if bench.points is not None:
            assert kinds.POINTS[bench.name] is bench.points


def test_minimum_refused_from_python_and_command_line():
    bench = BENCHMARKS["pingpong"]
    with pytest.raises(InputError, match="--iterations.*at least 1"):
        bench.check(dict(bench.defaults(), iters=0))
    with pytest.raises(InputError, match="at least 1"):
        bench.option("iterations").parse("0")
    with pytest.raises(InputError, match="below 2 GiB"):
        bench.check(dict(bench.defaults(), max_size=1 << 31))


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_meta_schema_takes_the_defaults_and_refuses_below_a_minimum(name):
    """run-meta.json's parameters of a benchmark are its descriptor's (commscope.schemas)."""
    import jsonschema

    from commscope.schemas import schema

    bench, defs = BENCHMARKS[name], schema("run-meta")["$defs"]
    if bench.parameters_schema is not None:  # the driver records names of its own
        assert defs[name] == bench.parameters_schema
        return
    params = bench.defaults()
    # what the descriptor records beyond its options is the driver's: not checked here
    sub = dict(defs[name], required=[r for r in defs[name]["required"] if r in params])
    sub["$defs"] = defs
    jsonschema.validate(params, sub)
    for opt in (o for o in bench.options if o.kind == "int" and o.minimum):
        bad = dict(params, **{opt.params[0]: int(opt.minimum) - 1})
        with pytest.raises(jsonschema.ValidationError, match="minimum"):
            jsonschema.validate(bad, sub)


@pytest.mark.parametrize("quick", [True, False])
def test_study_runs_are_named_once_and_their_parameters_are_the_runners(quick):
    """What each descriptor declares for the default study reaches a run function that
    takes it (a misspelt keyword would fail only minutes into a study)."""
    import inspect

    from commscope.bench import RUNNERS

    names = []
    for bench in (b for b in BENCHMARKS.values() if b.study):
        runs = bench.study(quick, 2)
        assert runs and runs[0].says, f"{bench.name}: its first study run says what it is"
        runner = inspect.signature(RUNNERS[bench.name])
        for run in runs:
            assert run.phase in ("fit", "held-out", "measure")
            names.append(run.name)
            for key in run.params:
                known = key in runner.parameters or key in bench.defaults()
                assert known, f"{bench.name}: {run.name}: {key} is no parameter of its run"
    assert len(names) == len(set(names))


def test_each_descriptor_names_a_report_section_that_shows_its_runs():
    import importlib

    for bench in BENCHMARKS.values():
        section = importlib.import_module(f"commscope.report.sections.{bench.report_section}")
        assert bench.name in section.KINDS


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_example_of_the_help_parses(name):
    """The examples under `commscope bench NAME --help` are command lines that work."""
    import re
    import shlex

    parser = cli.build_parser()
    examples = [
        m.group(1).strip().rstrip("\\").strip()
        for line in BENCHMARKS[name].examples.splitlines()
        if (m := re.match(r"\s*commscope (bench [^#]*)", line))
    ]
    assert examples
    for example in examples:
        args = parser.parse_args(shlex.split(example))
        assert args.benchmark == name, example
