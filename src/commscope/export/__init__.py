"""Export a profile run as a profile (not a trace) for the tools people compare runs in:
Caliper's split JSON for Hatchet and Thicket (:mod:`.caliper`), and a Cube 4 ``.cubex``
for CubeGUI and pycubexr (:mod:`.cube`); docs/export.md.

Both are views of one call tree with per-location metrics (:mod:`.tree`): the program,
below it each MPI function, below that each call site; calls, time in seconds and bytes
from the per-function and call-site tables; with an event trace, the diagnosis' wait
states (commscope.diagnose.waits) at each call site.  The trace exporters (Perfetto,
OTF2) are :mod:`commscope.profile.export`; this package sits above the diagnosis,
whose wait states it exports.

:func:`export_profile` is the library function of ``commscope export RUN --format
caliper-json|cube``: it checks the output, reads everything (a damaged file is one
InputError naming it, before anything is written), then writes atomically.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

FORMATS = ("caliper-json", "cube")
DEFAULT_NAMES = {"caliper-json": "caliper.json", "cube": "profile.cubex"}
SUFFIXES = {"caliper-json": ".json", "cube": ".cubex"}


def export_profile(run, fmt, output=None, force=False, rank_summary=False):
    """Write ``run`` (an open profile run) as ``fmt``; returns what was written (path,
    format, ranks, threads, nodes, metrics, trace, wait_states, bytes) and ``notes``
    (what is absent and why, for one warning each)."""
    from ..paths import atomic_output, prepare_output
    from ..profile.export import require_profile
    from . import caliper, cube, tree

    if fmt not in FORMATS:
        raise InputError("--format", None, f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    require_profile(run)
    if output is None:
        path = Path(run.path) / "export" / DEFAULT_NAMES[fmt]
    else:
        path = prepare_output(output)
        if not path.name.endswith(SUFFIXES[fmt]):
            raise InputError(
                "-o",
                None,
                f"{path}: a {fmt} export is named *{SUFFIXES[fmt]} (the readers expect it)",
            )
    if (path.exists() or path.is_symlink()) and not force:
        raise InputError(path, None, "exists; not overwriting it (pass --overwrite to replace it)")
    if path.is_dir() and not path.is_symlink():
        raise InputError(path, None, "is a directory; not replacing it, even with --overwrite")
    t = tree.build(run)  # reads (and checks) every table and the trace: nothing written yet
    if output is None:
        path.parent.mkdir(exist_ok=True)
    with atomic_output(path) as tmp:
        if fmt == "caliper-json":
            caliper.write(t, tmp, rank_summary)
        else:
            cube.write(t, tmp)
    return {
        "path": str(path),
        "format": fmt,
        "ranks": int(t.nranks),
        "threads": int(len(t.locations)),
        "nodes": int(len(t.nodes)),
        "metrics": [
            m.name for m in (caliper.metrics(t) if fmt == "caliper-json" else cube.metrics(t))
        ],
        "trace": t.has_trace,
        "wait_states": int(len(t.waits)) if t.waits is not None else 0,
        "bytes": int(path.stat().st_size),
        "notes": list(t.notes),
    }


__all__ = ["FORMATS", "DEFAULT_NAMES", "export_profile"]
