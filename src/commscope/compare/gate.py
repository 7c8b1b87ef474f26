"""``compare --fail-if``: a CI gate on a comparison (docs/compare.md, "A CI gate").

An expression is ``SUBJECT OP CHANGE``:

* SUBJECT: ``runtime``; ``mpi`` (time in MPI, mean over ranks); ``MPI_Allreduce`` (an MPI
  function); or ``LEVEL KEY`` with LEVEL one of ``function``, ``callsite``, ``rank``,
  ``counter``, ``finding`` (KEY matches the finding's kind or its whole key),
  ``point`` (a benchmark's point) and ``figure`` (``compare --bench``).  KEY may hold
  shell wildcards (``function 'MPI_*'``): every figure it matches is judged alone.
* OP: ``>`` (fails when the change is larger) or ``<`` (smaller), ``>=`` and ``<=``.
* CHANGE: a share of before, ``+5%``, ``-10%``; or an amount in the figure's unit,
  a time with its unit ``+1ms``, ``+250us``, ``+0.2s``, ``ns``, or a plain number
  (counts, rates, and seconds).

A figure fails when its change passes the bound and it is not within the noise: with
repeats on both sides, a change the noise test finds within the noise does not fail
(it is listed as "within noise"); with one run on a side (untested) it fails.  A
SUBJECT that matches no figure of the comparison is an error, like an expression that
does not parse (exit status 2, the offending token named).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from ..errors import InputError
from ..units import format_number, format_seconds
from . import noise
from .core import KEY_FIELD, records, suffix_of

#: LEVEL words of a gate and the comparison levels they look in.
LEVELS = {
    "function": "functions",
    "callsite": "callsites",
    "rank": "ranks",
    "counter": "counters",
    "finding": "findings",
    "point": "points",
    "figure": "figures",
}
WHOLE = {"runtime": "runtime", "mpi": "mpi_time"}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_TOKEN = re.compile(r"\s*(>=|<=|>|<|[^\s<>]+)")
_CHANGE = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(%|s|ms|us|ns)?$")
GRAMMAR = (
    "SUBJECT OP CHANGE, e.g. 'runtime > +5%', 'MPI_Allreduce > +10%', 'callsite halo.c:69 > +1ms'"
)


@dataclass(frozen=True)
class Rule:
    text: str
    level: str
    key: str | None  # None: the whole run (runtime, mpi)
    op: str
    amount: float
    relative: bool  # a share of before (percent), else in the figure's unit
    time_unit: bool  # the amount was given with a time unit


def _error(text, token, why):
    return InputError("--fail-if", None, f"{text!r}: {why} at {token!r} (expected {GRAMMAR})")


def parse(text):
    """One expression -> :class:`Rule`; InputError naming the token it stops at."""
    tokens, pos = [], 0
    s = str(text)
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or not m.group(1):
            break
        tokens.append(m.group(1))
        pos = m.end()
    if not tokens:
        raise InputError("--fail-if", None, f"{text!r}: empty (expected {GRAMMAR})")
    ops = [i for i, t in enumerate(tokens) if t in (">", "<", ">=", "<=")]
    if not ops:
        raise _error(text, tokens[-1], "no comparison (> or <)")
    i = ops[0]
    subject, rest = tokens[:i], tokens[i + 1 :]
    if not subject:
        raise _error(text, tokens[i], "nothing to compare before the operator")
    if len(ops) > 1:
        raise _error(text, tokens[ops[1]], "a second operator")
    if not rest:
        raise _error(text, tokens[i], "no change after the operator")
    if len(rest) > 1:
        raise _error(text, rest[1], "more after the change")
    m = _CHANGE.match(rest[0])
    if not m:
        raise _error(text, rest[0], "not a change (+5%, -10%, +1ms, +250us, 3)")
    sign, number, unit = m.groups()
    amount = float(number) * (-1 if sign == "-" else 1)
    relative = unit == "%"
    if unit in TIME_UNITS:
        amount *= TIME_UNITS[unit]
    if len(subject) == 1:
        word = subject[0]
        if word in WHOLE:
            level, key = WHOLE[word], None
        elif word.startswith("MPI_") or word.startswith("PMPI_"):
            level, key = "functions", word
        else:
            raise _error(
                text,
                word,
                "unknown subject (runtime, mpi, MPI_<function>, or "
                f"LEVEL KEY with LEVEL one of {', '.join(LEVELS)})",
            )
    elif len(subject) == 2:
        if subject[0] not in LEVELS:
            raise _error(text, subject[0], f"unknown level (one of {', '.join(LEVELS)})")
        level, key = LEVELS[subject[0]], subject[1]
    else:
        raise _error(text, subject[2], "too many words before the operator")
    return Rule(str(text), level, key, tokens[i], amount, relative, unit in TIME_UNITS)


def _matches(rule, rec, field):
    value = str(rec.get(field))
    if fnmatch.fnmatchcase(value, rule.key):
        return True
    return rule.level == "findings" and fnmatch.fnmatchcase(str(rec.get("kind")), rule.key)


def _passes(change, op, bound):
    return {">": change > bound, "<": change < bound, ">=": change >= bound, "<=": change <= bound}[
        op
    ]


def evaluate(comparison, rules):
    """``{"rules": [...], "failed": [...lines], "passed": bool}`` for the parsed rules;
    each rule's entry lists the figures it judged."""
    out, failed = [], []
    for rule in rules:
        suffix = suffix_of(comparison, rule.level)
        if rule.time_unit and suffix != "_s" and rule.level != "figures":
            raise InputError(
                "--fail-if",
                None,
                f"{rule.text!r}: a time bound for {rule.level}, "
                f"whose figures are not times (give a share, +5%, or a plain number)",
            )
        field = KEY_FIELD.get(rule.level)
        recs = records(comparison, rule.level)
        if rule.key is not None:
            recs = [r for r in recs if _matches(rule, r, field)]
        if not recs or (rule.key is None and recs[0].get(f"before{suffix}") is None):
            what = rule.level if rule.key is None else f"{rule.level} {rule.key!r}"
            why = comparison.get("not_compared", {}).get(rule.level)
            raise InputError(
                "--fail-if",
                None,
                f"{rule.text!r}: no {what} in this comparison" + (f" ({why})" if why else ""),
            )
        judged = []
        for rec in recs:
            diff = rec.get(f"difference{suffix}")
            change = noise.relative_pct(rec) if rule.relative else diff
            name = rule.level if rule.key is None else f"{rule.level} {rec.get(field)}"
            if rule.time_unit and rule.level == "figures" and rec.get("unit") != "s":
                judged.append({"figure": name, "failed": False, "state": "not judged (not a time)"})
                continue
            if change is None:
                state = "not judged (before is 0)" if rule.relative else "not judged"
                judged.append({"figure": name, "failed": False, "state": state})
                continue
            over = _passes(change, rule.op, rule.amount)
            fails = over and rec.get("beyond_noise") is not False
            state = "failed" if fails else "within noise" if over else "passed"
            line = f"{name}: {describe(rec, suffix)}"
            judged.append({"figure": name, "failed": fails, "state": state, "line": line})
            if fails:
                failed.append(f"{rule.text}: {line}")
        out.append(
            {"rule": rule.text, "figures": judged, "failed": any(j["failed"] for j in judged)}
        )
    return {"rules": out, "failed": failed, "passed": not failed}


def fmt(value, suffix, unit=None):
    if value is None:
        return "n/a"
    if suffix == "_s" or unit == "s":
        return format_seconds(value)
    if suffix == "_msgs_per_s" or unit == "msgs/s":
        return f"{format_number(value)} msgs/s"
    if suffix == "_Bps" or unit == "B/s":
        return f"{format_number(value / 1e6)} MB/s"
    return format_number(value)


def describe(rec, suffix):
    """``1.23 s -> 1.40 s (+170 ms, +13.8 %; beyond noise)``."""
    b, a, d = rec.get(f"before{suffix}"), rec.get(f"after{suffix}"), rec.get(f"difference{suffix}")
    pct = noise.relative_pct(rec)
    sign = "+" if d is not None and d > 0 else ""
    unit = rec.get("unit")
    change = f"{sign}{fmt(d, suffix, unit)}" + (f", {pct:+.1f} %" if pct is not None else "")
    return f"{fmt(b, suffix, unit)} -> {fmt(a, suffix, unit)} ({change}; {noise.verdict(rec)})"
