"""The profiler's tables (native/profiler/*.def) as Python sees them.

counters.def (the counters), settings.def (COMMSCOPE_* settings and counter sets) and
layout.def (the binary records of the counter files and the trace) are read with the build's own parser,
native/profiler/deftable.py, so the C code generated from a table and what Python
reads from it cannot drift apart.  Records become numpy dtype specs and struct formats
here; the reader, the synthetic writer and the docs take them from this module.
"""

import functools
import importlib.util
import struct
from typing import NamedTuple

from ..paths import native_dir

#: layout.def's field types: (numpy, struct) codes, little-endian.
_TYPES = {
    "U8": ("u1", "B"),
    "U16": ("<u2", "H"),
    "U32": ("<u4", "I"),
    "I32": ("<i4", "i"),
    "U64": ("<u8", "Q"),
    "I64": ("<i8", "q"),
    "F64": ("<f8", "d"),
}


@functools.cache
def _parser():
    # loaded by path: it lives beside the build's generator, which any python3 runs
    # (the build must not need commscope installed)
    path = native_dir() / "profiler" / "deftable.py"
    spec = importlib.util.spec_from_file_location("commscope_deftable", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Entry(NamedTuple):
    macro: str
    args: tuple  # int or str per argument
    line: int


def _plain(arg):
    # the parser's str subclasses (identifier, expression) belong to a module loaded by
    # path, which pickle cannot import: the converter's worker processes get plain str
    return str(arg) if isinstance(arg, str) else arg


@functools.cache
def table(name):
    """The entries (macro, args, line) of native/profiler/<name>.def."""
    path = native_dir() / "profiler" / f"{name}.def"
    return tuple(
        Entry(e.macro, tuple(_plain(a) for a in e.args), e.line) for e in _parser().entries(path)
    )


def rows(name, macro):
    """The argument tuples of ``macro``'s entries in table ``name``."""
    return [e.args for e in table(name) if e.macro == macro]


def fields(record):
    """(field, type, count) of a record of layout.def, in order."""
    return [(f, t, n) for r, f, t, n, _ in rows("layout", "CS_FIELD") if r == record]


def record_dtype(record):
    """The numpy dtype spec of a layout.def record (a list: numpy is imported by the user)."""
    out = []
    for f, t, n in fields(record):
        if t == "CHAR":
            out.append((f, f"S{n}"))
        else:
            out.append((f, _TYPES[t][0]) if n == 1 else (f, _TYPES[t][0], (n,)))
    return out


def record_struct(record):
    """A struct.Struct of a layout.def record (char arrays as bytes)."""
    return struct.Struct(
        "<" + "".join(f"{n}s" if t == "CHAR" else _TYPES[t][1] * n for _, t, n in fields(record))
    )


def magic(tag):
    """(magic bytes, version) of a file header of layout.def (NODE, RANK, SNAP, TRACE)."""
    for t, m, version, _ in rows("layout", "CS_FILE_MAGIC"):
        if t == tag:
            return m.encode(), version
    raise KeyError(tag)


#: layout.def's field types as docs/profile.md writes them.
_DOC_TYPES = {"U8": "u8", "U16": "u16", "U32": "u32", "I32": "i32", "U64": "u64", "I64": "i64",
              "F64": "f64", "CHAR": "char"}  # fmt: skip


def trace_markdown():
    """docs/profile.md's table of the trace record and its events, from layout.def."""
    out = ["| offset | field | type | meaning |\n", "|---|---|---|---|\n"]
    at = 0
    for r, f, t, n, desc in rows("layout", "CS_FIELD"):
        if r != "trace_record":
            continue
        out.append(f"| {at} | {f} | {_DOC_TYPES[t]} | {desc} |\n")
        at += n if t == "CHAR" else struct.calcsize("<" + _TYPES[t][1]) * n
    out.append("\nThe events (`event`):\n\n| code | event | what it records |\n|---|---|---|\n")
    out += [f"| {code} | {name} | {desc} |\n" for name, code, desc in rows("layout", "CS_EVENT")]
    return "".join(out)


def events():
    """{code: name} of the trace's events (layout.def's CS_EVENT)."""
    return {code: name for name, code, _ in rows("layout", "CS_EVENT")}


def constant(name):
    for n, value, _ in rows("layout", "CS_CONSTANT"):
        if n == name:
            return value
    raise KeyError(name)


def metadata_keys(obj):
    """The keys of node.<n>.json's object ``obj`` ("layout", "canonical"), in order."""
    return tuple(key for o, key, _, _ in rows("layout", "CS_METADATA_VALUE") if o == obj)
