"""Parsing sizes and size ranges given on the command line."""

import re

from .errors import InputError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(i?B)?\s*$", re.IGNORECASE)


def parse_size(text, option="size"):
    """'4096', '4K', '4KiB', '1M' -> bytes (binary multiples, as OSU and MPI use)."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError(option, None, f"not a size: {text!r} (examples: 64, 8K, 4MiB)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def parse_size_range(text, option="-m"):
    """'MIN:MAX' (or a single MAX) -> (min, max) in bytes."""
    lo, sep, hi = str(text).partition(":")
    if not sep:
        lo, hi = "1", lo
    lo_b, hi_b = parse_size(lo or "0", option), parse_size(hi, option)
    if lo_b > hi_b:
        raise InputError(option, None, f"MIN {lo_b} is larger than MAX {hi_b}")
    return lo_b, hi_b
