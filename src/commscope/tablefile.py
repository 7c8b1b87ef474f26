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
    """A DataFrame from ``path`` (Parquet by suffix, else CSV); InputError naming the file."""
    p = require_regular_file(path)
    if p.suffix.lower() in PARQUET_SUFFIXES:
        try:
            return pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types for a malformed file
            raise InputError(path, None, f"cannot read as Parquet ({exc})") from None
    return read_csv_table(p)
