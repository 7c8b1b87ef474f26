"""Synthetic profile run directories of any size, in the format libcommscope writes.

A stencil code on a 3-D periodic grid of ranks (6 neighbours each), nodes of
``ranks_per_node`` ranks, each rank with ``threads`` threads that call MPI: per
iteration every rank sends and receives one message to and from each neighbour
(MPI_Isend, MPI_Irecv, MPI_Waitall) and joins an MPI_Allreduce; ``laggards`` ranks take
twice the messages.  Snapshots record the counters growing over ``snapshots`` records.
Node files are laid out as the C library lays them out (cs_prof_state.h), from the
layout and metadata of a real run's ``node.<n>.json`` (``template``), so conversion,
reports and fuzzing see what a real job of that size would leave.

With ``trace=True`` the run is traced as ``commscope profile --trace`` traces it: each
rank's ``raw/trace.<rank>.0.bin`` (the header and records :mod:`commscope.collect.trace`
reads, its RECORD and codes), ``raw/callsites.<node>.jsonl`` (every rank listed at
MPI_Finalize, no call sites: every record's site is 0), the counters that say how many
records were written (``trace_records``) and the time each function took (the timers),
and clock pairs that put the ticks on the nanoseconds of the snapshots.  The times come
from a small model of the stencil, rank by rank and iteration by iteration (:func:`simulate`):
``late`` ranks compute ``late_factor`` times longer each iteration, so their neighbours
wait in MPI_Waitall for their messages and everyone else in MPI_Allreduce; the right
diagnosis, known by construction, is load imbalance with those ranks the culprits.

    commscope.profile.synthetic.write_run(path, template, ranks=16384, ranks_per_node=128)
    commscope.profile.synthetic.write_run(path, template, ranks=1024, trace=True, late=(341,))
"""

from __future__ import annotations

import json
from pathlib import Path

from ..lazy import lazy
from ..collect.native_tables import magic
from ..collect.node_files import (
    DIR_ENTRY,
    HEADER_FIELDS,
    NODE_HEADER,
    RECORD_MAGIC,
    SNAP_HEADER,
    SNAP_RECORD,
)
from ..collect import trace as tr
from .settings import DEFAULT_SETS

np = lazy("numpy")

#: The traced model's clock: ticks at 2 GHz from TICK0, nanoseconds from NS0 (the time
#: zero of every rank: MPI_Init returns there).
TICK0, NS0, TICKS_PER_NS = 10**9, 10**12, 2
#: Event codes by name, from the reader's table.
CODE = {name: code for code, name in tr.EVENTS.items()}

GOLDEN = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def grid(ranks):
    """Three factors of ``ranks`` as close to each other as they come."""
    best = (ranks, 1, 1)
    for x in range(1, round(ranks ** (1 / 3)) + 2):
        if ranks % x:
            continue
        for y in range(x, round((ranks // x) ** 0.5) + 2):
            if (ranks // x) % y == 0:
                z = ranks // x // y
                if max(x, y, z) - min(x, y, z) < max(best) - min(best):
                    best = (x, y, z)
    return best


def neighbours(ranks):
    """(ranks, 6) world ranks of each rank's neighbours on a periodic 3-D grid."""
    nx, ny, nz = grid(ranks)
    r = np.arange(ranks)
    x, y, z = r // (ny * nz), (r // nz) % ny, r % nz
    out = []
    for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
        out.append(((x + dx) % nx) * ny * nz + ((y + dy) % ny) * nz + (z + dz) % nz)
    return np.stack(out, axis=1)


def _peer_slot(key, cap):
    return ((key * GOLDEN) & MASK64) >> 40 & (cap - 1)


def _chunks(n, big):
    """Sizes of the chunks holding n slabs (1, 2, 4, ... up to ``big``, then ``big``)."""
    sizes, have = [], 0
    while have < n:
        c = len(sizes)
        sizes.append(1 << c if (1 << c) <= big else big)
        have += sizes[-1]
    return sizes


def write_run(
    path,
    template,
    ranks=16384,
    ranks_per_node=128,
    threads=1,
    iterations=100,
    snapshots=20,
    message_bytes=8192,
    laggards=(),
    seed=0,
    trace=False,
    late=(),
    late_factor=2.0,
    compute_s=1e-3,
    jitter=0.001,
):
    """Write a profile run directory with ``ranks`` ranks at ``path``; returns its path.
    ``trace``: traced as well (module docstring), ``late`` ranks computing
    ``late_factor`` x ``compute_s`` an iteration, the others ``compute_s``, each
    iteration's compute varying by ``jitter`` (its relative standard deviation)."""
    from ..runs import Run

    path = Path(path)
    tmeta = json.loads(Path(template).read_text())
    nodes = (ranks + ranks_per_node - 1) // ranks_per_node
    if ranks_per_node > tmeta["layout"]["max_ranks"]:
        raise ValueError(
            f"ranks_per_node {ranks_per_node}: a node file holds at most "
            f"{tmeta['layout']['max_ranks']} ranks"
        )
    if trace and (laggards or threads != 1):
        raise ValueError("a traced synthetic run has one thread a rank and no laggards")
    if late and not trace:
        raise ValueError("late ranks are a traced run's (trace=True)")
    params = dict(
        program="synthetic-stencil",
        args=[],
        ranks=ranks,
        threads=threads,
        counters=list(DEFAULT_SETS),
        snapshot_every_s=tmeta["snapshot_interval_s"],
        trace=bool(trace),
    )
    run = Run.create(path.parent, "profile", params, name=path.name)
    run.meta["profile"] = {
        "collectors": ["counters"],
        "ranks": {"count": 0},
        "synthetic": {
            "nodes": nodes,
            "ranks_per_node": ranks_per_node,
            "threads": threads,
            "iterations": iterations,
            "snapshots": snapshots,
            "grid": list(grid(ranks)),
        },
    }
    if trace:
        run.meta["profile"]["synthetic"].update(
            late=[int(r) for r in late],
            late_factor=late_factor,
            compute_s=compute_s,
            jitter=jitter,
            message_bytes=message_bytes,
        )
    run.meta["launch"] = {"hosts": [f"n{k:05d}" for k in range(min(nodes, 16))]}
    run.save_meta()
    nbr = neighbours(ranks)
    heavy = np.zeros(ranks, bool)
    heavy[list(laggards)] = True
    sim = (
        simulate(nbr, iterations, late, late_factor, compute_s, message_bytes, seed, jitter)
        if trace
        else None
    )
    for k in range(nodes):
        first, last = k * ranks_per_node, min(ranks, (k + 1) * ranks_per_node)
        timing = None
        if sim is not None:
            timing = _write_traces(run.raw_dir, f"n{k:05d}", tmeta, sim, first, last, message_bytes)
        _write_node(
            run.raw_dir,
            f"n{k:05d}",
            tmeta,
            np.arange(first, last),
            ranks,
            nbr,
            heavy,
            threads,
            iterations,
            snapshots,
            message_bytes,
            seed + k,
            timing,
        )
    wall = float(sim["end_ns"].max()) / 1e9 if sim is not None else 1.0
    run.finish("complete", exit_status=0, wall_s=wall)
    return run.path


# ---- the traced run ---------------------------------------------------------------------

#: The model's costs (ns): an Irecv or Isend call, the step from one call's entry to the
#: next one's, the shortest MPI_Waitall, the step between the records it writes (one per
#: request, as the library writes them when the call returns), from its return to the
#: Allreduce.  A message arrives LATENCY_NS + bytes / BYTES_PER_NS after its send began
#: (a rendezvous one after its receive was posted, if that was later); the Allreduce
#: ends ALLREDUCE_NS (+ per doubling of the ranks) after the last rank entered it.
CALL_NS, STEP_NS, WAITALL_NS, RECORD_NS, GAP_NS = 400, 600, 500, 50, 200
LATENCY_NS, BYTES_PER_NS = 2000, 5.0
ALLREDUCE_NS, ALLREDUCE_LOG_NS = 5000, 1000
#: Records per iteration: 6 IRECV, 6 ISEND, 12 COMPLETE (MPI_Waitall), 1 COLL.
PER_ITERATION = 25


def simulate(
    nbr,
    iterations,
    late=(),
    late_factor=2.0,
    compute_s=1e-3,
    message_bytes=8192,
    seed=0,
    jitter=0.001,
):
    """The stencil's times (ns after NS0), arrays (iterations, ranks): ``post`` (the first
    MPI_Irecv's entry, after the iteration's compute), ``wait_end`` (when MPI_Waitall's
    last request completed), ``coll_begin`` and ``coll_end`` (MPI_Allreduce), and
    ``end_ns`` (ranks,) when each rank returned from MPI_Finalize.  Each iteration's
    compute varies by ``jitter`` (its relative standard deviation, clipped at 3).

    Direction k of a rank's 6 (``nbr``) is the opposite of direction k ^ 1: rank r
    receives in direction k what its neighbour j = nbr[r, k] sent in direction k ^ 1,
    with that direction as the tag.  Each receive completes after the message arrived
    (its send's entry + latency) and each send after its receive was posted, so every
    MPI_Waitall ends after the sends it waited for began."""
    rng = np.random.default_rng(seed)
    R = len(nbr)
    compute = np.full(R, compute_s * 1e9)
    compute[list(late)] *= late_factor
    transfer = LATENCY_NS + message_bytes / BYTES_PER_NS
    coll_ns = ALLREDUCE_NS + ALLREDUCE_LOG_NS * int(np.ceil(np.log2(max(R, 2))))
    opp = np.arange(6) ^ 1
    scale = 1 + jitter * rng.standard_normal((iterations, R)).clip(-3, 3)
    start = 1000 + rng.integers(0, 5000, R)  # MPI_Init returns a little apart
    out = {
        k: np.empty((iterations, R), np.int64)
        for k in ("post", "wait_end", "coll_begin", "coll_end")
    }
    skew = 100 * (np.arange(R) % 5)  # ranks leave the Allreduce a little apart
    for i in range(iterations):
        post = start + (compute * scale[i]).astype(np.int64)
        send_begin = post[:, None] + (6 + np.arange(6))[None, :] * STEP_NS  # (R, 6)
        recv_post = post[:, None] + np.arange(6)[None, :] * STEP_NS
        arrive = send_begin[nbr, opp[None, :]] + transfer  # r's receive k: j's send k^1
        sent = np.maximum(send_begin, recv_post[nbr, opp[None, :]]) + transfer
        wait_begin = post + 12 * STEP_NS
        wait_end = np.maximum.reduce(
            [wait_begin + WAITALL_NS, arrive.max(axis=1), sent.max(axis=1)]
        ).astype(np.int64)
        coll_begin = wait_end + 11 * RECORD_NS + GAP_NS
        coll_end = coll_begin.max() + coll_ns + skew
        for k, v in zip(out, (post, wait_end, coll_begin, coll_end)):
            out[k][i] = v
        start = coll_end
    out["end_ns"] = start + 1000
    out["nbr"] = nbr
    return out


def _write_traces(raw, key, tmeta, sim, first, last, message_bytes):
    """Trace files of world ranks first..last-1 (the ranks of node ``key``), and their
    callsites line; returns the node's ``timing`` (see :func:`_write_node`)."""
    names = [f["name"] for f in tmeta["functions"]]
    fid = {n: names.index(n) for n in ("MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce")}
    world = np.arange(first, last)
    R, n_it = len(world), sim["post"].shape[0]
    post, wend = sim["post"][:, first:last].T, sim["wait_end"][:, first:last].T  # (R, it)
    cb, ce = sim["coll_begin"][:, first:last].T, sim["coll_end"][:, first:last].T
    nbr = sim["nbr"][first:last]  # (R, 6)
    k6, opp = np.arange(6), np.arange(6) ^ 1
    rec = np.zeros((R, n_it, PER_ITERATION), tr.RECORD)
    tb = np.empty((R, n_it, PER_ITERATION), np.int64)
    te = np.empty_like(tb)
    # slots 0-5 IRECV, 6-11 ISEND, 12-23 COMPLETE (the 6 receives, then the 6 sends), 24 COLL
    tb[:, :, :12] = post[:, :, None] + np.arange(12) * STEP_NS
    te[:, :, :12] = tb[:, :, :12] + CALL_NS
    tb[:, :, 12:24] = (post + 12 * STEP_NS)[:, :, None]
    te[:, :, 12:24] = wend[:, :, None] + np.arange(12) * RECORD_NS
    tb[:, :, 24], te[:, :, 24] = cb, ce
    rec["t_begin"], rec["t_end"] = TICK0 + TICKS_PER_NS * tb, TICK0 + TICKS_PER_NS * te
    seq = (np.arange(n_it)[:, None] * 12 + np.arange(12)[None, :] + 1).astype(np.uint64)
    req = (np.uint64(1) << np.uint64(40)) | seq  # thread 0's slab: 1 << 40 | its sequence
    rec["request"][:, :, :12] = req
    rec["request"][:, :, 12:24] = req
    rec["request"][:, :, 24] = 8  # a blocking collective: the bytes it received
    rec["bytes"] = message_bytes
    rec["bytes"][:, :, 24] = 8
    peers = np.concatenate([nbr, nbr], axis=1)[:, None, :]  # (R, 1, 12)
    tags = np.concatenate([opp, k6])[None, None, :]  # a receive's tag: the sender's direction
    rec["peer"][:, :, :12] = peers
    rec["peer"][:, :, 12:24] = peers
    rec["peer"][:, :, 24] = -1
    rec["tag"][:, :, :12] = tags
    rec["tag"][:, :, 12:24] = tags
    rec["tag"][:, :, 24] = fid["MPI_Allreduce"]
    rec["comm"] = 0  # MPI_COMM_WORLD: peers are world ranks
    rec["event"][:, :, :6] = CODE["IRECV"]
    rec["event"][:, :, 6:12] = CODE["ISEND"]
    rec["event"][:, :, 12:24] = CODE["COMPLETE"]
    rec["event"][:, :, 24] = CODE["COLL"]
    rec["flags"][:, :, 12:18] = tr.RECV_SIDE
    rec["func"][:, :, :6] = fid["MPI_Irecv"]
    rec["func"][:, :, 6:12] = fid["MPI_Isend"]
    rec["func"][:, :, 12:24] = fid["MPI_Waitall"]
    rec["func"][:, :, 24] = fid["MPI_Allreduce"]
    head = bytearray(tr.HEADER_BYTES)
    head[:8] = tr.MAGIC
    head[8:16] = np.array([tr.VERSION, tr.RECORD.itemsize], "<u4").tobytes()
    head[32:40] = np.array([TICK0], "<u8").tobytes()  # ticks per second at 24: 0 (node file)
    for i, r in enumerate(world.tolist()):
        head[16:24] = np.array([r, 0], "<i4").tobytes()
        with open(raw / f"trace.{r}.0.bin", "wb") as fh:
            fh.write(head)
            fh.write(rec[i].tobytes())
    lines = [
        json.dumps(
            {
                "rank": r,
                "pid": 10000 + r,
                "depth": 0,
                "sites": [],
                "lost": 0,
                "trace_sites": 0,
                "objects": [],
            }
        )
        for r in world.tolist()
    ]
    (raw / f"callsites.{key}.jsonl").write_text("\n".join(lines) + "\n")
    ticks = {
        "MPI_Irecv": 6 * n_it * CALL_NS,
        "MPI_Isend": 6 * n_it * CALL_NS,
        "MPI_Waitall": (wend + 11 * RECORD_NS - (post + 12 * STEP_NS)).sum(axis=1),
        "MPI_Allreduce": (ce - cb).sum(axis=1),
    }
    return {
        "end_ns": sim["end_ns"][first:last],
        "ticks": {k: TICKS_PER_NS * np.broadcast_to(v, (R,)) for k, v in ticks.items()},
        "records": np.full(R, n_it * PER_ITERATION),
    }


def _write_node(
    raw,
    key,
    tmeta,
    world,
    world_size,
    nbr,
    heavy,
    threads,
    iterations,
    snapshots,
    message_bytes,
    seed,
    timing=None,
):
    """One node's files; ``timing`` (a traced run's, from :func:`_write_traces`): each
    rank's end (ns after NS0), its time per function (ticks) and records written."""
    lay = tmeta["layout"]
    rng = np.random.default_rng(seed)
    meta = dict(
        tmeta,
        node=key,
        host=key,
        world_size=world_size,
        nonce=f"{rng.integers(1, 2**62):016x}",
        node_file=f"node.{key}.bin",
        snapshot_file=f"node.{key}.snap",
        comms_file=f"node.{key}.comms.csv",
        files_file=f"node.{key}.files.csv",
        cpus_online=max(len(world) * threads, tmeta.get("cpus_online") or 1),  # a core each
    )
    can = dict(meta["canonical"])
    can["peers"] = can["bins"] + meta["bins"]["rows"] * meta["bins"]["count"]
    can["pvars"] = can["peers"] + len(meta["peers"]["arrays"]) * world_size
    pvars = []
    off = 0
    for p in meta["pvars"]:  # bound pvars have a value per world rank
        count = world_size if "per peer" in p.get("bind", "") else p["count"]
        pvars.append(dict(p, offset=off, count=count))
        off += count
    meta["pvars"] = pvars
    can["words"] = can["pvars"] + off
    meta["canonical"] = can
    page, words = lay["page"], lay["slab_words"]
    fn = {f["name"]: f for f in meta["functions"]}
    cn = {c["name"]: c for c in meta["counters"]}
    R = len(world)
    nslabs = threads
    chunk_sizes = _chunks(nslabs, lay["big_chunk"])
    slab_bytes = words * 8
    rank_bytes = (
        lay["rank_block_bytes"] + sum(chunk_sizes) * slab_bytes + nslabs * page
    )  # + a bin block per slab
    first_block = lay["dir_at"] + lay["max_ranks"] * 16
    size = first_block + R * rank_bytes
    buf = np.zeros(size // 8, np.uint64)
    raw_bytes = buf.view(np.uint8)
    head = np.zeros(1, np.dtype(NODE_HEADER))
    (head["magic"], head["version"]), head["page"] = magic("NODE"), page
    head["next_free"], head["nranks"], head["max_ranks"], head["dir_at"] = (
        size,
        R,
        lay["max_ranks"],
        lay["dir_at"],
    )
    head["nonce"] = int(meta["nonce"], 16)
    raw_bytes[: head.itemsize] = head.view(np.uint8)
    blocks = first_block + np.arange(R) * rank_bytes
    d = np.zeros(R, np.dtype(DIR_ENTRY))
    d["rank"], d["ready"], d["block"] = world, 1, blocks
    raw_bytes[lay["dir_at"] : lay["dir_at"] + d.nbytes] = d.view(np.uint8)
    hdr = np.zeros(R, np.dtype(HEADER_FIELDS))
    (hdr["magic"], hdr["version"]) = magic("RANK")
    hdr["block_bytes"], hdr["slab_words"] = lay["rank_block_bytes"], words
    hdr["slabs_mapped"], hdr["nslabs"] = sum(chunk_sizes), nslabs
    hdr["nonce"] = rng.integers(1, 2**62, R)
    hdr["rank"], hdr["world_size"], hdr["pid"], hdr["state"] = world, world_size, 10000 + world, 2
    hdr["seq"] = snapshots
    hdr["tick0"], hdr["ns0"] = TICK0, NS0
    end_ns = timing["end_ns"] if timing is not None else 60 * 10**9  # 2 GHz, 60 s
    hdr["tick1"], hdr["ns1"] = TICK0 + TICKS_PER_NS * end_ns, NS0 + end_ns
    hdr["thread_level"] = 3 if threads > 1 else 0
    hv = hdr.view(np.uint8).reshape(R, -1)
    raw_bytes[blocks[:, None] + np.arange(hdr.itemsize)] = hv
    # slabs: chunk c at block + rank block + sum of earlier chunks
    chunk_at = np.cumsum([0] + chunk_sizes[:-1]) * slab_bytes + lay["rank_block_bytes"]
    for c, at in enumerate(chunk_at):
        buf[(blocks + lay["chunks_at"]) // 8 + c] = blocks + at
    slab_starts = np.concatenate(
        [
            blocks[:, None] + at + np.arange(n)[None, :] * slab_bytes
            for at, n in zip(chunk_at, chunk_sizes)
        ],
        axis=1,
    )[:, :nslabs]
    bin_block_at = blocks + lay["rank_block_bytes"] + sum(chunk_sizes) * slab_bytes
    mult = np.where(heavy[world], 2, 1)[:, None]
    msgs = iterations * 6 * mult  # per rank, thread 0 does the point-to-point work
    totals = {}
    for t in range(nslabs):
        s = slab_starts[:, t] // 8
        w = lambda off: s + off  # noqa: E731 - word index in buf of slab offset `off`
        p2p = t == 0
        counts = {
            "MPI_Isend": msgs[:, 0] if p2p else 0,
            "MPI_Irecv": msgs[:, 0] if p2p else 0,
            "MPI_Waitall": iterations * mult[:, 0] if p2p else 0,
            "MPI_Allreduce": iterations if p2p else 0,
            "MPI_Barrier": 1 if t else 0,
            "MPI_Init_thread": 1 if p2p else 0,
            "MPI_Finalize": 1 if p2p else 0,
        }
        for name, n in counts.items():
            if name in fn:
                buf[w(fn[name]["calls_offset"])] = n
        if timing is not None and p2p:
            for name, ticks in timing["ticks"].items():
                buf[w(fn[name]["ticks_offset"])] = ticks
            buf[w(cn["trace_records"]["offset"])] = timing["records"]
        if "MPI_Isend" in fn and p2p:
            buf[w(fn["MPI_Isend"]["bytes_offset"])] = msgs[:, 0] * message_bytes
            buf[w(fn["MPI_Irecv"]["bytes_offset"])] = msgs[:, 0] * message_bytes
        vals = (
            {
                "messages_sent": msgs[:, 0],
                "messages_received": msgs[:, 0],
                "bytes_sent": msgs[:, 0] * message_bytes,
                "bytes_received": msgs[:, 0] * message_bytes,
                "collective_bytes": iterations * 8,
                "requests_started": 2 * msgs[:, 0],
                "requests_completed": 2 * msgs[:, 0],
            }
            if p2p
            else {}
        )
        for name, v in vals.items():
            buf[w(cn[name]["offset"])] = v
            totals[name] = np.broadcast_to(np.asarray(v, dtype=np.int64), (R,))
        buf[w(lay["tid_offset"])] = 20000 + world * 8 + t
        buf[w(lay["peercap_offset"])] = 16
        if p2p:
            # size bins: Isend and Irecv rows in the slab's one bin block
            b = int(message_bytes).bit_length()
            u16 = raw_bytes[:size].view(np.uint16)
            for row, name in enumerate(("MPI_Isend", "MPI_Irecv", "MPI_Allreduce")):
                if name not in fn or "bin_row" not in fn[name]:
                    continue
                u16[(slab_starts[:, t] + lay["binmap_offset"] * 8) // 2 + fn[name]["bin_row"]] = (
                    row + 1
                )
                nbin = b if name != "MPI_Allreduce" else 4
                n = msgs[:, 0] if name != "MPI_Allreduce" else iterations
                row_words = meta["bins"].get("row_words", meta["bins"]["count"])
                buf[(bin_block_at + row * row_words * 8) // 8 + nbin] = n
            buf[w(lay["binrows_offset"])] = 3
            buf[w(lay["binblocks_offset"])] = bin_block_at
            # peers: 6 neighbours in the inline table (16 entries)
            k = lay["peer_entry_words"]
            arrays = [a["name"] for a in meta["peers"]["arrays"]]
            for j in range(6):
                peer = nbr[world, j]
                keyv = peer + 1
                slot = np.array([_peer_slot(int(x), 16) for x in keyv])
                base = s + lay["peers_offset"]
                # linear probing, as the C table does
                for i in range(R):
                    sl = int(slot[i])
                    while buf[base[i] + sl * k] not in (0, keyv[i]):
                        sl = (sl + 1) & 15
                    e = base[i] + sl * k
                    buf[e] = keyv[i]
                    per = iterations * mult[i, 0]
                    for a, v in (
                        ("messages_sent", per),
                        ("bytes_sent", per * message_bytes),
                        ("messages_received", per),
                        ("bytes_received", per * message_bytes),
                    ):
                        buf[e + 1 + arrays.index(a)] += v
            buf[w(lay["peercount_offset"])] = len(np.unique(nbr[0]))
    # rank-scope words
    for name, v in (
        ("outstanding_requests_hwm", 12 * mult[:, 0]),
        ("posted_receives_hwm", 6 * mult[:, 0]),
    ):
        if name in cn:
            buf[(blocks + lay["rank_words_at"]) // 8 + cn[name]["offset"]] = v
    (raw / meta["node_file"]).write_bytes(buf.tobytes())
    span = float(timing["end_ns"].max()) if timing is not None else None
    _write_snapshots(raw / meta["snapshot_file"], meta, world, totals, snapshots, span)
    lines = ["rank,comm_id,size,created_by,parent_id,inter,world_ranks"]
    for r in world.tolist():
        lines += [
            f"{r},0,{world_size},MPI_COMM_WORLD,-1,0,0-{world_size - 1}",
            f"{r},1,1,MPI_COMM_SELF,-1,0,{r}",
        ]
    (raw / meta["comms_file"]).write_text("\n".join(lines) + "\n")
    (raw / f"node.{key}.json").write_text(json.dumps(meta, indent=1))


def _write_snapshots(path, meta, world, totals, n, span_ns=None):
    """n records per rank: the counters growing linearly, the first holding them all,
    over ``span_ns`` (default 1 s).  Header and record heads are layout.def's records,
    as the reader reads them."""
    words = meta["canonical"]["words"]
    head = np.zeros(1, np.dtype(SNAP_HEADER))
    (head["magic"], head["version"]), head["words"] = magic("SNAP"), words
    cn = {c["name"]: c["offset"] for c in meta["counters"]}
    names = [k for k in totals if k in cn]
    idx = np.array(sorted(cn[k] for k in names), dtype=np.uint32)
    order = [k for _, k in sorted((cn[k], k) for k in names)]
    out = [head.tobytes()]
    ns0, ticks0 = NS0, TICK0
    step = int(span_ns // (n + 1)) if span_ns else 5 * 10**7
    rec = np.zeros(1, np.dtype(SNAP_RECORD))
    rec["magic"], rec["n"] = RECORD_MAGIC, len(idx)
    pad = np.zeros(((len(idx) + 1) // 2) * 2, np.uint32)  # indices padded to whole words
    pad[: len(idx)] = idx
    for k in range(1, n + 1):
        frac = k / n
        for i, r in enumerate(world.tolist()):
            vals = np.array([int(totals[name][i] * frac) for name in order], dtype=np.uint64)
            rec["rank"], rec["seq"] = r, k
            rec["ticks"], rec["ns"] = ticks0 + k * TICKS_PER_NS * step, ns0 + k * step + r
            out += [rec.tobytes(), pad.tobytes(), vals.tobytes()]
    path.write_bytes(b"".join(out))
