"""Units: parsing sizes given on the command line, the unit suffixes of stored names, and
how a time is written in a sentence (docs/conventions.md)."""

import math
import re

from .errors import InputError

# K, Ki, KiB are binary (2^10, as OSU and MPI count); KB, MB, GB are SI (10^3).
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "ki": 1 << 10,
    "kib": 1 << 10,
    "kb": 10**3,
    "m": 1 << 20,
    "mi": 1 << 20,
    "mib": 1 << 20,
    "mb": 10**6,
    "g": 1 << 30,
    "gi": 1 << 30,
    "gib": 1 << 30,
    "gb": 10**9,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")
SIZE_HELP = "sizes: 4096, 8K = 8KiB = 8192, 16MB = 16000000 (K/KiB binary, KB SI)"
#: Largest size any command accepts: numpy's int64 would wrap above it.
MAX_SIZE = (1 << 63) - 1


def parse_size(text, option="size"):
    """'4096', '4K', '4KiB' (binary), '4KB' (SI), '4.5MiB' -> whole bytes."""
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if unit not in _UNITS:
        raise InputError(option, None, f"not a size: {text!r} ({SIZE_HELP})")
    value = float(m.group(1)) * _UNITS[unit]
    if value != int(value):
        raise InputError(option, None, f"{text!r} is not a whole number of bytes")
    if int(value) > MAX_SIZE:
        raise InputError(option, None, f"{text!r} is larger than 2^63 - 1 bytes")
    return int(value)


def parse_size_list(text, option="--sizes", ranges=True):
    """'1K,64K' -> [1024, 65536]; with ``ranges`` an item A:B doubles from A up to B.

    The one grammar of every ``--sizes`` option (docs/conventions.md).
    """
    sizes = []
    for item in (t.strip() for t in str(text).split(",")):
        if not item:
            continue
        if ":" not in item or not ranges:
            sizes.append(parse_size(item, option))
            continue
        lo, hi = parse_size_range(item, option)
        if lo < 1:
            raise InputError(option, None, f"range {item!r} needs 1 <= A <= B")
        while lo <= hi:
            sizes.append(lo)
            lo *= 2
    if not sizes:
        raise InputError(option, None, f"no sizes in {text!r}")
    return sizes


def parse_size_range(text, option="-m"):
    """'MIN:MAX' (or a single MAX) -> (min, max) in bytes."""
    lo, sep, hi = str(text).partition(":")
    if not sep:
        lo, hi = "1", lo
    lo_b, hi_b = parse_size(lo or "0", option), parse_size(hi, option)
    if lo_b > hi_b:
        raise InputError(option, None, f"MIN {lo_b} is larger than MAX {hi_b}")
    return lo_b, hi_b


def parse_count(text):
    """A whole count written as ``10000``, ``1e6`` or ``1_000_000`` (an argparse type)."""
    import argparse

    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(value)


# -- unit suffixes of names (docs/conventions.md) -------------------------------------
#: Stored data (Parquet columns, meta.json, machine models, every --json): SI units.
DATA_UNITS = {
    "_s": "seconds",
    "_bytes": "bytes",
    "_Bps": "bytes per second",
    "_s_per_byte": "seconds per byte",
    "_msgs_per_s": "messages per second",
}
#: Display only (printed tables, figures): never in stored data.
DISPLAY_UNITS = {
    "_MBps": "MB/s = 10^6 bytes per second",
    "_us": "microseconds",
    "_ms": "milliseconds",
    "_MiBps": "MiB/s",
    "_KiB": "KiB",
    "_MB": "MB",
}
#: Words that make a number without a unit: counter values, relative errors, ratios
#: (``a_over_b``, the scale factor ``k``), shares, efficiencies, a confidence level, the
#: GEV shape, a coefficient of variability, and counts that may be averaged (queue
#: depths and lengths, ob1's recvq/msgq lengths, messages, operations).
DIMENSIONLESS = (
    "value",
    "rel",
    "ratio",
    "over",
    "k",
    "fraction",
    "share",
    "pct",
    "efficiency",
    "confidence",
    "shape",
    "variability",
    "depth",
    "length",
    "recvq",
    "msgq",
    "messages",
    "ops",
    "switches",
    "aic",
    "bic",
)  # aic, bic: information criteria
_TIME_WORDS = ("time", "elapsed", "latency", "duration", "wait", "delay")
_RATE_WORDS = ("bandwidth", "rate", "throughput")
_RATE_PROBLEM = "a rate: bytes per second (_Bps) or messages per second (_msgs_per_s)"


def _unit_suffix(name):
    """The data unit a name ends with (the longest; a bare ``bytes`` counts), or None."""
    return next(
        (s for s in sorted(DATA_UNITS, key=len, reverse=True) if f"_{name}".endswith(s)), None
    )


def column_unit_problem(name, dtype_kind):
    """Why a stored name breaks the unit convention, or None when it follows it.

    ``dtype_kind``: "f" float, "i" integer, "O" text (only display units are checked: a
    text may describe a time). ``X_per_Y`` is judged as X per one Y (``bytes_per_iteration``).
    """
    for suffix, unit in DISPLAY_UNITS.items():
        if name.endswith(suffix):
            return f"{unit} is a display unit; stored data use seconds, bytes, bytes/s"
    if dtype_kind == "O":
        return None
    unit = _unit_suffix(name)
    if name.endswith("_per_s") and unit != "_msgs_per_s":  # bytes_per_s is a bandwidth: _Bps
        return _RATE_PROBLEM
    if unit is None and "_per_" in name:
        name = name.split("_per_")[0]
        unit = _unit_suffix(name)
    words = name.lower().split("_")
    if any(w in _TIME_WORDS for w in words) and unit != "_s":
        return "a time: seconds, name ending in _s"
    if any(w in _RATE_WORDS for w in words) and unit not in ("_Bps", "_msgs_per_s"):
        return _RATE_PROBLEM
    if "size" in words and unit != "_bytes":
        return "a size: bytes, name ending in _bytes"
    if dtype_kind == "f" and unit is None and not any(w in DIMENSIONLESS for w in words):
        return (
            "a number without a unit suffix (_s, _bytes, _Bps), and none of the words of "
            "units.DIMENSIONLESS"
        )
    return None


def json_unit_problems(obj, path=""):
    """``(path, problem)`` for every key of a ``--json`` output that breaks the convention.

    Keys that are data (a size or a rank as the key of a mapping) are judged by the name
    of the mapping: ``rel_error_by_size: {"4096": 0.02}`` is a relative error.
    """
    if isinstance(obj, list):
        for item in obj:
            yield from json_unit_problems(item, f"{path}[]")
        return
    if not isinstance(obj, dict):
        return
    for key, value in obj.items():
        where = f"{path}.{key}" if path else str(key)
        name = str(key)
        parent = path.rsplit(".", 1)[-1].rstrip("[]")
        if _is_data_label(name):
            name = parent.split("_by_")[0]
        elif name in STATISTICS:  # time_s: {"mean": ...}: seconds; messages: {...}: a count
            name = parent
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
            problem = None
        else:
            problem = column_unit_problem(
                name, "O" if isinstance(value, str) else "i" if isinstance(value, int) else "f"
            )
        if problem:
            yield where, problem
        yield from json_unit_problems(value, where)


#: Keys that are a statistic of the quantity their mapping names (``time_s: {"total":
#: 1.2, "mean": 0.3}``, the job summary of ``profile --json``): judged by that name.
STATISTICS = ("total", "mean", "min", "max", "median")


def _is_data_label(key):
    """A key that is a value (a size, a rank, a counter or function name), not a field name."""
    return key.lstrip("-").replace(".", "", 1).isdigit() or key.startswith("MPI_")


def display_column(name, value):
    """(printed name, printed value): bandwidth in MB/s, everything else as stored."""
    if name.endswith("_Bps"):
        if isinstance(value, tuple):  # an interval
            return name[: -len("_Bps")] + "_MBps", tuple(display_column(name, v)[1] for v in value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = value / 1e6
        elif hasattr(value, "dtype") and value.dtype.kind in "iuf":
            value = value / 1e6
        return name[: -len("_Bps")] + "_MBps", value
    return name, value


def format_seconds(seconds, digits=3):
    """A time in a sentence: ``14.2 us``, ``1.23 ms``, ``2.5 s`` (the unit chosen by size).

    The one way prose (messages, ``#`` lines, verdicts) writes a time; tables and stored
    data keep plain seconds (docs/conventions.md). No value is ``n/a``.
    """
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    rounded = float(f"{seconds:.{digits}g}")  # first: 0.9996 ms is 1 ms, not 1e+03 us
    if rounded == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(rounded) >= scale or unit == "ns":
            value = rounded / scale
            return (
                f"{value:.0f} {unit}" if abs(value) >= 10**digits else f"{value:.{digits}g} {unit}"
            )


# -- what a person reads in the HTML report (docs/conventions.md) ----------------------
#: Units a value is written in by the suffix of its name, longest suffix first.
_HUMAN_SUFFIXES = ("_s_per_byte", "_msgs_per_s", "_bytes", "_Bps", "_pct", "_s")
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def format_number(value, digits=3):
    """A plain number for people: ``12.3``, ``0.0042``, ``123,456``, never ``1.2e-06``.

    Whole numbers up to 10^15 are written whole (thousands grouped from 10^5); other
    numbers with ``digits`` significant digits; a number too small or too large for that
    as ``1.2×10⁻⁹`` (a person reads it, e-notation is for code).
    """
    if value is None or not math.isfinite(value):
        return "n/a"
    value = float(value)
    if value == int(value) and abs(value) < 1e15:
        whole = int(value)
        return f"{whole:,}" if abs(whole) >= 100_000 else str(whole)
    text = f"{value:.{digits}g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if -5 <= power < 0:  # written out: 0.0000123
        return f"{value:.{digits - 1 - power}f}".rstrip("0").rstrip(".")
    if 0 < power < 15:  # 1.23e+06 is 1,230,000 at three digits
        return f"{float(text):,.0f}"
    return f"{mantissa}\u00d710{str(power).translate(_SUPERSCRIPT)}"


def format_bytes(value, digits=3):
    """A size for people: ``512 B``, ``4 KiB``, ``1.5 MiB`` (binary, as message sizes are)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= scale:
            return f"{format_number(float(f'{value / scale:.{digits}g}'), digits)} {unit}"
    return f"{format_number(value, digits)} B"


def format_rate(value, unit, digits=3):
    """A rate for people with an SI prefix: ``3.4 GB/s``, ``812 MB/s``, ``1.2 M msgs/s``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            sep = "" if unit[0] == "B" else " "  # GB/s, but M msgs/s
            return (
                f"{format_number(float(f'{value / scale:.{digits}g}'), digits)} {prefix}{sep}{unit}"
            )
    return f"{format_number(value, digits)} {unit}"


#: A number without a unit whose name says it is a share of something (a fraction of 1):
#: a person reads it in per cent (``laggard_share`` 0.0192 is ``1.92 %``; a relative
#: error -0.168 is ``-16.8 %``; an idle ratio R/(n max) is a share of the slowest time).
SHARE_NAMES = (
    "share",
    "fraction",
    "rel_error",
    "rel_err",
    "median_error",
    "idle_ratio",
    "efficiency",
    "probability",
)


def is_share(name):
    """Whether a column without a unit suffix holds a share of 1 (:data:`SHARE_NAMES`,
    whole words: ``laggard_share``, not ``shared_over_per_thread``)."""
    low = "_" + name.lower().replace(" ", "_") + "_"
    return not low.endswith("_pct_") and any(f"_{w}_" in low for w in SHARE_NAMES)


def format_percent(share, digits=3):
    """A share of 1 for people: ``0.0192`` -> ``1.92 %``, ``-0.168`` -> ``-16.8 %``."""
    if share is None or not math.isfinite(share):
        return "n/a"
    value = float(f"{100.0 * share:.{digits}g}")
    return f"{format_number(value, digits)} %"


def human_value(name, value, digits=3):
    """``(name without its unit suffix, text)``: how the HTML report writes a value.

    By the unit suffix of the name: ``_s`` as ``1.2 us``, ``_bytes`` (and ``bytes``,
    ``bytes_sent``, ``bytes_per_X``) as ``4 KiB``, ``_Bps`` as ``3.4 GB/s`` (SI, 10^9), ``_msgs_per_s`` as ``1.2 M msgs/s``,
    ``_s_per_byte`` as ``0.4 ns/B``, ``_pct`` as ``12 %``; a share of 1 (a name of
    :data:`SHARE_NAMES`: ``laggard_share``, ``rel_error``) in per cent, ``1.92 %``; every
    other number plain (:func:`format_number`); text as it is. A tuple is an interval,
    written ``low .. high``. The stored data and ``--json`` keep their SI numbers: this
    is for people only (the report and the printed tables).
    """
    suffix = next((s for s in _HUMAN_SUFFIXES if name.endswith(s) and len(name) > len(s)), None)
    label = name[: -len(suffix)] if suffix else name
    if name == "msgs_per_s":  # a bare message rate (top): not seconds
        suffix, label = "_msgs_per_s", name
    if name == "bytes" or (suffix is None and name.startswith("bytes_")):  # a size: bytes_sent
        suffix = "_bytes"
    share = suffix is None and is_share(name)
    if isinstance(value, tuple):
        return label, " .. ".join(human_value(name, v, digits)[1] for v in value)
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's too
        return label, "yes" if value else "no"
    if not isinstance(value, (int, float)):
        if hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0 and value.dtype.kind in "iuf":
            value = value.item()
        else:
            return label, str(value)
    if not math.isfinite(value):
        return label, "-"
    if suffix == "_s":
        return label, format_seconds(value, digits)
    if suffix == "_s_per_byte":
        return label, f"{format_seconds(value, digits)}/B"
    if suffix == "_bytes":
        return label, format_bytes(value, digits)
    if suffix == "_Bps":
        return label, format_rate(value, "B/s", digits)
    if suffix == "_msgs_per_s":
        return label, format_rate(value, "msgs/s", digits)
    if suffix == "_pct":
        return label, f"{format_number(float(f'{value:.{digits}g}'), digits)} %"
    if share and not isinstance(value, int):
        return label, format_percent(value, digits)
    return label, format_number(value, digits)


#: Words of stored names written out in a header a person reads (:func:`header_words`).
HEADER_WORDS = {
    "mpi": "MPI",
    "ci95": "95 % interval",
    "avg": "mean",
    "rel": "relative",
    "err": "error",
    "prq": "posted-queue",
    "umq": "unexpected-queue",
    "msgq": "message queue",
    "recvq": "receive queue",
    "cv": "left-out",
    "pct": "%",
    "mc": "Monte Carlo",
    "bic": "BIC",
    "aic": "AIC",
    "p05": "5th percentile",
    "p95": "95th percentile",
    "se": "standard error",
    "num": "number of",
    "msgs": "messages",
    "ci": "interval",
}


def header_words(name):
    """A stored column name as a header a person reads: the unit suffix dropped, words
    apart (``share_of_mpi_pct`` -> ``share of MPI``, ``alpha_ci95_s`` -> ``alpha 95 %
    interval``); the stored name stays the header's tooltip."""
    label = human_value(str(name), None)[0]
    label = re.sub(r"\b([A-Z])_([A-Za-z])", "\\1\0\\2", label)  # a symbol of the papers: R_N
    words = [HEADER_WORDS.get(w.lower(), w) for w in label.replace("_", " ").split()]
    return " ".join(words).replace("\0", "_") or str(name)
