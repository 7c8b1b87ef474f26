"""docs/conventions.md, checked on every command the CLI has (discovered, not listed).

A command added later (by ``register(registry)`` in a new module) is walked like the
others, so it cannot drift from the conventions unnoticed.
"""

import argparse
import re
from pathlib import Path

import pytest

from commscope import runs, units
from commscope.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]

#: Short options mean one thing everywhere (docs/conventions.md, "Options").
SHORT = {"-h": "--help", "-n": "--ranks", "-i": "--iterations", "-x": "--warmup",
         "-o": "--output", "-m": "--message-size", "-s": "--size", "-k": "--intervals",
         "-t": "--trials", "-w": "--workload", "-I": "--large-iterations",
         "-X": "--large-warmup"}
#: Long options that name one quantity everywhere: name -> what its parsed value must be.
SECONDS_OPTIONS = ("--compute", "--sigma", "--timeout", "--interval", "--threshold",
                   "--latency", "--t-wait")
#: Lists of files are space-separated (shell globs); every other list is one argument.
FILE_METAVARS = {"RUN", "FILE", "CSV", "TABLE"}
RENAMED = {"--out": "-o/--output", "--work": "--compute", "--mean": "--compute",
           "--threads-per-rank": "--threads", "--size-list": "--sizes", "--n": "--draws"}


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
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def test_commands_are_discovered():
    assert {"bench pingpong", "fit", "report", "model p2p", "stats gev"} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_option_names(command):
    problems = []
    for action in options(COMMANDS[command]):
        longs = [o for o in action.option_strings if o.startswith("--")]
        for opt in action.option_strings:
            if opt.startswith("--"):
                if not re.fullmatch(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*", opt):
                    problems.append(f"{opt}: long options are lower-case words joined by '-'")
                if opt in RENAMED:
                    problems.append(f"{opt}: the convention's name is {RENAMED[opt]}")
            elif opt not in SHORT:
                problems.append(f"{opt}: short option without a fixed meaning (have {sorted(SHORT)})")
            elif SHORT[opt] not in longs:
                problems.append(f"{opt} means {SHORT[opt]} everywhere, here {longs}")
        if action.nargs in ("+", "*") and action.metavar not in FILE_METAVARS:
            problems.append(f"{longs[0] if longs else action.dest}: lists of values are one "
                            f"comma-separated argument; only lists of files ({sorted(FILE_METAVARS)}) "
                            "are space-separated")
        if any(o in ("--sizes", "--size") for o in longs) and action.nargs not in (None, "?"):
            problems.append(f"{longs[0]}: sizes are one argument (S or S1,S2,...)")
        if any(o in SECONDS_OPTIONS for o in longs) and action.type is not float:
            problems.append(f"{longs[0]}: a time in seconds (type float), not {action.type}")
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
        if action.option_strings and default not in (None, False, [], (), argparse.SUPPRESS) \
                and not shown:
            problems.append(f"{name}: default {default!r} not shown in its help")
    text = (parser.description or "") + (parser.epilog or "")
    if "example" not in text.lower():
        problems.append("no example in the description or epilog")
    assert not problems, f"commscope {command}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("command", sorted(c for c in COMMANDS if c.split()[0] in
                                           ("model", "stats", "predict", "fit", "doctor")))
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
            problems.append(f"{where}: cites a paper by number: ...{text[max(0, m.start() - 30):m.end() + 20]!r}")
        for author, year in re.findall(r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?: et al\.)? (20\d\d)", text):
            if author in ("Marts", "Eberius", "Schonbein", "Dominguez-Trujillo", "Bienz") \
                    and f"{author}" not in references:
                problems.append(f"{where}: {author} {year} missing from docs/references.md")
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


def test_printed_tables_show_bandwidth_in_mb_per_s():
    from commscope.output import format_table
    text = format_table([{"size_bytes": 1024, "rate_Bps": 2.5e9, "time_s": 1e-6}])
    assert text.split("\n")[0].split() == ["size_bytes", "rate_MBps", "time_s"]
    assert "2500" in text


def test_the_fit_table_uses_data_units():
    from commscope.models.profile import bluewaters_profile
    from commscope.profile_fit import profile_table
    for column in profile_table(bluewaters_profile())[0]:
        assert units.column_unit_problem(column, "f") is None or column in (
            "locality", "protocol", "sizes_bytes", "quality"), column


def test_the_convention_is_written_down():
    text = (ROOT / "docs" / "conventions.md").read_text()
    for word in ["_Bps", "_s", "_bytes", "MB/s", "--sizes", "--output", "--compute"]:
        assert word in text
    for opt, meaning in SHORT.items():
        assert f"`{opt}`" in text and meaning in text, opt
