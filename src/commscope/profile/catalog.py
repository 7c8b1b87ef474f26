"""The counter table of native/profiler/counters.def, for --list-counters and the docs.

The C library writes the same table into every node.<n>.json; this reads the source
(through the build's own parser, collect.native_tables) so the table is known before
anything has run.
"""

from ..collect.native_tables import rows
from .settings import default


def counter_catalog():
    """[{name, kind, scope, set, unit, description}] in table order: the counters, then
    the per-peer arrays (scope "per peer") and the per-file counters ("per file")."""
    out = [
        dict(
            name=name,
            kind=kind.lower(),
            scope=scope.lower(),
            set=cset.lower(),
            unit=unit,
            description=desc,
        )
        for name, kind, scope, cset, unit, desc in rows("counters", "CS_COUNTER")
    ]
    out += [
        dict(
            name=name,
            kind="regular",
            scope="per peer",
            set=cset.lower(),
            unit=unit,
            description=desc,
        )
        for name, cset, unit, desc in rows("counters", "CS_PEER_ARRAY")
    ]
    out += [
        dict(name=name, kind="regular", scope="per file", set="bytes", unit=unit, description=desc)
        for name, unit, desc in rows("counters", "CS_FILE_COUNTER")
    ]
    return out


PER_FUNCTION = [
    dict(
        name="calls",
        kind="regular",
        set="calls (always)",
        unit="calls",
        description="calls of each wrapped MPI function",
    ),
    dict(
        name="time",
        kind="timer",
        set="timers",
        unit="ticks -> s",
        description="time inside each wrapped MPI function (raw ticks, converted by readers)",
    ),
    dict(
        name="size bins",
        kind="bin",
        set="bins",
        unit="messages",
        description="messages per power-of-two size bin, per function (receives: size received); "
        "with the timers also the time of the function's own calls that moved a "
        "message of the bin",
    ),
    dict(
        name="collective bins",
        kind="bin",
        set="bins",
        unit="calls",
        description="collective calls by message size (small/large) x communicator size "
        "(small/large); breakpoints COMMSCOPE_COLL_SMALL_BYTES "
        f"({default('COMMSCOPE_COLL_SMALL_BYTES')}) and COMMSCOPE_COLL_SMALL_COMM "
        f"({default('COMMSCOPE_COLL_SMALL_COMM')} ranks)",
    ),
]


def catalog_markdown():
    rows = ["| counter | kind | scope | set | unit | description |", "|---|---|---|---|---|---|"]
    for c in counter_catalog():
        rows.append(
            f"| `{c['name']}` | {c['kind']} | {c['scope']} | {c['set']} | {c['unit']} | "
            f"{c['description']} |"
        )
    for c in PER_FUNCTION:
        rows.append(
            f"| {c['name']} | {c['kind']} | per function | {c['set']} | {c['unit']} | "
            f"{c['description']} |"
        )
    return "\n".join(rows) + "\n"
