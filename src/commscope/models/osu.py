"""OSU micro-benchmark tables as a communication "link": latency and bandwidth at any size.

Two inputs are understood:

* the reference CSVs copied from Appendix A of the Dominguez-Trujillo thesis
  (``src/commscope/data/osu_*_lassen_quartz.csv``), with columns ``size_bytes``,
  ``<machine>_latency_us`` and ``<machine>_bandwidth_MBps`` for several machines;
* plain text as printed by ``osu_latency`` / ``osu_bw`` (a ``# OSU MPI ... Test`` header,
  a ``# Size  Latency (us)`` or ``# Size  Bandwidth (MB/s)`` column line, then rows).

Both become a DataFrame with ``size_bytes``, ``latency_s`` and ``bandwidth_Bps`` (bytes
per second; OSU's MB is 10^6 bytes), wrapped in :class:`OSUTable`, which interpolates in
log-log space and so can serve as the ``link`` of :mod:`commscope.models.partitioned`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..paths import require_regular_file
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


US = 1e-6  # microseconds -> seconds
MB = 1e6  # OSU prints MB/s with MB = 10^6 bytes


@dataclass
class OSUTable:
    """Measured latency/bandwidth per message size, interpolated log-log.

    Outside the measured range the nearest measured value is used (clamped, as
    ``numpy.interp`` does): bandwidth saturates at large sizes, and the latency column
    is used as a start-up cost in the postal model, as in Algorithm 1 of the thesis.
    """

    table: pd.DataFrame
    source: str = "osu"

    def __post_init__(self):
        t = self.table.sort_values("size_bytes").reset_index(drop=True)
        self.table = t
        self._logsize = np.log(t["size_bytes"].to_numpy(float))

    def _interp(self, column, size_bytes):
        values = self.table[column].to_numpy(float)
        if np.isnan(values).any():
            raise InputError(
                self.source,
                column,
                "no values in this table (give both an osu_latency and an osu_bw output)",
            )
        size = np.asarray(size_bytes, dtype=float)
        if np.any(size <= 0):
            raise InputError(self.source, "size_bytes", "sizes must be positive")
        return np.exp(np.interp(np.log(size), self._logsize, np.log(values)))

    def latency_s(self, size_bytes):
        """One-way latency (seconds) of a message of ``size_bytes`` (array-friendly)."""
        return self._interp("latency_s", size_bytes)

    def bandwidth_Bps(self, size_bytes):
        """Bandwidth (bytes/second) at ``size_bytes`` (array-friendly)."""
        return self._interp("bandwidth_Bps", size_bytes)


def _require_file(path):
    return require_regular_file(path)


def machines_in_reference_csv(path) -> list[str]:
    """Machine names present in a reference CSV (from its ``<machine>_latency_us`` columns)."""
    cols = pd.read_csv(_require_file(path), nrows=0).columns
    return [c[: -len("_latency_us")] for c in cols if c.endswith("_latency_us")]


def read_reference_csv(path, machine: str | None = None) -> pd.DataFrame:
    """Read a thesis-style CSV (``size_bytes, <machine>_latency_us, <machine>_bandwidth_MBps``).

    ``machine`` picks the column pair; it may be omitted only when the file holds one.
    Returns ``size_bytes, latency_s, bandwidth_Bps``.
    """
    p = _require_file(path)
    try:
        df = pd.read_csv(p)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise InputError(path, None, f"not a readable CSV ({exc})") from None
    if "size_bytes" not in df.columns:
        raise InputError(path, "size_bytes", "column missing")
    machines = machines_in_reference_csv(p)
    if machine is None:
        if len(machines) != 1:
            raise InputError(path, "machine", f"choose one of {machines} (--machine)")
        machine = machines[0]
    lat, bw = f"{machine}_latency_us", f"{machine}_bandwidth_MBps"
    for col in (lat, bw):
        if col not in df.columns:
            raise InputError(path, col, f"column missing; machines in file: {machines}")
    out = pd.DataFrame(
        {
            "size_bytes": pd.to_numeric(df["size_bytes"], errors="coerce"),
            "latency_s": pd.to_numeric(df[lat], errors="coerce") * US,
            "bandwidth_Bps": pd.to_numeric(df[bw], errors="coerce") * MB,
        }
    )
    _validate(out, path)
    return out


_SIZE_HEADER = re.compile(r"^#\s*Size\s+(.*)$", re.IGNORECASE)


def read_osu_text(path) -> pd.DataFrame:
    """Parse the text printed by ``osu_latency`` or ``osu_bw`` (or ``osu_bibw``).

    The column line decides the quantity: ``Latency (us)`` (also ``Avg Latency(us)``)
    becomes ``latency_s``; ``Bandwidth (MB/s)`` becomes ``bandwidth_Bps``. Only the first
    value column is used (OSU 7 appends tail-latency columns).
    """
    p = _require_file(path)
    kind, rows = None, []
    for lineno, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        m = _SIZE_HEADER.match(s)
        if m:
            head = m.group(1).lower()
            if "latency" in head:
                kind = "latency_s"
            elif "bandwidth" in head:
                if "mb/s" not in head:
                    raise InputError(path, "Bandwidth", f"unsupported unit in '{s}'")
                kind = "bandwidth_Bps"
            else:
                raise InputError(path, "Size", f"unknown column header '{s}'")
            continue
        if s.startswith("#"):
            continue
        if kind is None:
            raise InputError(path, f"line {lineno}", "data before the '# Size ...' header")
        parts = s.split()
        try:
            size, value = int(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            raise InputError(path, f"line {lineno}", f"expected 'size value', got '{s}'") from None
        rows.append((size, value))
    if kind is None or not rows:
        raise InputError(path, None, "no OSU '# Size ...' table found")
    scale = US if kind == "latency_s" else MB
    df = pd.DataFrame(rows, columns=["size_bytes", kind])
    df[kind] = df[kind] * scale
    other = "bandwidth_Bps" if kind == "latency_s" else "latency_s"
    df[other] = np.nan
    df = df[["size_bytes", "latency_s", "bandwidth_Bps"]]
    _validate(df, path, allow_nan=True)
    return df


def _validate(df, path, allow_nan=False):
    if df.empty:
        raise InputError(path, None, "table is empty")
    for col in df.columns:
        v = df[col].to_numpy(float)
        bad = ~np.isfinite(v) if not allow_nan or col == "size_bytes" else np.isinf(v)
        if bad.any():
            raise InputError(path, col, f"non-numeric value in row {int(np.argmax(bad)) + 1}")
        if (v[np.isfinite(v)] <= 0).any():
            raise InputError(path, col, "values must be positive")
    if df["size_bytes"].duplicated().any():
        raise InputError(path, "size_bytes", "duplicate sizes")


def load_osu(paths, machine: str | None = None) -> OSUTable:
    """Load one reference CSV, or one/two OSU text outputs (latency and bandwidth).

    ``paths`` is a path or a list of paths. Text outputs are merged on ``size_bytes``.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise InputError("--osu", None, "no OSU file given")
    first = _require_file(paths[0])
    with open(first, errors="replace") as fh:
        head = fh.readline()
    if head.lstrip().startswith("size_bytes"):
        if len(paths) != 1:
            raise InputError(paths[1], None, "a reference CSV already holds latency and bandwidth")
        return OSUTable(read_reference_csv(first, machine), source=str(first))
    merged = None
    for path in paths:
        df = read_osu_text(path)
        if merged is None:
            merged = df
            continue
        merged = merged.merge(df, on="size_bytes", how="outer", suffixes=("", "_new"))
        for col in ("latency_s", "bandwidth_Bps"):
            merged[col] = merged[col].fillna(merged.pop(col + "_new"))
    merged = merged.dropna(subset=["size_bytes"]).sort_values("size_bytes")
    # Keep only sizes where each measured column exists; log-interp needs both sides.
    for col in ("latency_s", "bandwidth_Bps"):
        if merged[col].notna().any():
            merged = merged[merged[col].notna()]
    return OSUTable(merged.reset_index(drop=True), source=",".join(map(str, paths)))
