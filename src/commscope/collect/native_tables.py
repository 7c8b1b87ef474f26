"""The profiler's tables (native/profiler/*.def) as Python sees them.

counters.def (the counters), settings.def (COMMSCOPE_* settings and counter sets) and
layout.def (the counter files' binary records) are read with the build's own parser,
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
_TYPES = {"U32": ("<u4", "I"), "I32": ("<i4", "i"), "U64": ("<u8", "Q")}


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
    """(magic bytes, version) of a file header of layout.def (NODE, RANK, SNAP)."""
    for t, m, version, _ in rows("layout", "CS_FILE_MAGIC"):
        if t == tag:
            return m.encode(), version
    raise KeyError(tag)


def constant(name):
    for n, value, _ in rows("layout", "CS_CONSTANT"):
        if n == name:
            return value
    raise KeyError(name)


def metadata_keys(obj):
    """The keys of node.<n>.json's object ``obj`` ("layout", "canonical"), in order."""
    return tuple(key for o, key, _, _ in rows("layout", "CS_METADATA_VALUE") if o == obj)
