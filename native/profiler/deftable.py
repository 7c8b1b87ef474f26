"""The reader of the profiler's X-macro tables (counters.def, settings.def, layout.def).

A table is C text: comments, preprocessor lines and calls ``NAME(arg, arg, ...)`` whose
arguments are identifiers, whole numbers, string literals (adjacent literals joined,
as C joins them) or other C expressions (kept as their text, an :class:`Expr`).  Both the build's generator (gen_tables.py, stdlib only) and the
Python package (commscope.collect.native_tables) read the tables through this one
parser, so neither side guesses at the other's syntax.

    entries(path) -> [Entry(macro, args, line)]
"""

import re
from typing import NamedTuple

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>[(),])
  | (?P<op>[-+*/%<>=!&|^~?:.\[\]]+)
    """,
    re.X | re.S,
)
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


class Ident(str):
    """An identifier argument (a C name such as THREAD or CS_PAGE), not a string."""


class Expr(str):
    """A C expression argument other than a lone name or number, as written."""


class Entry(NamedTuple):
    macro: str
    args: tuple  # Ident, int or str per argument
    line: int


class TableError(ValueError):
    pass


def _unquote(literal, where):
    out, i, body = [], 0, literal[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\":
            esc = body[i + 1]
            if esc not in _ESCAPES:
                raise TableError(f"{where}: escape \\{esc} is not one this reader knows")
            out.append(_ESCAPES[esc])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _strip_preprocessor(text):
    """Preprocessor lines (with their continuations) blanked, line numbers kept."""
    lines, cont = text.split("\n"), False
    for i, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.endswith("\\")
            lines[i] = ""
    return "\n".join(lines)


def parse(text, name="<table>"):
    """Every macro call of ``text``, in order."""
    text = _strip_preprocessor(text)
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        line = text.count("\n", 0, pos) + 1
        if not m:
            raise TableError(f"{name}:{line}: unexpected {text[pos : pos + 20]!r}")
        kind = m.lastgroup
        if kind not in ("space", "comment"):
            tokens.append((kind, m.group(), line, m.start(), m.end()))
        pos = m.end()
    out, i = [], 0
    while i < len(tokens):
        kind, value, line = tokens[i][:3]
        if kind != "ident" or i + 1 >= len(tokens) or tokens[i + 1][1] != "(":
            raise TableError(f"{name}:{line}: expected NAME(...), got {value!r}")
        i += 2
        args, parts, depth = [], [], 0
        while True:
            if i >= len(tokens):
                raise TableError(f"{name}:{line}: {value}( is never closed")
            k, v, ln, start, end = tokens[i]
            i += 1
            if v in (",", ")") and depth == 0:
                args.append(_argument(parts, text, f"{name}:{ln}"))
                parts = []
                if v == ")":
                    break
            else:
                depth += (v == "(") - (v == ")")
                parts.append((k, v, start, end))
        out.append(Entry(value, tuple(args), line))
    return out


def _argument(parts, text, where):
    if not parts:
        raise TableError(f"{where}: an empty argument")
    kinds = {k for k, *_ in parts}
    if kinds == {"string"}:
        return "".join(_unquote(v, where) for _, v, *_ in parts)
    if len(parts) == 1 and kinds == {"ident"}:
        return Ident(parts[0][1])
    if len(parts) == 1 and kinds == {"number"}:
        return int(parts[0][1].rstrip("uUlL"), 0)
    if "string" in kinds:
        raise TableError(f"{where}: strings mixed with other tokens in one argument")
    return Expr(text[parts[0][2] : parts[-1][3]])


def entries(path):
    """The macro calls of the table file ``path``."""
    from pathlib import Path

    return parse(Path(path).read_text(), str(path))
