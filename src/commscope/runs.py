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

import contextlib
import datetime as _dt
import io
import json
import os
import platform
import shlex
import sys
from pathlib import Path

from . import __version__
from .errors import InputError
from . import machine_load
from .kinds import (
    DERIVED_COLUMNS,
    LATER_COLUMNS,
    OPTIONAL_COLUMNS,
    POINTS,
    TABLE_CHECKS,
    TABLE_COLUMNS,
    TABLE_KEYS,
    TABLE_VALUES,
)
from .paths import atomic_output, require_regular_file, write_text_atomic
from .schemas import validate
from .lazy import lazy

pd = lazy("pandas")


SCHEMA = "commscope.run"
SCHEMA_VERSION = 1

#: meta.json is described by src/commscope/schemas/run-meta.json (docs/schemas/).

STATUSES = ("running", "complete", "failed", "interrupted")


#: Required columns of each kind's tables, and the points a benchmark plans: see kinds.py.
def expand_run_paths(paths):
    """Run directories named directly, or every run directory below a folder."""
    out = []
    for p in map(Path, paths):
        if (p / "meta.json").exists():
            out.append(p)
        elif p.is_dir():
            found = sorted(q.parent for q in p.glob("*/meta.json"))
            if not found:
                raise InputError(p, None, "holds no run directories (no */meta.json)")
            out.extend(found)
        else:
            raise InputError(p, None, "no such run directory")
    return out


def process_start_ticks(pid):
    """When ``pid`` started (clock ticks after boot; None off Linux): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _is_zombie(pid):
    """True when ``pid`` has exited but was not reaped yet (its parent was killed too)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def process_alive(pid, start_ticks=None):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if _is_zombie(pid):
        return False
    return start_ticks is None or process_start_ticks(pid) in (None, start_ticks)


#: Space set aside in every run directory being written, released for the final
#: meta.json: a run that filled its disk can still say so.
RESERVE = ".space-reserve"
RESERVE_BYTES = 64 << 10


def _reserve_space(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except (OSError, AttributeError):  # no fallocate here, or the disk is full already
        pass
    finally:
        os.close(fd)


def describe_os_error(exc):
    """``no space left on device: <file>``: what failed, in the run's words."""
    what = (exc.strerror or str(exc)).lower()
    return f"{what}: {exc.filename}" if exc.filename else what


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
        if name is not None and (not name or name.startswith(".") or "/" in name or os.sep in name):
            raise InputError(
                "--name",
                None,
                f"{name!r} must be a plain directory name "
                "(no path separators, not starting with '.')",
            )
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
                    raise InputError(
                        path, None, "run directory exists; not overwriting it"
                    ) from None
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
            # who writes this run: a reader finding "running" with this process gone
            # knows the run was interrupted (killed without a chance to say so)
            "commscope_pid": os.getpid(),
            "commscope_host": platform.node(),
            "commscope_pid_start": process_start_ticks(os.getpid()),
            "topology": {},
            "mpi": {},
            "launch": {},
            "placement": [],
            "python": platform.python_version(),
            # how busy the machine was: the report warns when others used it (machine_load)
            "load": {"start": machine_load.sample()},
        }
        run = cls(path, meta)
        run.save_meta()
        _reserve_space(path / RESERVE)
        return run

    @property
    def raw_dir(self):
        return self.path / "raw"

    @contextlib.contextmanager
    def removed_if_refused(self):
        """Around what comes between creating a run and starting its job: a launch refused
        there (a bad option, no launcher) leaves no run directory marked running."""
        try:
            yield self
        except BaseException:
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def save_meta(self):
        _write_json_atomic(self.path / "meta.json", self.meta)

    def write_table(self, table, df):
        """Write ``<table>.parquet`` atomically."""
        with atomic_output(self.path / f"{table}.parquet") as tmp:
            df.to_parquet(tmp, index=False)

    def finish(self, status="complete", **extra):
        """Convert raw CSV tables to Parquet, stamp the end time and status.

        A table that cannot be written (full disk) leaves its raw CSV as the table,
        the run "failed" with the reason, and the error raised once meta.json says so
        (the space reserved at creation is released for that last write).
        """
        problem = None
        for table in self._raw_tables():
            if not (self.path / f"{table}.parquet").exists():
                try:
                    self.write_table(table, self._read_raw(table))
                except OSError as exc:
                    problem = exc
                    break
        if problem is not None:
            status = "failed" if status == "complete" else status
            extra.setdefault("failure", describe_os_error(problem))
        with contextlib.suppress(FileNotFoundError):
            (self.path / RESERVE).unlink()
        self.meta.update(extra)
        self.meta["status"] = status
        self.meta["end_time"] = utc_now()
        load = self.meta.get("load")
        if isinstance(load, dict):
            load["end"] = machine_load.sample()
            load["during"] = machine_load.between(load.get("start"), load["end"])
        self.save_meta()
        if problem is not None:
            raise problem
        return self

    # -- reading -----------------------------------------------------------
    def tables(self):
        """The tables this run has, and those it should have (a profile's conversion lists
        the tables it wrote): a reader asking for one that is gone hears so, by name,
        rather than that the run never had it."""
        names = {p.stem for p in self.path.glob("*.parquet")}
        return sorted(names | set(self._raw_tables()) | self._listed_tables())

    def _listed_tables(self):
        listed = (
            (self.meta.get("profile") or {}).get("tables")
            if self.kind == "profile" and isinstance(self.meta.get("profile"), dict)
            else None
        )
        return {t for t in listed if isinstance(t, str)} if isinstance(listed, list) else set()

    def _present(self):
        return {p.stem for p in self.path.glob("*.parquet")} | set(self._raw_tables())

    def _raw_tables(self):
        """Tables the native program wrote (in raw/ and in raw/resume-<k>/ of a resumed run)."""
        found = {p.stem for p in self.raw_dir.glob("*.csv")}
        found |= {p.stem for p in self.raw_dir.glob("resume-*/*.csv")}
        # per-rank raw files (comms.<rank>.csv) are read by their own converters
        return sorted(t for t in found - {"placement"} if "." not in t)

    def table_file(self, table):
        """The file ``table`` is read from (its Parquet, else its first raw CSV), to name
        in an error about its values."""
        pq = self.path / f"{table}.parquet"
        segments = [] if pq.exists() else raw_segments(self.raw_dir, table)
        return segments[0] if segments else pq

    def table(self, table, derived=True):
        """The table as a DataFrame (Parquet, else the raw CSV of a killed run).
        The columns added after a job (kinds.DERIVED_COLUMNS) are required of a complete
        run; ``derived=False``: not even then, for the step that adds them."""
        pq, source = self.path / f"{table}.parquet", self.table_file(table)
        if source != pq:
            if self.meta.get("status") == "complete" and (self.path, pq) not in _WARNED:
                # the run converted it: the Parquet is gone, the raw rows are the same data
                _WARNED.add((self.path, pq))
                print(
                    f"commscope: warning: {pq}: missing, though the run is complete; read "
                    f"from {source}",
                    file=sys.stderr,
                )
            df = self._read_raw(table)
        elif not pq.exists():
            if self.kind == "profile":  # never converted, or a table the conversion wrote
                from .kinds import profile_table_gone, profile_tables_expected

                want, problem = profile_tables_expected(self, self._present())
                if problem:
                    raise InputError(*problem)
                if table in want:
                    raise InputError(*profile_table_gone(self, table))
            raise InputError(pq, None, "missing (no such table in this run)")
        else:
            require_regular_file(pq)
            try:
                df = pd.read_parquet(pq)
            except Exception as exc:  # pyarrow raises several types for bad files
                raise InputError(pq, None, f"not a readable Parquet file ({exc})") from None
        for col, value in LATER_COLUMNS.get((self.kind, table), {}).items():
            if col not in df.columns:  # written before the column existed: not measured
                df[col] = value
        _check_columns(df, TABLE_COLUMNS.get((self.kind, table)), source)
        _check_columns(
            df,
            {
                c: k
                for c, k in OPTIONAL_COLUMNS.get((self.kind, table), {}).items()
                if c in df.columns
            },
            source,
        )
        derived = derived and DERIVED_COLUMNS.get((self.kind, table))
        if derived and self.meta.get("status") == "complete":  # a stopped run has none yet
            if source != pq:  # a raw CSV never has them
                raise InputError(
                    pq,
                    None,
                    "missing: the run is complete, but its raw CSV "
                    f"lacks the columns computed after the job ({', '.join(derived)})",
                )
            _check_columns(df, derived, source)
        for col, allowed in TABLE_VALUES.get((self.kind, table), {}).items():
            bad = df[col][~df[col].isin(allowed)]
            if len(bad):
                raise InputError(source, col, f"{bad.iloc[0]!r} is not one of {', '.join(allowed)}")
        key = TABLE_KEYS.get((self.kind, table))
        if key:
            _check_key(df, key, source)
        for check in TABLE_CHECKS.get((self.kind, table), ()):
            _apply_check(df, check, key, source)
        if self.kind == "profile" and not len(df):
            _check_profile_rows(self, table, source)
        points = POINTS.get(self.kind)
        if points and points.table == table:
            if self.status != "complete":
                done = self._planned_or_none(lambda: {k for k, _ in self.complete_points(df)})
                if done is not None:
                    keys = list(zip(*(df[c] for c in points.key)))
                    df = df[[k in done for k in keys]].reset_index(drop=True)
            else:
                self._check_complete(df, points, source)
        return df

    def _check_complete(self, df, points, source):
        """A complete run has rows, and (but partitioned, whose methods an MPI may lack)
        every point it planned: fewer is a damaged or cut table, not a smaller run."""
        if not len(df):
            raise InputError(
                source, None, "no rows, though the run is complete (damaged or cut short)"
            )
        if self.kind == "partitioned":
            return
        planned = self._planned_or_none(lambda: points.planned(self.meta["parameters"]))
        done = self._planned_or_none(lambda: self.complete_points(df))
        if planned is not None and done is not None and len(done) < len(planned):
            raise InputError(
                source,
                ",".join(points.key),
                f"only {len(done)} of {len(planned)} {points.unit} complete, though "
                "the run is complete (rows missing: damaged or cut short)",
            )

    def check(self):
        """Read every table the run has (and, for a profile, those it should have): one
        InputError naming the file for the first that is damaged, missing or unreadable.
        A reader that shows a run whole (report, model holds) calls it first, so no part
        of it is silently left out."""
        for table in self.expected_tables():
            self.table(table)
        return self

    def expected_tables(self):
        """Tables this run has, and those its meta.json says it should have (a profile
        lists the tables its conversion wrote; one whose tables were never converted is
        refused, saying how to convert it)."""
        have = self._present()
        if self.kind == "profile":
            from .kinds import profile_tables_expected

            want, problem = profile_tables_expected(self, have)
            if problem:
                raise InputError(*problem)
            have |= want
        return sorted(have)

    def _planned_or_none(self, compute):
        """``compute()``, or None when the parameters do not say what was planned."""
        try:
            return compute()
        except (KeyError, TypeError, ValueError):
            return None

    # -- state -------------------------------------------------------------
    @property
    def status(self):
        """The run's real state: a "running" run whose commscope is gone is "interrupted"."""
        status = self.meta["status"]
        if status == "running" and not self._writer_may_run():
            return "interrupted"
        return status

    def _writer_may_run(self):
        pid = self.meta.get("commscope_pid")
        if not isinstance(pid, int) or self.meta.get("commscope_host") != platform.node():
            return True  # written elsewhere (or by an old commscope): cannot tell
        return process_alive(pid, self.meta.get("commscope_pid_start"))

    def complete_points(self, df=None):
        """``(key, rows)`` of the planned points whose rows are all written, in order."""
        points = POINTS[self.kind]
        planned = points.planned(self.meta["parameters"])
        if df is None:
            df = self._raw_or_parquet(points.table)
        counts = df.groupby(list(points.key)).size().to_dict() if len(df) else {}
        return [(k, n) for k, n in planned if counts.get(k if len(k) > 1 else k[0], 0) >= n]

    def _raw_or_parquet(self, table):
        pq = self.path / f"{table}.parquet"
        if pq.exists():
            return pd.read_parquet(pq)
        return self._read_raw(table)

    def _read_raw(self, table):
        """The raw CSV segments of ``table`` as one frame; declared text columns stay text
        (an empty note read as NaN would be stored as a float column)."""
        df = _read_segments(self.raw_dir, table)
        for col, kind in (TABLE_COLUMNS.get((self.kind, table)) or {}).items():
            if kind == "O" and col in df.columns:
                df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
        return df

    def progress(self):
        """``(done, planned, unit)`` points, or None when the kind plans none."""
        points = POINTS.get(self.kind)
        if points is None:
            return None
        planned = self._planned_or_none(lambda: points.planned(self.meta["parameters"]))
        if planned is None:
            return None
        try:
            done = len(self.complete_points())
        except (InputError, OSError, ValueError):  # unreadable table: nothing usable
            done = 0
        return done, len(planned), points.unit

    def state_note(self):
        """One line for an unfinished run: what happened and how much is complete."""
        status = self.status
        if status == "complete":
            return None
        what = {
            "running": "still running"
            + (f" on {self.meta.get('commscope_host')}" if self.meta.get("commscope_host") else ""),
            "interrupted": "interrupted",
            "failed": "failed",
        }[status]
        if status == "interrupted" and isinstance(self.meta.get("interrupted"), dict):
            what += f" by {self.meta['interrupted'].get('signal')} at {self.meta['interrupted'].get('time')}"
        elif status == "interrupted":
            what += " (its commscope process is gone)"
        elif status == "failed" and self.meta.get("failure"):
            what += f": {self.meta['failure']}"
        progress = self.progress()
        if progress:
            what += f"; {progress[0]} of {progress[1]} {progress[2]} complete, only those are used"
        return what

    @property
    def kind(self):
        return self.meta["kind"]

    def __repr__(self):
        return f"Run({str(self.path)!r}, kind={self.kind!r}, status={self.status!r})"


def raw_segments(raw_dir, table):
    """``raw/<table>.csv`` then ``raw/resume-<k>/<table>.csv`` in k order, those that exist."""
    resumed = sorted(
        Path(raw_dir).glob(f"resume-*/{table}.csv"),
        key=lambda p: (
            int(p.parent.name.split("-")[1]) if p.parent.name.split("-")[1].isdigit() else 0
        ),
    )
    first = Path(raw_dir) / f"{table}.csv"
    return ([first] if first.exists() else []) + resumed


def _read_segments(raw_dir, table):
    frames = [read_csv_table(p) for p in raw_segments(raw_dir, table)]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def read_csv_table(path):
    """Read a CSV that may still be growing (a benchmark running, or killed mid-line).

    A last line without its newline is a row being written: it is left out with a
    warning naming the file and the line.  Anything but a regular file is refused
    before it is opened (see :func:`~commscope.paths.require_regular_file`).
    """
    text = require_regular_file(path).read_bytes()
    if text and not text.endswith(b"\n"):
        line = text.count(b"\n") + 1
        print(
            f"commscope: warning: {path}: line {line} is incomplete (still being written, "
            "or its writer was stopped); ignored",
            file=sys.stderr,
        )
        text = text[: text.rfind(b"\n") + 1]
    try:
        return pd.read_csv(io.BytesIO(text))
    except pd.errors.EmptyDataError:
        raise InputError(path, None, "empty file (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"malformed CSV ({exc})") from None


def _check_profile_rows(run, table, source):
    """A profile whose ranks left counters has rows in its core tables (every rank counts
    its MPI_Init): none there is a damaged table, not a program without MPI calls."""
    from .kinds import PROFILE_CORE_TABLES

    ranks = (
        (run.meta.get("profile") or {}).get("ranks")
        if isinstance(run.meta.get("profile"), dict)
        else None
    )
    count = ranks.get("count") if isinstance(ranks, dict) else None
    if table in PROFILE_CORE_TABLES and isinstance(count, int) and count > 0:
        raise InputError(
            source,
            None,
            f"no rows, though {count} rank{'s' if count > 1 else ''} "
            "left counters (meta.json profile.ranks.count): damaged "
            "or cut short",
        )


def _row_label(row, key):
    return ", ".join(f"{k} {row[k]}" for k in key)


def _check_key(df, key, source):
    """Two rows of one key are damage (every table declares its key in kinds.py)."""
    for k in key:
        if k not in df.columns:
            raise InputError(source, k, "required column is missing (it identifies a row)")
    dup = df.duplicated(list(key))
    if dup.any():
        first = df[dup].iloc[0]
        raise InputError(
            source,
            ",".join(key),
            f"{int(dup.sum())} row{'s' if dup.sum() > 1 else ''} repeat another "
            f"row's key (the first: {_row_label(first, key)}): the table is "
            "damaged (rows counted twice)",
        )


def _apply_check(df, check, key, source):
    """A rule between columns (kinds.TABLE_CHECKS) that a reader relies on."""
    try:
        bad = check.bad(df)
    except (TypeError, ValueError, KeyError):  # a column of the wrong kind: the types say so
        return
    bad = bad.fillna(False).astype(bool) if hasattr(bad, "fillna") else bad
    if bad.any():
        row = df[bad].iloc[0]
        where = f" ({_row_label(row, key)})" if key else ""
        raise InputError(
            source,
            check.column,
            f"must be {check.rule}; {int(bad.sum())} row{'s' if bad.sum() > 1 else ''} "
            f"are not{where}: {check.column} = {row[check.column]}",
        )


def missing_names(values):
    """Which of a column of names are missing: null, or the text "nan" that a missing
    number becomes when a table stores it as text (it would be shown as a name)."""
    return values.isna() | (values.astype(str) == "nan")


def _check_columns(df, columns, source):
    if not columns:
        return
    for col, kind in columns.items():
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
        dkind = df[col].dtype.kind
        ok = {"i": "iu", "p": "iu", "f": "iuf", "n": "iuf", "O": "OSUT", "b": "b"}.get(
            kind, dkind
        )  # "*": any
        if dkind not in ok and not (kind == "O" and str(df[col].dtype).startswith("str")):
            what = {"i": "integer", "p": "integer", "O": "text", "b": "true/false"}.get(
                kind, "number"
            )
            raise InputError(source, col, f"expected {what} values, found dtype {df[col].dtype}")
        if kind in "ipfb*" and len(df) and df[col].isna().any():
            raise InputError(source, col, "has missing or non-numeric values")
        if kind == "p" and len(df) and (df[col] <= 0).any():
            raise InputError(source, col, f"must be positive, found {df[col].min()}")
        if kind in "O*" and len(df) and (df[col].astype(str) == "nan").any():
            raise InputError(source, col, 'holds the text "nan" (a missing number), not a name')


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
        raise InputError(
            source,
            "schema_version",
            f"unknown version {version} (this commscope reads version {SCHEMA_VERSION})",
        )
    validate(meta, "run-meta", source)  # every field's type, parameters per kind


_WARNED = set()  # one warning per run and state, however often a command opens it


#: Names that are files in a run directory (a directory under such a name is refused).
FILE_SUFFIXES = (".json", ".parquet", ".csv", ".bin", ".snap", ".txt")


def refuse_special_files(path):
    """Every file of a run directory and of its raw/ is a regular file, checked by
    name with stat, never by opening: a named pipe would block a reader forever and a
    device stream forever. One InputError names the first that is not."""
    for folder in (Path(path), Path(path) / "raw"):
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise InputError(folder, None, f"cannot be listed: {exc.strerror}") from None
        for name in names:
            entry = folder / name
            if name.endswith(FILE_SUFFIXES) or not entry.is_dir():
                require_regular_file(entry)


def open_run(path, warn=True):
    """Open and validate a run directory; say on stderr when it is not complete."""
    path = Path(path)
    meta_path = path / "meta.json"
    if not path.is_dir():
        raise InputError(path, None, "not a run directory (no such directory)")
    if not meta_path.exists() and not meta_path.is_symlink():
        raise InputError(meta_path, None, "missing: not a commscope run directory")
    require_regular_file(meta_path)
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(
            meta_path, f"line {exc.lineno}", f"malformed or truncated JSON ({exc.msg})"
        ) from None
    except UnicodeDecodeError:
        raise InputError(meta_path, None, "not a text file") from None
    validate_meta(meta, meta_path)
    refuse_special_files(path)
    run = Run(path, meta)
    note = run.state_note()
    if note and warn and (path.resolve(), note) not in _WARNED:
        _WARNED.add((path.resolve(), note))
        print(f"commscope: warning: {path}: {note}", file=sys.stderr)
    return run
