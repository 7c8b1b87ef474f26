"""`commscope compare`: two sides (one run each, or repeats of one configuration),
compared level by level (docs/compare.md).

:func:`compare` returns the comparison as a dict, the ``--json`` output::

    {"runtime": {"before_s", "after_s", "difference_s", "ratio", "beyond_noise", ...},
     "mpi_time": {...},                                   # profile runs
     "ranks": [{"rank": 0, "before_s", ...}, ...],        # the finer levels, each a
     "functions": [{"function": "MPI_Allreduce", ...}],   # list ranked by the size of
     "callsites": [...], "counters": [...], "findings": [...],   # the difference
     "points": [...],                                     # benchmark runs
     "kind", "before": {...}, "after": {...}, "differs": [...], "noise": {...},
     "not_compared": {...}, "notes": [...]}
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, warn
from ..runs import open_run
from . import noise
from .measures import LEVEL_SUFFIX, POINT_FIGURES, PROFILE_LEVELS, measure

#: The name of the key field of each list level.
KEY_FIELD = {
    "ranks": "rank",
    "functions": "function",
    "callsites": "callsite",
    "counters": "counter",
    "findings": "finding",
    "points": "point",
    "figures": "figure",
}

#: Levels with one figure (a dict in the output), the others are lists.
SINGLE = ("runtime", "mpi_time")


def open_side(paths, side):
    """The runs of one side (``side``: "before" or "after"), opened and checked to be
    one configuration."""
    if not paths:
        raise InputError(
            f"--{side}",
            None,
            "missing: give the runs of both sides "
            "(commscope compare BEFORE AFTER, or --before RUN... --after RUN...)",
        )
    runs = [open_run(p) for p in paths]
    first = runs[0]
    for run in runs[1:]:
        if run.kind != first.kind:
            raise InputError(
                run.path / "meta.json",
                "kind",
                f"a {run.kind} run among the {side} runs, which are {first.kind} "
                f"runs ({first.path}): the repeats of one side are one configuration",
            )
        for what, a, b in config_differences(first, run):
            raise InputError(
                run.path / "meta.json",
                what,
                f"{b} here, {a} in {first.path}: the repeats of one side "
                f"({side}) must be one configuration",
            )
    return runs


def configuration(run):
    """What defines a configuration: ``{what: value}`` (program, arguments, ranks,
    threads and MPI of a profile run; the parameters of a benchmark run, without its
    seeds)."""
    meta = run.meta
    p = meta.get("parameters") or {}
    # what the MPI says of itself (meta.json requires it once the MPI is recorded): a
    # guess from its name would read as another MPI beside a run that has it
    mpi = (meta.get("mpi") or {}).get("library_version")
    mpi = str(mpi).splitlines()[0].split(",")[0].strip() if mpi else None
    if run.kind == "profile":
        counters = p.get("counters")
        profiling = ",".join(counters) if isinstance(counters, list) else str(counters)
        profiling += "; trace" if p.get("trace") else ""
        profiling += (
            f"; call sites of depth {p['callsite_depth']}" if p.get("callsite_depth") else ""
        )
        return {
            "program": p.get("program"),
            "arguments": " ".join(map(str, p.get("args") or [])),
            "ranks": p.get("ranks"),
            "threads": p.get("threads"),
            "MPI": mpi,
            "profiling": profiling,
        }
    out = {k: v for k, v in sorted(p.items()) if "seed" not in k}
    out["MPI"] = mpi
    return out


def config_differences(a, b):
    """``(what, value in a, value in b)`` for each field of the configuration that differs.
    A benchmark parameter one run does not record (an older or newer writer's, or one
    renamed by damage) is unknown there, not another configuration: said, not counted."""
    ca, cb = configuration(a), configuration(b)
    for k in dict.fromkeys([*ca, *cb]):
        if (k in ca) != (k in cb):
            lacks, has = (b, a) if k in ca else (a, b)
            warn(
                f"{lacks.path / 'meta.json'}: parameters.{k}: not recorded (unknown), though "
                f"{has.path} records it: not compared"
            )
    return [(k, ca[k], cb[k]) for k in ca if k in cb and ca[k] != cb[k]]


def _describe(runs, measures):
    run = runs[0]
    out = {"runs": [str(r.path) for r in runs], "kind": run.kind}
    out.update(
        {
            k.lower(): v
            for k, v in configuration(run).items()
            if k in ("program", "arguments", "ranks", "threads", "MPI")
        }
    )
    return out


def compare(before, after, findings=True, statistic="mean"):
    """Compare the runs ``before`` with the runs ``after`` (paths); returns the dict
    of the module docstring.  ``statistic``: "mean" (Welch's test) or "median" (a
    bootstrap), see :mod:`.noise`."""
    if statistic not in noise.STATISTICS:
        raise InputError(
            "--statistic", None, f"{statistic!r} is not one of {', '.join(noise.STATISTICS)}"
        )
    b_runs, a_runs = open_side(before, "before"), open_side(after, "after")
    kb, ka = b_runs[0].kind, a_runs[0].kind
    if kb != ka:
        raise InputError(
            a_runs[0].path / "meta.json",
            "kind",
            f"a {ka} run cannot be compared with a {kb} run "
            f"({b_runs[0].path}): both sides must be runs of one kind",
        )
    b_meas = [measure(r, findings) for r in b_runs]
    a_meas = [measure(r, findings) for r in a_runs]
    out = {}
    levels = PROFILE_LEVELS if kb == "profile" else ("runtime", "points")
    not_compared = {}
    for level in levels:
        have_b = [m.levels.get(level) for m in b_meas]
        have_a = [m.levels.get(level) for m in a_meas]
        if any(v is None for v in have_b + have_a):
            damaged = [
                m.missing[level] for m in b_meas + a_meas if m.damaged and level in m.missing
            ]
            why = next(
                iter(damaged),
                next(
                    (m.missing[level] for m in b_meas + a_meas if level in m.missing),
                    "not in every run",
                ),
            )
            not_compared[level] = why
            if level in SINGLE:
                out[level] = _empty(level)
            continue
        suffix = LEVEL_SUFFIX[level] or POINT_FIGURES[kb].suffix
        if level in SINGLE:
            out[level] = noise.change(
                [v[level] for v in have_b], [v[level] for v in have_a], suffix, statistic
            )
            continue
        out[level] = _level(
            level,
            have_b,
            have_a,
            suffix,
            b_meas,
            a_meas,
            shared_only=level == "ranks",
            statistic=statistic,
        )
    differs = [
        {"what": what, "before": _text(x), "after": _text(y)}
        for what, x, y in config_differences(b_runs[0], a_runs[0])
    ]
    notes = []
    if differs:
        notes.append(
            "the two sides differ in "
            + ", ".join(d["what"] for d in differs)
            + ": they are compared on what they share"
        )
    rb = {r for m in b_meas for r in m.levels.get("ranks", {})}
    ra = {r for m in a_meas for r in m.levels.get("ranks", {})}
    if rb != ra and rb and ra:
        notes.append(
            f"ranks {_ranks(rb ^ ra)} are on one side only: per rank, only the "
            f"{len(rb & ra)} ranks of both are compared"
        )
    damaged = {str(m.run): m.damaged for m in b_meas + a_meas if m.damaged}
    for run, why in damaged.items():
        notes.append(f"damaged: {run}: {why}: its findings are not compared")
    if len(b_runs) < 2 or len(a_runs) < 2:
        notes.append(
            "one run on a side: no spread to judge the noise by (beyond_noise is "
            "null, 'untested'); give repeats with --before and --after"
        )
    out.update(
        {
            "kind": kb,
            "before": _describe(b_runs, b_meas),
            "after": _describe(a_runs, a_meas),
            "differs": differs,
            "noise": {
                "statistic": statistic,
                "method": noise.METHODS[statistic],
                "confidence": noise.CONFIDENCE,
                "runs_before": len(b_runs),
                "runs_after": len(a_runs),
            },
            "not_compared": not_compared,
            "damaged": damaged,
            "notes": notes,
        }
    )
    if kb != "profile":
        out["figure"] = POINT_FIGURES[kb].what
    return out


def _empty(level):
    return {**noise.change([], [], LEVEL_SUFFIX[level] or "_s"), "runs_before": 0, "runs_after": 0}


def _level(level, have_b, have_a, suffix, b_meas, a_meas, shared_only=False, statistic="mean"):
    """One list level: a record per key, absent keys as 0 (a function not called, a
    finding not found) unless ``shared_only``; ranked by the size of the difference."""
    keys_b = set().union(*[set(v) for v in have_b])
    keys_a = set().union(*[set(v) for v in have_a])
    keys = keys_b & keys_a if shared_only else keys_b | keys_a
    field = KEY_FIELD[level]
    rows = []
    for key in keys:
        rec = {field: key}
        info = {}
        for m in b_meas + a_meas:  # what a run says of the key (the later runs' word last)
            info.update(m.info.get(level, {}).get(key, {}))
        if level == "findings":
            predicted = [
                m.info["findings"][key]["predicted_saving_s"]
                for m in b_meas
                if key in m.info.get("findings", {})
                and m.info["findings"][key]["predicted_saving_s"] is not None
            ]
            info = {k: v for k, v in info.items() if k != "predicted_saving_s"}
            info["predicted_saving_before_s"] = (
                sum(predicted) / len(predicted) if predicted else None
            )
        if level == "points":
            rec.update(info)
        elif level == "counters":
            rec.update({"unit": info.get("unit"), "counter_kind": info.get("counter_kind")})
        elif info:
            rec.update(info)
        rec.update(
            noise.change(
                [v.get(key, 0.0) for v in have_b],
                [v.get(key, 0.0) for v in have_a],
                suffix,
                statistic,
            )
        )
        rec["status"] = "new" if key not in keys_b else "gone" if key not in keys_a else "both"
        rows.append(rec)
    diff = f"difference{suffix}"
    rows.sort(key=lambda r: (-abs(r[diff]) if r[diff] is not None else 0.0, str(r[field])))
    return rows


def _text(v):
    return None if v is None else str(v)


def _ranks(ranks):
    r = sorted(ranks)
    return ", ".join(map(str, r[:6])) + (f", ... ({len(r)} ranks)" if len(r) > 6 else "")


def suffix_of(comparison, level):
    """The unit suffix of a level's figures in ``comparison``."""
    s = LEVEL_SUFFIX.get(level)
    if s:
        return s
    if level == "points" and comparison["kind"] in POINT_FIGURES:
        return POINT_FIGURES[comparison["kind"]].suffix
    if level == "figures":
        return "_value"
    return "_s"


def records(comparison, level):
    """A level's records as a list (the single levels as one record), [] when absent."""
    v = comparison.get(level)
    if v is None:
        return []
    return [v] if isinstance(v, dict) else list(v)


def side_paths(runs):
    return [Path(p) for p in runs]
