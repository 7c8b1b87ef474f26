"""Parsing sizes and size ranges given on the command line."""

import re

from .errors import InputError

# K, Ki, KiB are binary (2^10, as OSU and MPI count); KB, MB, GB are SI (10^3).
_UNITS = {"": 1, "b": 1,
          "k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 10 ** 3,
          "m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 10 ** 6,
          "g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 10 ** 9}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")
SIZE_HELP = "sizes: 4096, 8K = 8KiB = 8192, 16MB = 16000000 (K/KiB binary, KB SI)"


def parse_size(text, option="size"):
    """'4096', '4K', '4KiB' (binary), '4KB' (SI), '4.5MiB' -> whole bytes."""
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if unit not in _UNITS:
        raise InputError(option, None, f"not a size: {text!r} ({SIZE_HELP})")
    value = float(m.group(1)) * _UNITS[unit]
    if value != int(value):
        raise InputError(option, None, f"{text!r} is not a whole number of bytes")
    return int(value)


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
    import math
    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(value)
