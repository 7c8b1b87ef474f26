"""docs/conventions.md, checked on every command the CLI has (discovered, not listed).

A command added later (by ``register(registry)`` in a new module) is walked like the
others, so it cannot drift from the conventions unnoticed.
"""

import argparse
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from commscope import runs, units
from commscope.cli import build_parser
from commscope.commands.common_options import DeprecatedOption, number

ROOT = Path(__file__).resolve().parents[1]

#: Short options mean one thing everywhere (docs/conventions.md, "Options").
SHORT = {
    "-h": "--help",
    "-n": "--ranks",
    "-i": "--iterations",
    "-x": "--warmup",
    "-o": "--output",
    "-m": "--message-size",
    "-s": "--size",
    "-k": "--intervals",
    "-t": "--trials",
    "-w": "--workload",
    "-I": "--large-iterations",
    "-X": "--large-warmup",
}
LONG_TO_SHORT = {long: short for short, long in SHORT.items()}
#: Long options that name one quantity everywhere: name -> what its parsed value must be.
SECONDS_OPTIONS = (
    "--compute",
    "--sigma",
    "--timeout",
    "--interval",
    "--threshold",
    "--latency",
    "--t-wait",
)
#: Lists of files are space-separated (shell globs); every other list is one argument.
FILE_METAVARS = {"RUN", "FILE", "CSV", "TABLE"}
RENAMED = {
    "--out": "-o/--output",
    "--work": "--compute",
    "--mean": "--compute",
    "--threads-per-rank": "--threads",
    "--size-list": "--sizes",
    "--n": "--draws",
    "--profile": "--machine-model",
    "--force": "--overwrite",
}
#: Old names still accepted for one release (hidden, with a warning): old -> new.
DEPRECATED = {"--profile": "--machine-model", "--force": "--overwrite"}


def leaf_commands(parser=None, path=()):
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
        return
    for name, sub in subs[0].choices.items():
        yield from leaf_commands(sub, (*path, name))


COMMANDS = dict(leaf_commands())


def options(parser):
    """The options a user is shown: not --help, not the deprecated old names."""
    return [
        a for a in parser._actions if not isinstance(a, (argparse._HelpAction, DeprecatedOption))
    ]


def deprecated_options(parser):
    return [a for a in parser._actions if isinstance(a, DeprecatedOption)]


def test_commands_are_discovered():
    assert {"bench pingpong", "fit", "report", "model p2p", "stats gev"} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_deprecated_names_are_hidden_aliases_of_the_new_ones(command):
    """An old name (``--profile``) sets what its new name sets, shows in no help, and
    every command that has the new name still takes the old one this release."""
    parser = COMMANDS[command]
    problems = []
    for action in deprecated_options(parser):
        old = action.option_strings[0]
        new = parser._option_string_actions.get(action.new_name)
        if DEPRECATED.get(old) != action.new_name:
            problems.append(f"{old}: not in DEPRECATED (docs/conventions.md)")
        if new is None or new.dest != action.dest:
            problems.append(
                f"{old}: its new name {action.new_name} is missing or sets another value"
            )
        if old in parser.format_help():
            problems.append(f"{old}: shown in --help")
    for old, new in DEPRECATED.items():
        if new in parser._option_string_actions and old not in parser._option_string_actions:
            problems.append(f"{new}: its old name {old} must still be accepted")
    assert not problems, f"commscope {command}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_option_names(command):
    problems = []
    for action in options(COMMANDS[command]):
        longs = [o for o in action.option_strings if o.startswith("--")]
        for opt in action.option_strings:
            if opt.startswith("--"):
                if not re.fullmatch(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*", opt):
                    problems.append(f"{opt}: long options are lower-case words joined by '-'")
                if opt in RENAMED and not isinstance(action, DeprecatedOption):
                    problems.append(f"{opt}: the convention's name is {RENAMED[opt]}")
            elif opt not in SHORT:
                problems.append(
                    f"{opt}: short option without a fixed meaning (have {sorted(SHORT)})"
                )
            elif SHORT[opt] not in longs:
                problems.append(f"{opt} means {SHORT[opt]} everywhere, here {longs}")
        for long, short in LONG_TO_SHORT.items():
            if long in longs and short not in action.option_strings:
                problems.append(f"{long}: has the fixed short form {short} everywhere")
        if action.nargs in ("+", "*") and action.metavar not in FILE_METAVARS:
            problems.append(
                f"{longs[0] if longs else action.dest}: lists of values are one "
                f"comma-separated argument; only lists of files ({sorted(FILE_METAVARS)}) "
                "are space-separated"
            )
        if any(o in ("--sizes", "--size") for o in longs) and action.nargs not in (None, "?"):
            problems.append(f"{longs[0]}: sizes are one argument (S or S1,S2,...)")
        if any(o in SECONDS_OPTIONS for o in longs) and action.type is not number:
            problems.append(f"{longs[0]}: a time in seconds (a finite number), not {action.type}")
    assert not problems, f"commscope {command}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_present_with_defaults_and_example(command):
    parser = COMMANDS[command]
    problems = []
    for action in options(parser):
        name = "/".join(action.option_strings) or action.dest
        if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
            problems.append(f"{name}: no help text")
            continue
        default = action.default
        shown = "default" in action.help.lower() or "%(default)" in action.help
        if (
            action.option_strings
            and default not in (None, False, [], (), argparse.SUPPRESS)
            and not shown
        ):
            problems.append(f"{name}: default {default!r} not shown in its help")
    text = (parser.description or "") + (parser.epilog or "")
    if "example" not in text.lower():
        problems.append("no example in the description or epilog")
    assert not problems, f"commscope {command}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize(
    "command",
    sorted(c for c in COMMANDS if c.split()[0] in ("model", "stats", "predict", "fit", "doctor")),
)
def test_commands_that_print_results_take_json(command):
    assert "--json" in COMMANDS[command]._option_string_actions


PAPER_NUMBER = re.compile(r"(?<![\d.,x/])(?:paper |thesis |seed )?00[0-4](?![\d.])")


def user_facing_texts():
    for command, parser in COMMANDS.items():
        yield f"commscope {command} --help", parser.format_help()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield str(path.relative_to(ROOT)), path.read_text()


def test_help_and_docs_cite_papers_by_author_and_year():
    references = (ROOT / "docs" / "references.md").read_text()
    problems = []
    for where, text in user_facing_texts():
        if "shared/seeds" in text or "seeds/" in text:
            problems.append(f"{where}: points to the papers' folder a clone does not have")
        for m in PAPER_NUMBER.finditer(text):
            problems.append(
                f"{where}: cites a paper by number: ...{text[max(0, m.start() - 30) : m.end() + 20]!r}"
            )
        for author, year in re.findall(
            r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?: et al\.)? (20\d\d)", text
        ):
            if (
                author in ("Marts", "Eberius", "Schonbein", "Dominguez-Trujillo", "Bienz")
                and f"{author}" not in references
            ):
                problems.append(f"{where}: {author} {year} missing from docs/references.md")
    assert not problems, "\n".join(problems)


def _source_lines(paths, skip=()):
    """(file:line, line) of every line of ``paths``, but files named in ``skip``."""
    for path in sorted(paths):
        if path.name not in skip:
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                yield f"{path.relative_to(ROOT)}:{lineno}", line


def _native_strings():
    """(file:line, text) of every string literal in the native sources."""
    for where, line in _source_lines((ROOT / "native").rglob("*.[ch]")):
        for text in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
            yield where, text


def test_native_output_cites_papers_by_author_and_prints_seconds():
    problems = [
        f"{where}: {text}"
        for where, text in _native_strings()
        if PAPER_NUMBER.search(text)
        or ("(us)" in text and not where.startswith("native/bench/pingpong.c"))
    ]
    assert not problems, "\n".join(problems)


def test_table_columns_carry_their_unit():
    import commscope.bench  # noqa: F401  (registers every benchmark's tables)

    for mod in ("commscope.profile.convert",):
        try:
            __import__(mod)
        except ImportError:
            pass
    problems = []
    for (kind, table), columns in sorted(runs.TABLE_COLUMNS.items()):
        for col, dtype in columns.items():
            problem = units.column_unit_problem(col, dtype)
            if problem:
                problems.append(f"{kind}/{table}.{col}: {problem}")
    assert not problems, "\n".join(problems)


def test_printed_tables_write_human_units():
    """The printed tables follow the report's rule (issue 38): each value with its unit, no
    e-notation, no nan or inf; the header is the stored name, the key of --json."""
    from commscope.output import format_table

    text = format_table(
        [
            {
                "size_bytes": 1024,
                "rate_Bps": 2.5e9,
                "time_s": 1e-6,
                "alpha_s": 4.1503e-07,
                "R_N_Bps": float("inf"),
                "bytes": 2.6214e7,
                "rel_error": -0.168,
                "ci_s": (1e-6, 2e-6),
                "messages": 26,
            }
        ]
    )
    head, row = text.split("\n")
    assert head.split() == [
        "size_bytes",
        "rate_Bps",
        "time_s",
        "alpha_s",
        "R_N_Bps",
        "bytes",
        "rel_error",
        "ci_s",
        "messages",
    ]
    cells = re.split(r"\s{2,}", row.strip())
    assert cells == [
        "1 KiB",
        "2.5 GB/s",
        "1 us",
        "415 ns",
        "-",
        "25 MiB",
        "-16.8 %",
        "1 us .. 2 us",
        "26",
    ]
    assert not re.search(r"\d[eE][-+]?\d|nan|inf", text)


def test_the_fit_table_uses_data_units():
    from commscope.models.machine_model import bluewaters_machine_model
    from commscope.machine_fit import machine_model_table

    for column in machine_model_table(bluewaters_machine_model())[0]:
        assert units.column_unit_problem(column, "f") is None or column in (
            "locality",
            "protocol",
            "sizes",
            "quality",
        ), column


def test_the_convention_is_written_down():
    text = (ROOT / "docs" / "conventions.md").read_text()
    for word in [
        "_Bps",
        "_s",
        "_bytes",
        "MB/s",
        "--sizes",
        "--output",
        "--compute",
        "--machine-model",
        "--machine ",
    ]:
        assert word in text
    for old, new in DEPRECATED.items():
        assert f"`{old}`" in text and "deprecated" in text, old
    for opt, meaning in SHORT.items():
        assert f"`{opt}`" in text and meaning in text, opt


#: A time converted by hand for a sentence (``{t * 1e6:.1f} us``): prose goes through
#: units.format_seconds, so every message writes times the same way.
HAND_CONVERTED_TIME = re.compile(r"\*\s*1e[369]\s*:[^}]*\}\s*(ns|us|ms|µs)\b")


#: A name with a display unit (``spread_us``): printed tables and the report's tables keep
#: seconds and bytes/s like the data (format_table prints *_Bps as MB/s).
DISPLAY_UNIT_NAME = re.compile(r"\b[a-z]\w*_(us|ms|MiBps|KiB)\b")


def test_printed_and_report_tables_use_data_units():
    paths = [*(ROOT / "src" / "commscope").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]
    # skipped: the unit list itself; the thesis's OSU input format
    problems = [
        f"{where}: {line.strip()}"
        for where, line in _source_lines(paths, skip=("units.py", "osu.py"))
        if DISPLAY_UNIT_NAME.search(line)
    ]
    assert not problems, "display units in a table's names:\n" + "\n".join(problems)


def test_sentences_write_times_one_way():
    problems = [
        f"{where}: {line.strip()}"
        for where, line in _source_lines((ROOT / "src" / "commscope").rglob("*.py"))
        if HAND_CONVERTED_TIME.search(line)
    ]
    assert not problems, "times converted by hand (use units.format_seconds):\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize(
    "seconds, text",
    [
        (1.46e-05, "14.6 us"),
        (0.00123, "1.23 ms"),
        (2.5, "2.5 s"),
        (3e-8, "30 ns"),
        (0.0, "0 s"),
        (-2e-3, "-2 ms"),
        (0.0009996, "1 ms"),
        (0.9996, "1 s"),
        (12345.0, "12300 s"),
        (float("nan"), "n/a"),
        (None, "n/a"),
    ],
)
def test_format_seconds(seconds, text):
    assert units.format_seconds(seconds) == text


def test_format_seconds_with_fewer_digits_keeps_the_unit():
    """0.0997 s to 2 digits is 100 ms (it read "100 s")."""
    assert units.format_seconds(0.0997, 2) == "100 ms"
    assert units.format_seconds(340e-6, 2) == "340 us" and units.format_seconds(123.0, 2) == "120 s"


# --- every --json output, key by key ----------------------------------------------------

#: The arguments of each command that prints JSON, run on the real runs of
#: ``json_inputs`` ({name} is a run's path, {tmp} a fresh directory).
JSON_ARGS = {
    "advise": ["{threads}", "--size", "64K", "--replicas", "200"],
    "compare": ["{profile}", "{profile}", "--fail-if", "runtime > +50%"],
    "diagnose": ["{profile}", "--what-if", "balance"],
    "bench multirate": [
        "--threads",
        "1,2",
        "--reps",
        "1",
        "-i",
        "20",
        "-x",
        "2",
        "--runs",
        "{tmp}",
        "--quiet",
    ],
    "bench progress": ["--sizes", "1K,64K", "--reps", "1", "--runs", "{tmp}", "--quiet"],
    "doctor": [],
    "export": ["{profile}", "--format", "perfetto", "-o", "{tmp}/trace.json"],
    "fit": ["{pingpong}", "{hvpingpong}", "-o", "{tmp}/machine-model.json"],
    "model matching": ["{profile}"],
    "model p2p": ["--machine-model", "bluewaters", "--sizes", "1:4M", "--locality", "inter-node"],
    "model holds": ["{pingpong}", "{hvpingpong}", "{mtmatch}", "{bsp}"],
    "model partitioned": [
        "--latency",
        "5e-6",
        "--bandwidth",
        "1e10",
        "--threads",
        "4",
        "--compute",
        "0.1",
        "--variability",
        "0.1",
        "--sizes",
        "16MB",
        "--monte-carlo",
        "--replicas",
        "500",
    ],
    "model pattern": ["--machine-model", "bluewaters", "--messages", "{pattern}", "--hops", "2"],
    "model stencil": ["--points", "27", "--decomp", "2x2x2,4x2x2", "--per-thread"],
    "predict partitioned": [
        "{partitioned}",
        "--machine-model",
        "bluewaters",
        "--model",
        "postal",
        "--replicas",
        "200",
    ],
    "predict variability": ["{bsp}", "--target-ranks", "4,8", "--replicas", "500"],
    "profile": ["-n", "2", "--runs", "{tmp}", "--", "{program}", "4", "200"],
    "stats arrivals": ["{threads}/compute.parquet"],
    "stats bootstrap": ["{bsp}/intervals.parquet", "--target-ranks", "4", "--replicas", "500"],
    "stats gev": ["{bsp}/maxima.parquet"],
    "stats imbalance": ["{profile}"],
    "top": ["{profile}", "--once"],
}


@pytest.fixture(scope="module")
def json_inputs(tmp_path_factory, default_mpi):
    """Small real runs of every kind the --json commands read."""
    import subprocess

    from commscope.bench.bsp import run_bsp
    from commscope.bench.hvpingpong import run_hvpingpong
    from commscope.bench.mtmatch import run_mtmatch
    from commscope.bench.multirate import run_multirate
    from commscope.bench.partitioned import run_partitioned
    from commscope.bench.pingpong import run_pingpong
    from commscope.bench.threads import run_threads
    from commscope.profile.run import run_profile

    root = tmp_path_factory.mktemp("json")
    quiet = dict(runs_root=root / "runs", echo=False, progress=False, timeout=180)
    program = root / "ring"
    subprocess.run(
        [default_mpi.mpicc, str(ROOT / "tests/programs/ring_imbalance.c"), "-o", str(program)],
        check=True,
    )
    pattern = root / "pattern.csv"
    pattern.write_text(
        "rank,peer_locality,size_bytes,count\n0,inter-node,1024,4\n1,intra-socket,65536,2\n"
    )
    return {
        "pingpong": run_pingpong(min_size=1, max_size=1 << 16, iters=30, warmup=3, **quiet).path,
        "hvpingpong": run_hvpingpong(counts=[1, 10, 100], iters=3, warmup=1, **quiet).path,
        "bsp": run_bsp("ftq", ranks=2, intervals=20, mean=1e-3, seed=1, **quiet).path,
        "threads": run_threads(ranks=1, threads=2, iterations=10, ompt=True, **quiet).path,
        "partitioned": run_partitioned(
            threads=2, compute_s=1e-3, sigma_s=1e-4, sizes=[1 << 16], runs_per_size=3, **quiet
        ).path,
        "profile": run_profile(
            program,
            ["6", "300"],
            counters="all",
            trace=True,
            **{k: v for k, v in quiet.items() if k != "progress"},
        )[0].path,
        "mtmatch": run_mtmatch("5", "2x2", trials=2, warmup=1, **quiet).path,
        "multirate": run_multirate(
            threads=[1, 2], reps=1, iterations=5, warmup=1, window=16, **quiet
        ).path,
        "program": program,
        "pattern": pattern,
    }


def test_every_json_command_is_checked():
    takes_json = {c for c, p in COMMANDS.items() if "--json" in p._option_string_actions}
    assert set(JSON_ARGS) == takes_json


@pytest.mark.mpi
@pytest.mark.parametrize("command", sorted(JSON_ARGS))
def test_json_keys_follow_the_units(command, json_inputs, tmp_path, capsys):
    import json

    from commscope.cli import main

    argv = [a.format(tmp=tmp_path, **json_inputs) for a in JSON_ARGS[command]]
    if "--" in argv:  # profile: its own options before the program
        argv.insert(argv.index("--"), "--json")
    else:
        argv.append("--json")
    assert main([*command.split(), *argv]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out, f"commscope {command} --json printed nothing"
    problems = [f"{where}: {why}" for where, why in units.json_unit_problems(out)]
    assert not problems, f"commscope {command} --json:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize(
    "output, problem",
    [
        ({"latency": 1.2}, "latency"),
        ({"rows": [{"bandwidth_MBps": 3.0}]}, "rows[].bandwidth_MBps"),
        ({"runs": 5.0}, "runs"),
        ({"rel_error_by_size": {"4096": 0.1}}, None),
        ({"bytes_per_iteration": 8.0, "MPI_Send": 3}, None),
        ({"note": "latency 3 us"}, None),
        ({"bytes_per_s": 1e9}, "bytes_per_s"),
        ({"rate_msgs_per_s": 1e6, "beta_s_per_byte": 1e-10}, None),
        ({"f": {"time_s": {"mean": 0.3, "max": 0.5}}}, None),
        ({"latency": {"mean": 0.3}}, "latency.mean"),
    ],
)
def test_json_unit_rule(output, problem):
    found = [where for where, _ in units.json_unit_problems(output)]
    assert found == ([problem] if problem else [])


@pytest.mark.mpi
def test_every_stored_column_carries_its_unit(json_inputs):
    """Every table of real runs of every kind, not only the columns readers require."""
    from commscope.runs import open_run

    problems = []
    for name, path in json_inputs.items():
        if not (path / "meta.json").exists():
            continue
        run = open_run(path)
        for table in run.tables():
            df = run.table(table)
            for col in df.columns:
                kind = {"f": "f", "i": "i", "u": "i"}.get(df[col].dtype.kind, "O")
                problem = units.column_unit_problem(str(col), kind)
                if problem:
                    problems.append(f"{run.kind}/{table}.{col} ({df[col].dtype}): {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), -float("inf"), None, np.float64("nan"), pd.NA]
)
def test_undefined_values_read_as_a_dash_and_json_null(value):
    """No nan or inf is shown to a person; a script reads null (issue 25)."""
    from commscope.output import dump_json, format_table, format_value

    assert format_value(value) == "-"
    table = format_table([{"a": value, "b": 1.5}])
    assert table.split("\n")[1].split() == ["-", "1.5"]
    buf = io.StringIO()
    dump_json({"a": value, "b": [value]}, buf)
    assert json.loads(buf.getvalue()) == {"a": None, "b": [None]}
