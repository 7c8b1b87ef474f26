#!/usr/bin/env python3
"""How easy the code is to live in, at a git revision: the files each benchmark occupies
among the places a benchmark is registered, and the longest functions (Python and C).

    scripts/house_figures.py [REV ...]      # default: HEAD; several revs side by side

Reads the revisions with `git show`/`git ls-tree` (nothing is checked out or built).
"""

import argparse
import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("pingpong", "hvpingpong", "mtmatch", "multirate", "threads", "partitioned", "bsp")

# The places a benchmark can be written into (issue 34's list plus the descriptor), and
# how to see it there: its own file, or a mention of its name in a shared one.
OWN_FILES = (
    "native/bench/{b}.c",
    "src/commscope/benchspec/{b}.py",
    "src/commscope/bench/{b}.py",
    "src/commscope/commands/bench_{b}.py",
    "src/commscope/report/sections/{b}.py",
)
SHARED_FILES = (
    "src/commscope/bench/__init__.py",
    "src/commscope/kinds.py",
    "src/commscope/schemas/run-meta.json",
    "src/commscope/study.py",
    "tests/fuzzkit.py",
    "tests/conftest.py",
)
_C_FUNCTION = re.compile(r"^[A-Za-z_][\w \*]*\b(\w+)\s*\([^;]*$")


def git(rev, *args):
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    ).stdout


def files_at(rev):
    return set(git(rev, "ls-tree", "-r", "--name-only", rev).split())


def mentions(path, text, name):
    """A shared file names a benchmark when it holds its name as a value: a string that is
    the name exactly (a kind), a JSON key or value, or a module in an import; prose that
    happens to use the word ("threads") does not count, nor a JSON key that is no kind."""
    if path.endswith(".json"):
        return name in _json_words(json.loads(text))
    words = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    importing = False
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string in ("import", "from"):
            importing = True
        elif tok.type in (tokenize.NEWLINE, tokenize.NL):
            importing = False
        elif tok.type == tokenize.NAME and importing:
            words.add(tok.string)
        elif tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                words.add(value)
    return name in words


def _json_words(doc):
    """A kind in a JSON Schema: a "const" value or a definition's name."""
    if isinstance(doc, list):
        return {w for v in doc for w in _json_words(v)}
    if not isinstance(doc, dict):
        return set()
    words = set(doc.get("$defs", {}))
    if isinstance(doc.get("const"), str):
        words.add(doc["const"])
    return words | {w for v in doc.values() for w in _json_words(v)}


def benchmark_files(rev):
    tree = files_at(rev)
    shared = {p: git(rev, "show", f"{rev}:{p}") for p in SHARED_FILES if p in tree}
    out = {}
    for b in BENCHMARKS:
        own = [f.format(b=b) for f in OWN_FILES if f.format(b=b) in tree]
        out[b] = own + [p for p, text in shared.items() if mentions(p, text, b)]
    return out


def python_functions(path, text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [
        (n.end_lineno - n.lineno + 1, f"{path}:{n.lineno} {n.name}")
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def c_functions(path, text):
    """Functions defined at column 0 whose body closes with a "}" at column 0."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = _C_FUNCTION.match(lines[i])
        if m and not lines[i].startswith(("static const", "typedef", "#", "struct ")):
            j = i
            while j < len(lines) and not lines[j].startswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and lines[j].startswith("{"):
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                out.append((k - i + 1, f"{path}:{i + 1} {m.group(1)}"))
                i = k
        i += 1
    return out


def longest_functions(rev, most):
    found = []
    for p in sorted(files_at(rev)):
        if not (p.startswith("src/") or p.startswith("native/")):
            continue
        if p.endswith(".py"):
            found += python_functions(p, git(rev, "show", f"{rev}:{p}"))
        elif p.endswith(".c"):
            found += c_functions(p, git(rev, "show", f"{rev}:{p}"))
    return sorted(found, reverse=True)[:most]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("revs", nargs="*", default=["HEAD"])
    ap.add_argument("--most", type=int, default=10, help="how many longest functions")
    ap.add_argument("--quick", action="store_true", help="the same (make bench QUICK=1)")
    args = ap.parse_args(argv)
    for rev in args.revs:
        label = git(rev, "rev-parse", "--short", rev).strip() or rev
        print(f"== {rev} ({label})")
        per = benchmark_files(rev)
        print("files a benchmark occupies (of the places one is registered):")
        for b, files in per.items():
            print(f"  {b:12s} {len(files):2d}  {', '.join(Path(f).name for f in files)}")
        counts = [len(f) for f in per.values()]
        print(f"  range {min(counts)}-{max(counts)}")
        print("longest functions (src/, native/), lines:")
        for n, where in longest_functions(rev, args.most):
            print(f"  {n:4d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
