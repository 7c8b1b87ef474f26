"""The figures `make bench` keeps, and their comparison with the previous pass
(``commscope compare --bench PREVIOUS CURRENT``; docs/compare.md, "commscope itself").

scripts/bench.py runs each benchmark script with ``COMMSCOPE_BENCH_FIGURES`` naming a
file; a script calls :func:`record` for each figure it measures, with every repetition
as a sample (the samples are the figure's noise).  bench.py then writes
``<out>/<script>.figures.json``::

    {"schema": "commscope.bench-figures", "schema_version": 1, "script": "bench_startup",
     "pass": "full", "status": "ok", "end_time": "...", "loadavg": [1.2, 1.0, 0.9],
     "figures": [{"name": "wall", "unit": "s", "samples": [81.3]},
                 {"name": "--help", "unit": "s", "samples": [0.21, 0.2, ...]}]}

and, before a script runs again, moves its previous outputs to ``<out>/previous/``, so
the last two passes are always on disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import InputError
from . import noise

SCHEMA = "commscope.bench-figures"
SCHEMA_VERSION = 1
ENV = "COMMSCOPE_BENCH_FIGURES"
SUFFIX = "_value"
#: Units a figure may have (a time is in seconds, a rate per second, a size in bytes).
UNITS = ("s", "B", "B/s", "msgs/s", "1")


def record(name, samples, unit="s"):
    """Record one figure of the running benchmark script (a no-op outside `make bench`):
    ``samples`` are its repetitions, in ``unit`` (:data:`UNITS`)."""
    path = os.environ.get(ENV)
    if not path:
        return
    if unit not in UNITS:
        raise ValueError(f"figure {name!r}: unit {unit!r} is not one of {UNITS}")
    values = [float(x) for x in samples]
    with open(path, "a") as fh:
        fh.write(json.dumps({"name": str(name), "unit": unit, "samples": values}) + "\n")


def collect(recorded, script, status, wall_s, pass_name, loadavg=None, end_time=None):
    """The ``<script>.figures.json`` document from the lines :func:`record` wrote to
    ``recorded`` (absent: none) and the script's wall time."""
    figures = [{"name": "wall", "unit": "s", "samples": [float(wall_s)]}]
    p = Path(recorded)
    if p.exists():
        for line in p.read_text().splitlines():
            if line.strip():
                figures.append(json.loads(line))
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "script": script,
        "pass": pass_name,
        "status": status,
        "end_time": end_time,
        "loadavg": list(loadavg) if loadavg else None,
        "figures": figures,
    }


def read(path):
    """A ``*.figures.json`` file, checked: ``{(script, name): (unit, samples)}``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"malformed JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "not a text file") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(path, "schema", f"expected {SCHEMA!r}")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(
            path,
            "schema_version",
            f"unknown version {doc.get('schema_version')!r} "
            f"(this commscope reads {SCHEMA_VERSION})",
        )
    script = doc.get("script")
    if not isinstance(script, str) or not script:
        raise InputError(path, "script", "missing or not a name")
    figs = doc.get("figures")
    if not isinstance(figs, list):
        raise InputError(path, "figures", "missing or not a list")
    out = {}
    for k, f in enumerate(figs):
        where = f"figures[{k}]"
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise InputError(path, where, "not a figure (name, unit, samples)")
        if f.get("unit") not in UNITS:
            raise InputError(path, f"{where}.unit", f"{f.get('unit')!r} is not one of {UNITS}")
        samples = f.get("samples")
        if (
            not isinstance(samples, list)
            or not samples
            or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and x == x for x in samples
            )
        ):
            raise InputError(path, f"{where}.samples", "expected a non-empty list of numbers")
        out[(script, f["name"])] = (f["unit"], [float(x) for x in samples])
    return out, doc


def read_dir(folder):
    """Every ``*.figures.json`` of a `make bench` output folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            folder,
            None,
            "no such folder (a `make bench` output folder, e.g. "
            "build/bench/full, or its previous/)",
        )
    files = sorted(folder.glob("*.figures.json"))
    if not files:
        raise InputError(folder, None, "holds no *.figures.json (run `make bench` first)")
    figures, docs = {}, {}
    for f in files:
        got, doc = read(f)
        figures.update(got)
        docs[doc["script"]] = doc
    return figures, docs


def compare_dirs(before, after, statistic="mean"):
    """The comparison of two `make bench` passes, in the shape of
    :func:`commscope.compare.core.compare`: ``runtime`` (the summed wall time of the
    scripts in both), then ``figures``, one per script and figure in both."""
    fb, db = read_dir(before)
    fa, da = read_dir(after)
    shared = sorted(set(fb) & set(fa))
    rows = []
    for key in shared:
        (ub, sb), (ua, sa) = fb[key], fa[key]
        if ub != ua:
            continue
        rec = {"figure": f"{key[0]}:{key[1]}", "script": key[0], "unit": ub}
        rec.update(noise.change(sb, sa, SUFFIX, statistic))
        rec["status"] = "both"
        rows.append(rec)
    # the figures that moved beyond their noise first, then by the size of the change
    rows.sort(
        key=lambda r: (not r["beyond_noise"], -abs(noise.relative_pct(r) or 0.0), r["figure"])
    )
    walls = [k for k in shared if k[1] == "wall"]
    runtime = noise.change(
        [sum(fb[k][1][0] for k in walls)] if walls else [],
        [sum(fa[k][1][0] for k in walls)] if walls else [],
        "_s",
    )
    scripts_b, scripts_a = set(db), set(da)
    notes = []
    if scripts_b ^ scripts_a:
        notes.append(
            "scripts on one side only (not compared): " + ", ".join(sorted(scripts_b ^ scripts_a))
        )
    passes = {d.get("pass") for d in [*db.values(), *da.values()]}
    differs = []
    if len(passes) > 1:
        differs.append(
            {
                "what": "pass",
                "before": ",".join(sorted({str(d.get("pass")) for d in db.values()})),
                "after": ",".join(sorted({str(d.get("pass")) for d in da.values()})),
            }
        )
    for key in shared:
        if fb[key][0] != fa[key][0]:
            notes.append(
                f"{key[0]}:{key[1]}: unit {fb[key][0]} before, {fa[key][0]} after; not compared"
            )
    return {
        "runtime": runtime,
        "figures": rows,
        "kind": "bench",
        "before": {"runs": [str(before)], "kind": "bench", "scripts": sorted(scripts_b)},
        "after": {"runs": [str(after)], "kind": "bench", "scripts": sorted(scripts_a)},
        "differs": differs,
        "noise": {
            "statistic": statistic,
            "method": noise.METHODS[statistic]
            .replace("the runs", "the samples")
            .replace("each side's runs", "each side's samples")
            .replace("a side of one run", "a figure of one sample"),
            "confidence": noise.CONFIDENCE,
            "runs_before": 1,
            "runs_after": 1,
        },
        "not_compared": {"runtime": "the scripts' wall time is one sample a pass"}
        if not walls
        else {},
        "notes": notes
        + [
            "runtime is the summed wall time of the scripts of both passes "
            "(one sample: untested against noise); each figure's noise is "
            "the spread of its samples"
        ],
    }
