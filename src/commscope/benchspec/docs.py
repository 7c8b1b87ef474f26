"""docs/benchmarks.md, written from the descriptors: every benchmark's options.

``python -m commscope.benchspec.docs [--write]`` prints (or rewrites) it;
tests/test_benchspec.py fails when the committed file is not what this writes.
"""

import sys
from pathlib import Path

from . import BENCHMARKS

PATH = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"


def _cell(text):
    return str(text).replace("|", "\\|")


def _recorded(opt):
    return opt.params if opt.recorded is None else opt.recorded


def render():
    lines = [
        "# Benchmarks and their options",
        "",
        "<!-- Generated from src/commscope/benchspec/*.py by "
        "`python -m commscope.benchspec.docs --write`: edit the descriptors, not this. -->",
        "",
        "Each benchmark is one C program (`native/bench/<name>.c`) and one descriptor "
        "(`src/commscope/benchspec/<name>.py`) from which the command line, the C "
        "program's option parser and this page are made. The last column names where an option "
        "lands in the run's `meta.json` under `parameters` (`-`: nowhere, it shapes only "
        "what is printed).",
        "",
    ]
    for b in BENCHMARKS.values():
        lines += [f"## `commscope bench {b.name}`", "", b.description, ""]
        lines += [
            "| option | default | meaning | parameters |",
            "|---|---|---|---|",
        ]
        for o in (o for o in b.options if o.cli):
            flag = f"`-{o.short}`, `{o.flag}`" if o.short else f"`{o.flag}`"
            default = "off" if o.kind == "flag" else "-" if o.default is None else o.default
            unit = f" ({o.unit})" if o.unit else ""
            names = () if o.output else _recorded(o)
            params = ", ".join(f"`{p}`" for p in names) or "-"
            lines.append(f"| {flag} | {_cell(default)} | {_cell(o.help)}{unit} | {params} |")
        tables = ", ".join(f"`{t}`" for t in b.tables)
        lines += ["", f"Tables: {tables}.", ""]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in argv:
        PATH.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
