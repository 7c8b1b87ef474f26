"""Run directories: ``meta.json`` plus one Parquet table per kind of sample.

Layout (documented in docs/run-directory.md)::

    <run>/meta.json          what ran, where, when (schema below)
    <run>/<table>.parquet    tidy samples, units in column names
    <run>/raw/<table>.csv    what the native program wrote while running

Native programs write CSV into ``raw/`` row by row, so a run killed half way keeps
the samples already measured; ``finish()`` converts them to Parquet.  Readers use
the Parquet table when present and fall back to the raw CSV of an unfinished run.

Readers validate: a malformed, truncated or unknown-version file raises
:class:`~commscope.errors.InputError` naming the file and the field.  Writers never
overwrite an existing run directory.
"""

import datetime as _dt
import io
import json
import os
import platform
import shlex
import sys
from pathlib import Path

import pandas as pd

from . import __version__
from .errors import InputError
from .paths import write_text_atomic

SCHEMA = "commscope.run"
SCHEMA_VERSION = 1

#: Fields every meta.json has, with their JSON types.
REQUIRED_META = {
    "schema": str,
    "schema_version": int,
    "commscope_version": str,
    "kind": str,
    "command_line": str,
    "status": str,            # "running", "complete" or "failed"
    "start_time": str,        # ISO 8601, UTC
    "end_time": (str, type(None)),
    "parameters": dict,
    "seeds": dict,
    "hosts": list,
    "topology": dict,
    "mpi": dict,              # name, flavor, mpicc, mpiexec, library_version
    "launch": dict,           # argv, env added, notes (why each flag was set)
    "placement": list,        # one entry per rank: host, cpu, socket, core, numa
}

#: Required columns (name -> pandas dtype kind) of known tables, by run kind.
#: Benchmarks register their tables with :func:`register_table`.
TABLE_COLUMNS = {}


def register_table(kind, table, columns):
    """Declare the required columns of ``table`` in runs of ``kind``.

    ``columns`` maps a column name to a dtype kind: "i" integer, "f" float
    (integers accepted), "O" string.
    """
    TABLE_COLUMNS[(kind, table)] = dict(columns)


def utc_now():
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _write_json_atomic(path, obj):
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


class Run:
    """An open run directory (read or being written)."""

    def __init__(self, path, meta):
        self.path = Path(path)
        self.meta = meta

    # -- writing -----------------------------------------------------------
    @classmethod
    def create(cls, root, kind, parameters, *, seeds=None, name=None, argv=None):
        """Make a new run directory under ``root`` and write its initial meta.json.

        The directory name is ``<UTC timestamp>-<kind>`` (or ``name``); an
        existing directory is never reused.
        """
        if name is not None and (not name or name.startswith(".") or "/" in name
                                 or os.sep in name):
            raise InputError("--name", None, f"{name!r} must be a plain directory name "
                             "(no path separators, not starting with '.')")
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        base = name or f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}-{kind}"
        path = root / base
        suffix = 1
        while True:
            try:
                path.mkdir()
                break
            except FileExistsError:
                if name:
                    raise InputError(path, None, "run directory exists; not overwriting it")
                suffix += 1
                path = root / f"{base}-{suffix}"
        (path / "raw").mkdir()
        argv = sys.argv if argv is None else argv
        meta = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "commscope_version": __version__,
            "kind": kind,
            "command_line": " ".join(shlex.quote(a) for a in argv),
            "status": "running",
            "start_time": utc_now(),
            "end_time": None,
            "parameters": dict(parameters),
            "seeds": dict(seeds or {}),
            "hosts": [platform.node()],
            "topology": {},
            "mpi": {},
            "launch": {},
            "placement": [],
            "python": platform.python_version(),
        }
        run = cls(path, meta)
        run.save_meta()
        return run

    @property
    def raw_dir(self):
        return self.path / "raw"

    def save_meta(self):
        _write_json_atomic(self.path / "meta.json", self.meta)

    def write_table(self, table, df):
        """Write ``<table>.parquet`` atomically."""
        tmp = self.path / f".{table}.parquet.tmp"
        df.to_parquet(tmp, index=False)
        os.replace(tmp, self.path / f"{table}.parquet")

    def finish(self, status="complete", **extra):
        """Convert raw CSV tables to Parquet, stamp the end time and status."""
        for csv in sorted(self.raw_dir.glob("*.csv")):
            if csv.stem == "placement" or "." in csv.stem:
                continue  # per-rank raw files (comms.<rank>.csv) are read by their own converters
            if not (self.path / f"{csv.stem}.parquet").exists():
                self.write_table(csv.stem, _read_csv(csv))
        self.meta.update(extra)
        self.meta["status"] = status
        self.meta["end_time"] = utc_now()
        self.save_meta()
        return self

    # -- reading -----------------------------------------------------------
    def tables(self):
        names = {p.stem for p in self.path.glob("*.parquet")}
        names |= {p.stem for p in self.raw_dir.glob("*.csv") if p.stem != "placement"}
        return sorted(names)

    def table(self, table):
        """The table as a DataFrame (Parquet, else the raw CSV of a killed run)."""
        from . import bench  # noqa: F401  (registers every benchmark's table schemas)
        pq = self.path / f"{table}.parquet"
        if pq.exists():
            try:
                df = pd.read_parquet(pq)
            except Exception as exc:  # pyarrow raises several types for bad files
                raise InputError(pq, None, f"not a readable Parquet file ({exc})") from None
            source = pq
        else:
            csv = self.raw_dir / f"{table}.csv"
            if not csv.exists():
                raise InputError(self.path, table, "no such table in this run")
            df, source = _read_csv(csv), csv
        _check_columns(df, TABLE_COLUMNS.get((self.kind, table)), source)
        return df

    @property
    def kind(self):
        return self.meta["kind"]

    def __repr__(self):
        return f"Run({str(self.path)!r}, kind={self.kind!r}, status={self.meta['status']!r})"


def _read_csv(path):
    """Read a raw CSV; a last line without its newline (writer killed mid-line) is dropped."""
    text = Path(path).read_bytes()
    if text and not text.endswith(b"\n"):
        text = text[: text.rfind(b"\n") + 1]
    try:
        return pd.read_csv(io.BytesIO(text))
    except pd.errors.EmptyDataError:
        raise InputError(path, None, "empty file (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"malformed CSV ({exc})") from None


def _check_columns(df, columns, source):
    if not columns:
        return
    for col, kind in columns.items():
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
        dkind = df[col].dtype.kind
        ok = {"i": "iu", "f": "iuf", "O": "OSUT"}.get(kind, dkind)
        if dkind not in ok and not (kind == "O" and str(df[col].dtype).startswith("str")):
            raise InputError(source, col, f"expected {'integer' if kind == 'i' else 'number' if kind == 'f' else 'text'} values, "
                                          f"found dtype {df[col].dtype}")
        if kind in "if" and len(df) and df[col].isna().any():
            raise InputError(source, col, "has missing or non-numeric values")


def validate_meta(meta, source):
    """Check a parsed meta.json; raise InputError naming ``source`` and the field."""
    if not isinstance(meta, dict):
        raise InputError(source, None, "top level must be a JSON object")
    if meta.get("schema") != SCHEMA:
        raise InputError(source, "schema", f"expected {SCHEMA!r}, found {meta.get('schema')!r}")
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(source, "schema_version", "missing or not an integer")
    if version != SCHEMA_VERSION:
        raise InputError(source, "schema_version",
                         f"unknown version {version} (this commscope reads version {SCHEMA_VERSION})")
    for key, typ in REQUIRED_META.items():
        if key not in meta:
            raise InputError(source, key, "required field is missing")
        if not isinstance(meta[key], typ):
            raise InputError(source, key, f"has the wrong type ({type(meta[key]).__name__})")
    if meta["status"] not in ("running", "complete", "failed"):
        raise InputError(source, "status", f"unknown status {meta['status']!r}")


def open_run(path):
    """Open and validate a run directory."""
    path = Path(path)
    meta_path = path / "meta.json"
    if not path.is_dir():
        raise InputError(path, None, "not a run directory (no such directory)")
    if not meta_path.exists():
        raise InputError(meta_path, None, "missing: not a commscope run directory")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(meta_path, f"line {exc.lineno}", f"malformed or truncated JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise InputError(meta_path, None, "not a text file") from None
    validate_meta(meta, meta_path)
    return Run(path, meta)
