"""Cube 4 (``.cubex``): the profile and its wait states for CubeGUI and pycubexr.

A ``.cubex`` is a tar of ``anchor.xml`` (metric tree, regions and call tree, system
tree) and two files per metric, ``<id>.index`` and ``<id>.data`` (docs/export.md).

* **Metric tree** (Scalasca's): ``time_s`` > ``mpi_time_s`` > ``communication_s`` >
  ``p2p_s`` > ``late_sender_s``, ``late_receiver_s``, ``wrong_order_s``; and
  ``collective_s`` > ``wait_nxn_s``, ``late_broadcast_s``, ``late_scatter_s``,
  ``early_reduce_s``, ``early_gather_s``; beside it ``load_imbalance_s``, ``calls`` and
  ``bytes`` (and ``openmp_s``, ``openmp_barrier_s`` with OMPT data).  As Cube shows a
  metric with its children folded in, a parent stores only what its children do not:
  ``time_s`` the time outside MPI, ``mpi_time_s`` the MPI calls that do not
  communicate (init, communicators, ...), ``p2p_s`` / ``collective_s`` a call's time
  minus its waits.  Without an event trace the wait states are absent and
  ``p2p_s``/``collective_s`` hold the whole time.
* **Call tree**: one root, the program (:mod:`.tree`), > MPI function > call site.
* **System tree**: the machine > one node per host > one process per rank > one thread
  per thread that called MPI.

What the reader (pycubexr 2.1) decides, where the format leaves room: one root call
node and one root system tree node; every metric typed ``EXCLUSIVE`` or
``INCLUSIVE`` (here all ``EXCLUSIVE``: values per call node, without its children);
system tree ids in an ``Id`` attribute and a node's class in a ``class`` attribute
(written as an element too); each index file lists its call nodes explicitly (a sparse
index: ``CUBEX.INDEX``, the int32 1 that tells the byte order, an int16 version, one
byte of index type, the count, then the call node positions in depth-first order), and
a data file is ``CUBEX.DATA`` then one float64 (uint64 for ``calls``) per call node and
location, little-endian.
"""

from __future__ import annotations

import io
import struct
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ..lazy import lazy
from .tree import COLLECTIVE_WAITS, P2P_WAITS, WAIT_KINDS, run_facts

np = lazy("numpy")

_WAIT_NAMES = {
    "late_sender": ("Late Sender", "a receive (or the Wait/Test completing an Irecv) entered before its matched send: the time it waited for the send, seconds"),
    "late_receiver": ("Late Receiver", "a synchronising send (MPI_Ssend, or above the eager limit) entered before its receive was posted: the time it waited, seconds"),
    "wrong_order": ("Messages in Wrong Order", "the part of a late-sender wait after another message for this rank, received later, had been sent, seconds"),
    "wait_nxn": ("Wait at N x N", "a member of an N x N collective (Allreduce, Barrier, Alltoall, ...) waiting for the last member to enter, seconds"),
    "late_broadcast": ("Late Broadcast", "a non-root of a broadcast waiting for the root to enter, seconds"),
    "late_scatter": ("Late Scatter", "a non-root of a scatter waiting for the root to enter, seconds"),
    "early_reduce": ("Early Reduce", "the root of a reduce waiting for the last non-root to enter, seconds"),
    "early_gather": ("Early Gather", "the root of a gather waiting for the last non-root to enter, seconds"),
}  # fmt: skip


@dataclass
class Metric:
    name: str
    display: str
    unit: str
    description: str
    parent: str | None = None
    dtype: str = "DOUBLE"


def metrics(t):
    """The metric tree of ``t`` in preorder (a parent before its children)."""
    out = [
        Metric("time_s", "Time", "sec", "time of the threads that call MPI; stored: outside MPI (wall_s minus time in MPI), seconds"),
        Metric("mpi_time_s", "MPI", "sec", "time in MPI calls; stored: calls that do not communicate (init, finalize, communicators, ...), seconds", "time_s"),
        Metric("communication_s", "Communication", "sec", "time in MPI calls that communicate, seconds (nothing stored of its own)", "mpi_time_s"),
        Metric("p2p_s", "Point-to-point", "sec", "time in point-to-point calls (and the Wait/Test completing them); stored: minus their wait states, seconds", "communication_s"),
    ]  # fmt: skip
    if t.has_trace:
        out += [
            Metric(f"{k}_s", *_WAIT_NAMES[k][:1], "sec", _WAIT_NAMES[k][1], "p2p_s")
            for k in P2P_WAITS
        ]
    out.append(Metric("collective_s", "Collective", "sec", "time in collective calls; stored: minus their wait states, seconds", "communication_s"))  # fmt: skip
    if t.has_trace:
        out += [Metric(f"{k}_s", *_WAIT_NAMES[k][:1], "sec", _WAIT_NAMES[k][1], "collective_s") for k in COLLECTIVE_WAITS]  # fmt: skip
    if t.useful is not None:
        out.append(Metric("load_imbalance_s", "Load imbalance", "sec", "time a rank worked outside MPI above the mean of the ranks (the diagnosis' useful time), at the program on its first thread, seconds"))  # fmt: skip
    out += [
        Metric("calls", "Calls", "occ", "calls of the MPI function at this call path (a count, occurrences)", dtype="UINT64"),
        Metric("bytes", "Bytes", "bytes", "bytes the calls at this call path sent and received, bytes"),
    ]  # fmt: skip
    if t.has_openmp:
        out += [
            Metric("openmp_s", "OpenMP work", "sec", "time the OpenMP threads worked in this region, summed over threads, on the rank's first thread, seconds"),
            Metric("openmp_barrier_s", "OpenMP barrier", "sec", "time the OpenMP threads waited at this region's barriers, summed over threads, on the rank's first thread, seconds"),
        ]  # fmt: skip
    return out


def _locations(t):
    """Locations in system-tree order: [(host, rank, thread)]."""
    loc = t.locations
    hosts = list(dict.fromkeys(loc.sort_values(["rank", "thread"])["host"]))
    out = []
    for h in hosts:
        mine = loc[loc["host"] == h].sort_values(["rank", "thread"])
        out += [(h, int(r), int(th)) for r, th in zip(mine["rank"], mine["thread"])]
    return out


def values(t, locs=None):
    """{metric name: array (call nodes x locations)} as stored (see the module docstring)."""
    locs = _locations(t) if locs is None else locs
    col = {(r, th): i for i, (_h, r, th) in enumerate(locs)}
    first = {}
    for i, (_h, r, _th) in enumerate(locs):
        first.setdefault(r, i)
    n, L = len(t.nodes), len(locs)
    raw = {
        m: np.zeros((n, L)) for m in ("time_s", "calls", "bytes", "openmp_s", "openmp_barrier_s")
    }
    for v in t.values.itertuples(index=False):
        j = col.get((v.rank, v.thread), first.get(v.rank)) if v.thread >= 0 else first.get(v.rank)
        if j is not None and v.metric in raw:
            raw[v.metric][v.node, j] += v.value
    waits = {k: np.zeros((n, L)) for k in WAIT_KINDS}
    for (node, rank, thread, kind), x in t.wait_by().items():
        j = col.get((rank, thread), first.get(rank))
        if j is not None and kind in waits:
            waits[kind][node, j] += x
    family = t.nodes["family"].to_numpy()
    is_root = (t.nodes["kind"] == "program").to_numpy()
    time = raw["time_s"]
    all_waits = sum(waits.values())
    comm_own = np.clip(time - all_waits, 0.0, None)
    out = {
        "time_s": np.where(is_root[:, None], time, 0.0),
        "mpi_time_s": np.where((family == "other")[:, None], time, 0.0),
        "communication_s": np.zeros((n, L)),
        "p2p_s": np.where((family == "p2p")[:, None], comm_own, 0.0),
        "collective_s": np.where((family == "collective")[:, None], comm_own, 0.0),
        "calls": raw["calls"],
        "bytes": raw["bytes"],
        "openmp_s": raw["openmp_s"],
        "openmp_barrier_s": raw["openmp_barrier_s"],
    }
    out.update({f"{k}_s": w for k, w in waits.items()})
    imb = np.zeros((n, L))
    if t.useful is not None and len(t.useful):
        u = t.useful.set_index("rank")["useful_s"]
        for r, x in (u - u.mean()).clip(lower=0).items():
            if int(r) in first:
                imb[0, first[int(r)]] = float(x)
    out["load_imbalance_s"] = imb
    return out


def _text(parent, tag, text):
    e = ET.SubElement(parent, tag)
    e.text = "" if text is None else str(text)
    return e


def anchor(t, ms, locs):
    cube = ET.Element("cube", version="4.0")
    ET.SubElement(cube, "attr", key="CUBE_CT_AGGR", value="SUM")
    for k, v in run_facts(t.meta).items():
        ET.SubElement(cube, "attr", key=f"commscope.{k}", value="" if v is None else str(v))
    ET.SubElement(cube, "attr", key="commscope.run", value=t.run_path)
    doc = ET.SubElement(cube, "doc")
    ET.SubElement(doc, "mirrors")
    mt = ET.SubElement(cube, "metrics", title="commscope")
    elem = {}
    for i, m in enumerate(ms):
        parent = elem[m.parent] if m.parent else mt
        e = ET.SubElement(parent, "metric", id=str(i), type="EXCLUSIVE")
        _text(e, "disp_name", m.display)
        _text(e, "uniq_name", m.name)
        _text(e, "dtype", m.dtype)
        _text(e, "uom", m.unit)
        _text(e, "val", "")
        _text(e, "url", "")
        _text(e, "descr", m.description)
        elem[m.name] = e
    prog = ET.SubElement(cube, "program")
    for n in t.nodes.itertuples(index=False):
        paradigm = "mpi" if n.kind in ("function", "callsite") else "openmp" if n.kind == "openmp" else "user"  # fmt: skip
        line = n.line if n.kind == "callsite" and n.line is not None and n.line == n.line else -1
        mod = n.file if isinstance(n.file, str) else ""
        r = ET.SubElement(prog, "region", id=str(n.id), mod=mod, begin=str(int(line)), end=str(int(line)))  # fmt: skip
        _text(r, "name", n.label)
        _text(r, "mangled_name", n.label)
        _text(r, "paradigm", paradigm)
        _text(r, "role", "function" if n.kind != "openmp" else "parallel")
        _text(r, "url", "")
        _text(r, "descr", {"program": "the program", "function": "an MPI function", "callsite": f"a call site of {n.function}", "openmp": "an OpenMP region"}[n.kind])  # fmt: skip
    cn = {}
    for n in t.nodes.itertuples(index=False):
        parent = prog if n.parent < 0 else cn[n.parent]
        cn[n.id] = ET.SubElement(parent, "cnode", id=str(n.id), calleeId=str(n.id))
    system = ET.SubElement(cube, "system")
    machine = ET.SubElement(system, "systemtreenode", Id="0", **{"class": "machine"})
    _text(machine, "name", "machine")
    _text(machine, "class", "machine")
    hosts, groups = {}, {}
    for lid, (h, r, th) in enumerate(locs):
        if h not in hosts:
            hosts[h] = ET.SubElement(machine, "systemtreenode", Id=str(len(hosts) + 1), **{"class": "node"})  # fmt: skip
            _text(hosts[h], "name", h)
            _text(hosts[h], "class", "node")
        if r not in groups:
            g = groups[r] = ET.SubElement(hosts[h], "locationgroup", Id=str(len(groups)))
            _text(g, "name", f"rank {r}")
            _text(g, "rank", r)
            _text(g, "type", "process")
        loc = ET.SubElement(groups[r], "location", Id=str(lid))
        _text(loc, "name", f"thread {th}")
        _text(loc, "rank", th)
        _text(loc, "type", "thread")
    ET.indent(cube)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(cube, encoding="utf-8")


def _index(ncnodes):
    head = b"CUBEX.INDEX" + struct.pack("<ihbi", 1, 0, 1, ncnodes)
    return head + struct.pack(f"<{ncnodes}i", *range(ncnodes))


def write(t, path):
    ms = metrics(t)
    locs = _locations(t)
    vals = values(t, locs)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:

        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))

        add("anchor.xml", anchor(t, ms, locs))
        for i, m in enumerate(ms):
            dt = "<u8" if m.dtype == "UINT64" else "<f8"
            a = vals[m.name]
            a = np.rint(a).astype(dt) if m.dtype == "UINT64" else a.astype(dt)
            add(f"{i}.index", _index(len(t.nodes)))
            add(f"{i}.data", b"CUBEX.DATA" + a.tobytes(order="C"))
