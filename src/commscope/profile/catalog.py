"""The counter table of native/profiler/counters.def, for --list-counters and the docs.

The C library writes the same table into every counters.<rank>.json; this reads
the source so the table is known before anything has run.
"""

import re

from ..paths import native_dir

_ENTRY = re.compile(
    r'CS_COUNTER\((\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"\)', re.S
)


_PEER = re.compile(r'CS_PEER_ARRAY\((\w+),\s*(\w+),\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"\)', re.S)
_FILE = re.compile(r'CS_FILE_COUNTER\((\w+),\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"\)', re.S)


def _definitions():
    text = (native_dir() / "profiler" / "counters.def").read_text()
    return re.sub(r'"\s*\n\s*"', "", text)  # join continued string literals


def counter_catalog():
    """[{name, kind, scope, set, unit, description}] in table order: the counters, then
    the per-peer arrays (scope "per peer") and the per-file counters ("per file")."""
    text = _definitions()
    rows = [
        dict(
            name=m[0],
            kind=m[1].lower(),
            scope=m[2].lower(),
            set=m[3].lower(),
            unit=m[4],
            description=m[5],
        )
        for m in _ENTRY.findall(text)
    ]
    rows += [
        dict(
            name=m[0],
            kind="regular",
            scope="per peer",
            set=m[1].lower(),
            unit=m[2],
            description=m[3],
        )
        for m in _PEER.findall(text)
    ]
    rows += [
        dict(name=m[0], kind="regular", scope="per file", set="bytes", unit=m[1], description=m[2])
        for m in _FILE.findall(text)
    ]
    return rows


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
        "(small/large); breakpoints COMMSCOPE_COLL_SMALL_BYTES (2048) and "
        "COMMSCOPE_COLL_SMALL_COMM (16 ranks)",
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
