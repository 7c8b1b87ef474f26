"""Caliper's split JSON, the format ``hatchet.GraphFrame.from_caliper`` and
``thicket.Thicket.from_caliper`` read (docs/export.md).

One object: ``columns`` and ``column_metadata`` (``is_value``, ``attribute.unit``,
``attribute.description``), ``nodes`` (label, column ``path``, parent), ``data`` (one
row per node and rank), and every other top-level key is run metadata (meta.json's facts,
:func:`.tree.run_facts`), which Thicket puts in its metadata table.

The reader decides two things (hatchet's readers/caliper_reader.py, llnl-hatchet
2026.2): ``from_caliper`` orders nodes by default and takes node ``i``'s order from the
first column of data row ``i``, so the first column is ``Node order`` and the first
rows are rank 0's, one per node in node order; and a column ``mpi.rank`` is its rank
index.  Metrics are summed over a rank's threads.  Thicket's ``groupby`` and metadata
filters take one row per node and profile, not a rank level: ``--rank-summary`` writes
that (sums over the ranks, with each metric's least, most and mean rank).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..lazy import lazy
from .tree import WAIT_KINDS, run_facts

np = lazy("numpy")


@dataclass
class Metric:
    name: str
    unit: str
    description: str


def metrics(t):
    out = [
        Metric("calls", "count", "calls of the MPI function at this call path (a count)"),
        Metric(
            "time_s",
            "sec",
            "time in the MPI calls at this call path, seconds; at the program node the "
            "time outside MPI (wall_s minus time in MPI), seconds",
        ),
        Metric("bytes", "bytes", "bytes the calls at this call path sent and received, bytes"),
    ]
    if t.has_trace:
        out.append(
            Metric(
                "lost_s",
                "sec",
                "time the calls at this call path waited, all wait states together "
                "(the diagnosis' waits), seconds",
            )
        )
        out += [
            Metric(f"{k}_s", "sec", f"time lost to {k.replace('_', ' ')} wait states here, seconds")
            for k in WAIT_KINDS
        ]
    if t.has_openmp:
        out += [
            Metric(
                "openmp_s",
                "sec",
                "time the OpenMP threads worked in this region, summed over threads, seconds",
            ),
            Metric(
                "openmp_barrier_s",
                "sec",
                "time the OpenMP threads waited at this region's barriers, summed over threads, seconds",
            ),
        ]
    return out


def _value(t, names, per_rank, waits, node, rank):
    row = []
    for m in names:
        if m == "lost_s":
            v = sum(waits.get((node, rank, k), 0.0) for k in WAIT_KINDS)
        elif m.endswith("_s") and m[:-2] in WAIT_KINDS:
            v = waits.get((node, rank, m[:-2]), 0.0)
        else:
            v = per_rank[m].get((node, rank), 0)
        row.append(int(v) if m == "calls" else float(v))
    return row


def document(t, rank_summary=False):
    """The split-JSON object of a :class:`~.tree.Tree`: a row per node and rank, or with
    ``rank_summary`` a row per node with each metric summed over the ranks and its
    ``min_rank_``, ``max_rank_`` and ``mean_rank_`` (what Thicket's groupby and
    filters need: they take a row per node and profile, no rank level)."""
    ms = metrics(t)
    names = [m.name for m in ms]
    per_rank = {
        m: t.per_rank(m) for m in ("calls", "time_s", "bytes", "openmp_s", "openmp_barrier_s")
    }
    if not per_rank["time_s"]:
        ms = [m for m in ms if m.name != "time_s"]
        names.remove("time_s")
    waits = t.wait_by(("node", "rank", "kind"))
    data = []
    if rank_summary:
        for node in t.nodes["id"]:
            by_rank = np.array(
                [_value(t, names, per_rank, waits, node, r) for r in range(t.nranks)], dtype=float
            )
            row = [int(node)]
            for j, m in enumerate(names):
                col = by_rank[:, j]
                row.append(int(col.sum()) if m == "calls" else float(col.sum()))
            for stat in ("min", "max", "mean"):
                row += [float(getattr(by_rank[:, j], stat)()) for j in range(len(names))]
            data.append(row + [int(node)])
        columns = ["Node order", *names]
        columns += [f"{s}_rank_{m}" for s in ("min", "max", "mean") for m in names]
        described = list(ms) + [
            Metric(f"{s}_rank_{m.name}", m.unit, f"the {word} over the ranks of: {m.description}")
            for s, word in (("min", "least"), ("max", "most"), ("mean", "mean"))
            for m in ms
        ]
        head = [{"is_value": True, "attribute.alias": "Node order"}]
    else:
        for rank in range(t.nranks):
            for node in t.nodes["id"]:
                data.append(
                    [int(node), rank, *_value(t, names, per_rank, waits, node, rank), int(node)]
                )
        columns = ["Node order", "mpi.rank", *names]
        described = ms
        head = [
            {"is_value": True, "attribute.alias": "Node order"},
            {"is_value": True, "attribute.description": "the rank (MPI_COMM_WORLD)"},
        ]
    columns.append("path")
    column_metadata = (
        head
        + [
            {"is_value": True, "attribute.unit": m.unit, "attribute.description": m.description}
            for m in described
        ]
        + [{"is_value": False}]
    )
    nodes = []
    for n in t.nodes.itertuples(index=False):
        node = {"label": n.label, "column": "path"}
        if n.parent >= 0:
            node["parent"] = int(n.parent)
        nodes.append(node)
    doc = {"data": data, "columns": columns, "column_metadata": column_metadata, "nodes": nodes}
    facts = run_facts(t.meta)
    facts["run"] = t.run_path
    facts["cali.channel"] = "commscope"
    facts["rank_summary"] = bool(rank_summary)
    doc.update({k: v for k, v in facts.items() if k not in doc})  # never a section's name
    return doc


def write(t, path, rank_summary=False):
    with open(path, "w") as fh:
        json.dump(document(t, rank_summary), fh, indent=1, allow_nan=False)
