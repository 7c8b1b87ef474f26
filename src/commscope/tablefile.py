"""Input tables given on the command line: CSV or Parquet, by suffix.

One reader for every command that takes a table file (``stats``, ``model pattern``,
``model partitioned``): only regular files are opened (a FIFO or device would block),
and a CSV still being written has its incomplete last line left out with a warning.
"""

from .errors import InputError
from .paths import require_regular_file
from .runs import read_csv_table
from .lazy import lazy

pd = lazy("pandas")


PARQUET_SUFFIXES = (".parquet", ".pq")


def read_table(path):
    """A DataFrame from ``path`` (Parquet by suffix, else CSV); InputError naming the file.

    A table of a run directory (``RUN/maxima.parquet``) is read as the run reads it
    (``Run.table``): its columns, row key and checks, and a stopped run's complete points
    only; every reader of a run's table follows the same rule."""
    p = require_regular_file(path)
    run_table = _run_table(p)
    if run_table is not None:
        return run_table
    if p.suffix.lower() in PARQUET_SUFFIXES:
        try:
            return pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types for a malformed file
            raise InputError(path, None, f"cannot read as Parquet ({exc})") from None
    return read_csv_table(p)


def _run_table(p):
    """The table ``p`` read through its run, when ``p`` is a declared table of a run
    directory (its parent holds meta.json); None otherwise."""
    from pathlib import Path
    from .kinds import TABLE_COLUMNS, TABLE_KEYS
    from .runs import open_run

    p = Path(p)
    if p.suffix.lower() != ".parquet" or not (p.parent / "meta.json").is_file():
        return None
    run = open_run(p.parent)  # a stopped run says how much of it is used
    if (run.kind, p.stem) not in TABLE_COLUMNS and (run.kind, p.stem) not in TABLE_KEYS:
        return None
    return run.table(p.stem)
