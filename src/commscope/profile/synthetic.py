"""Synthetic profile run directories of any size, in the format libcommscope writes.

A stencil code on a 3-D periodic grid of ranks (6 neighbours each), nodes of
``ranks_per_node`` ranks, each rank with ``threads`` threads that call MPI: per
iteration every rank sends and receives one message to and from each neighbour
(MPI_Isend, MPI_Irecv, MPI_Waitall) and joins an MPI_Allreduce; ``laggards`` ranks take
twice the messages.  Snapshots record the counters growing over ``snapshots`` records.
Node files are laid out as the C library lays them out (cs_prof_state.h), from the
layout and metadata of a real run's ``node.<n>.json`` (``template``), so conversion,
reports and fuzzing see what a real job of that size would leave.

    commscope.profile.synthetic.write_run(path, template, ranks=16384, ranks_per_node=128)
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
from .settings import DEFAULT_SETS

np = lazy("numpy")

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
):
    """Write a profile run directory with ``ranks`` ranks at ``path``; returns its path."""
    from ..runs import Run

    path = Path(path)
    tmeta = json.loads(Path(template).read_text())
    nodes = (ranks + ranks_per_node - 1) // ranks_per_node
    params = dict(
        program="synthetic-stencil",
        args=[],
        ranks=ranks,
        threads=threads,
        counters=list(DEFAULT_SETS),
        snapshot_every_s=tmeta["snapshot_interval_s"],
        trace=False,
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
    run.meta["launch"] = {"hosts": [f"n{k:05d}" for k in range(min(nodes, 16))]}
    run.save_meta()
    nbr = neighbours(ranks)
    heavy = np.zeros(ranks, bool)
    heavy[list(laggards)] = True
    for k in range(nodes):
        first, last = k * ranks_per_node, min(ranks, (k + 1) * ranks_per_node)
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
        )
    run.finish("complete", exit_status=0, wall_s=1.0)
    return run.path


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
):
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
    hdr["tick0"], hdr["ns0"] = 10**9, 10**12
    hdr["tick1"], hdr["ns1"] = 10**9 + 2 * 10**9 * 60, 10**12 + 60 * 10**9  # 2 GHz, 60 s
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
    _write_snapshots(raw / meta["snapshot_file"], meta, world, totals, snapshots)
    lines = ["rank,comm_id,size,created_by,parent_id,inter,world_ranks"]
    for r in world.tolist():
        lines += [
            f"{r},0,{world_size},MPI_COMM_WORLD,-1,0,0-{world_size - 1}",
            f"{r},1,1,MPI_COMM_SELF,-1,0,{r}",
        ]
    (raw / meta["comms_file"]).write_text("\n".join(lines) + "\n")
    (raw / f"node.{key}.json").write_text(json.dumps(meta, indent=1))


def _write_snapshots(path, meta, world, totals, n):
    """n records per rank: the counters growing linearly, the first holding them all.
    Header and record heads are layout.def's records, as the reader reads them."""
    words = meta["canonical"]["words"]
    head = np.zeros(1, np.dtype(SNAP_HEADER))
    (head["magic"], head["version"]), head["words"] = magic("SNAP"), words
    cn = {c["name"]: c["offset"] for c in meta["counters"]}
    names = [k for k in totals if k in cn]
    idx = np.array(sorted(cn[k] for k in names), dtype=np.uint32)
    order = [k for _, k in sorted((cn[k], k) for k in names)]
    out = [head.tobytes()]
    ns0, ticks0 = 10**12, 10**9
    rec = np.zeros(1, np.dtype(SNAP_RECORD))
    rec["magic"], rec["n"] = RECORD_MAGIC, len(idx)
    pad = np.zeros(((len(idx) + 1) // 2) * 2, np.uint32)  # indices padded to whole words
    pad[: len(idx)] = idx
    for k in range(1, n + 1):
        frac = k / n
        for i, r in enumerate(world.tolist()):
            vals = np.array([int(totals[name][i] * frac) for name in order], dtype=np.uint64)
            rec["rank"], rec["seq"] = r, k
            rec["ticks"], rec["ns"] = ticks0 + k * 10**8, ns0 + k * 5 * 10**7 + r
            out += [rec.tobytes(), pad.tobytes(), vals.tobytes()]
    path.write_bytes(b"".join(out))
