"""Printing results: aligned tables for people, JSON for scripts."""

import json
import math
import sys

from .units import STATISTICS, human_value
from .lazy import lazy

np = lazy("numpy")


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        return _jsonable(obj.item())
    if type(obj).__name__ == "NAType":  # pandas' missing value of a nullable integer column
        return None
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # undefined or unbounded: a script reads null, never a fake number
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return _jsonable(obj.to_dict())
    return obj


def dump_json(obj, stream=None):
    """Write ``obj`` as JSON (numpy scalars/arrays made plain; NaN and inf as null)."""
    stream = stream or sys.stdout
    json.dump(_jsonable(obj), stream, indent=2, sort_keys=False)
    stream.write("\n")


#: What a person reads for a value that is missing or undefined (NaN, inf, None).
MISSING = "-"


def format_value(v, name=""):
    """One value of a printed table for people, by the unit suffix of its column ``name``
    (docs/conventions.md): ``1.23 us``, ``4 KiB``, ``812 MB/s``, ``12.5 %``, counts whole,
    other numbers with three significant digits; never e-notation, ``nan`` or ``inf``
    (``-``). ``--json`` keeps the stored SI numbers."""
    if isinstance(v, tuple):  # an interval (low, high)
        return " .. ".join(format_value(x, name) for x in v)
    if v is None or type(v).__name__ == "NAType":
        return MISSING
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, float, np.integer, np.floating)):
        v = v.item() if hasattr(v, "item") else v
        if isinstance(v, float) and not math.isfinite(v):
            return MISSING
        return human_value(str(name), v)[1]
    return str(v)


def format_table(rows, columns=None, title=None):
    """Aligned text table from a list of dicts (or a DataFrame), each value in human units
    by its column's name (:func:`format_value`); the header is the column's stored name,
    the key of ``--json``. A statistic column (``total``, ``mean``, ``min``, ``max``,
    ``median``) is written in the unit of its row's ``name``."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        columns = columns or list(rows.columns)
        rows = rows.to_dict("records")
    rows = list(rows)
    if columns is None:
        columns = list(rows[0].keys()) if rows else []

    def unit_name(row, c):
        if c in STATISTICS and isinstance(row.get("name"), str):
            return row["name"]
        return c

    cells = [[format_value(r.get(c, ""), unit_name(r, c)) for c in columns] for r in rows]
    columns = [str(c) for c in columns]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = []
    if title:
        lines.append(f"# {title}")
    lines.append("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        lines.append("  ".join(v.rjust(w) for v, w in zip(row, widths)))
    return "\n".join(lines)


def print_table(rows, columns=None, title=None, stream=None):
    print(format_table(rows, columns, title), file=stream or sys.stdout)
