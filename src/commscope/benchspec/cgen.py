"""Generate each native benchmark's option header from its descriptor.

``python -m commscope.benchspec.cgen OUTDIR`` writes ``OUTDIR/cs_<name>_options.h`` for
every benchmark: the struct its options fill (first member ``out``), the option table
``native/common/cs_options.c`` parses, the descriptor's shared constants and
``cs_<name>_parse_options()``.  native/CMakeLists.txt runs it when a descriptor changes.
"""

import sys
from pathlib import Path

from . import BENCHMARKS

_KIND = {
    "int": "CS_OPT_INT",
    "float": "CS_OPT_FLOAT",
    "size": "CS_OPT_SIZE",
    "range": "CS_OPT_RANGE",
    "sizes": "CS_OPT_SIZES",
    "ints": "CS_OPT_INTS",
    "choice": "CS_OPT_CHOICE",
    "choices": "CS_OPT_CHOICES",
    "flag": "CS_OPT_FLAG",
    "text": "CS_OPT_TEXT",
}
_LISTS = ("sizes", "ints", "choices")


def _c_string(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _members(opt):
    p = opt.params
    if opt.kind == "range":
        return [f"long long {p[0]};", f"long long {p[1]};"]
    if opt.kind in _LISTS:
        item = {"sizes": "long long", "ints": "long", "choices": "int"}[opt.kind]
        return [f"{item} {p[0]}[{opt.max_items}];", f"int {p[0]}_count;"]
    ctype = {"choice": "int", "flag": "int"}.get(opt.kind) or {
        "int": "long",
        "float": "double",
        "size": "long long",
        "text": "const char *",
    }[opt.kind]
    return [f"{ctype}{'' if ctype.endswith('*') else ' '}{p[0]};"]


def _default_text(bench, opt):
    """The default as the C program parses it: what commscope itself would pass."""
    if opt.kind == "flag" or opt.default is None:
        return "NULL"
    argv = opt.argv(opt.defaults())
    return _c_string(argv[1]) if argv else "NULL"


def header(bench):
    """The text of cs_<name>_options.h."""
    n = bench.name
    t = f"cs_{n}_options_t"
    native = [o for o in bench.options if o.native]
    lines = [
        f"/* Generated from src/commscope/benchspec/{n}.py by commscope.benchspec.cgen:",
        " * do not edit; change the descriptor. */",
        f"#ifndef CS_{n.upper()}_OPTIONS_H",
        f"#define CS_{n.upper()}_OPTIONS_H",
        "",
        '#include "cs_options.h"',
        "",
        "#include <stddef.h>",
        "#include <string.h>",
        "",
    ]
    for key, value in bench.constants.items():
        lines.append(f"#define CS_{n.upper()}_{key} {value}")
    lines += ["", "typedef struct {", "    const char *out; /* --out DIR */"]
    for o in native:
        lines += [f"    {m} /* --{o.name} */" for m in _members(o)]
    lines += [f"}} {t};", ""]
    for o in native:
        if o.choices:
            names = ", ".join(_c_string(c) for c in o.choices)
            lines.append(f"static const char *const cs_{n}_{o.params[0]}_names[] = {{{names}}};")
    lines += ["", f"static const cs_option_t cs_{n}_option_table[] = {{"]
    for o in native:
        p = o.params
        second = (
            f"offsetof({t}, {p[1]})"
            if o.kind == "range"
            else f"offsetof({t}, {p[0]}_count)"
            if o.kind in _LISTS
            else "0"
        )
        choices = f"cs_{n}_{p[0]}_names, {len(o.choices)}" if o.choices else "NULL, 0"
        short = f"'{o.short}'" if o.short else "0"
        minimum = o.minimum if o.minimum is not None else "-1e18"
        lines.append(
            f"    {{{_c_string(o.name)}, {short}, {_KIND[o.kind]}, offsetof({t}, {p[0]}), "
            f"{second}, {_default_text(bench, o)}, {minimum}, {choices}, {o.max_items}, "
            f"{_c_string(o.help)}}},"
        )
    lines += [
        "};",
        "",
        "/* Fill *o from argv; -1 to go on, else main's exit status (cs_parse_options). */",
        f"static inline int cs_{n}_parse_options(int argc, char **argv, {t} *o, int rank)",
        "{",
        "    memset(o, 0, sizeof *o);",
        f"    return cs_parse_options(argc, argv, cs_{n}_option_table, {len(native)}, o, "
        f'"cs_{bench.program}", rank);',
        "}",
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    out = Path((argv or sys.argv[1:])[0])
    out.mkdir(parents=True, exist_ok=True)
    for bench in BENCHMARKS.values():
        path = out / f"cs_{bench.name}_options.h"
        text = header(bench)
        if not path.exists() or path.read_text() != text:  # unchanged: no rebuild
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
