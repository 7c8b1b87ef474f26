"""Reading the files libcommscope writes, live or after the run.

One set of files per node ``<n>`` (format in docs/profile.md; the C side is
native/profiler/), shared by the node's ranks:

* ``node.<n>.json``: the layout and metadata (counter names, kinds, units, offsets,
  functions, bins, peer arrays, MPI_T variables, the canonical snapshot layout);
* ``node.<n>.bin``: mapped: a header, a directory of the node's ranks, and blocks the
  ranks claimed: a rank block each (header, rank-wide words, per-file counters, the
  table of its slab chunks), slab chunks (one slab of uint64 words per thread),
  blocks of size-bin rows and grown peer tables.  Opened read-only, so a reader never
  disturbs the program;
* ``node.<n>.snap``: every rank's counters over time, as records of what changed.

Everything of a node is read at once and held as arrays (:class:`NodeCounters`):
one row per slab, the size-bin rows and peer-table entries as flat arrays, no loop
over ranks in Python.  Ticks become seconds with each rank's rate from its two clock
pairs (ticks and CLOCK_MONOTONIC nanoseconds at start and at the latest snapshot).
"""

from __future__ import annotations  # annotations name numpy types without importing it

import json
import mmap
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy
from .native_tables import constant, magic, metadata_keys, record_dtype, record_struct

np = lazy("numpy")
pd = lazy("pandas")


NODE_SCHEMA = "commscope.node"
SCHEMA_VERSION = 5
#: Versions this reader reads: 3 had size-bin rows of counts only (no time per bin);
#: 3 and 4 also listed the counter sets ("sets"), now recorded in meta.json only.
READABLE_VERSIONS = (3, 4, 5)
# The binary records are layout.def's (native/profiler/), the table the C structs are
# generated from: numpy dtype specs (a dtype is built on use, not at import).
NODE_MAGIC, _ = magic("NODE")
RANK_MAGIC, _ = magic("RANK")
SNAP_MAGIC, _ = magic("SNAP")
RECORD_MAGIC = constant("RECORD_MAGIC")
NODE_HEADER = record_dtype("node_header")
DIR_ENTRY = record_dtype("dir_entry")
#: A rank block's header.
HEADER_FIELDS = record_dtype("rank_header")
SNAP_HEADER = record_dtype("snap_header")
SNAP_RECORD = record_dtype("snap_record")
STATES = {1: "running", 2: "finalized"}
SNAP_HEADER_BYTES = record_struct("snap_header").size
_RECORD_HEAD = record_struct("snap_record")
_META_FIELDS = {
    "schema": str,
    "schema_version": int,
    "node": str,
    "world_size": int,
    "nonce": str,
    "node_file": str,
    "snapshot_file": str,
    "comms_file": str,
    "files_file": str,
    "layout": dict,
    "canonical": dict,
    "counters": list,
    "functions": list,
    "peers": dict,
    "files": dict,
    "bins": dict,
    "collective_bins": dict,
    "pvars": list,
}
_LAYOUT = metadata_keys("layout")
_CANONICAL = metadata_keys("canonical")
_NAME = re.compile(r"node\.([A-Za-z0-9._-]+)\.json")


def node_keys(raw_dir):
    """The nodes that wrote metadata in ``raw_dir``, sorted."""
    keys = []
    for p in Path(raw_dir).glob("node.*.json"):
        m = _NAME.fullmatch(p.name)
        if m:
            keys.append(m.group(1))
    return sorted(keys)


def _whole(meta, path, section, keys):
    part = meta[section]
    for k in keys:
        if not isinstance(part.get(k), int) or isinstance(part.get(k), bool) or part[k] < 0:
            raise InputError(path, f"{section}.{k}", "missing or not a whole number >= 0")


def load_node_meta(path):
    """Parse and check a node.<n>.json file."""
    from ..paths import require_regular_file

    path = Path(path)
    try:
        meta = json.loads(require_regular_file(path).read_text())
    except FileNotFoundError:
        raise InputError(path, None, "missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"malformed JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("schema") != NODE_SCHEMA:
        raise InputError(path, "schema", f"expected {NODE_SCHEMA!r}")
    for key, typ in _META_FIELDS.items():
        if not isinstance(meta.get(key), typ) or isinstance(meta.get(key), bool):
            raise InputError(path, key, "missing or of the wrong type")
    if meta["schema_version"] not in READABLE_VERSIONS:
        raise InputError(
            path,
            "schema_version",
            f"version {meta['schema_version']}: this commscope "
            f"reads versions {', '.join(map(str, READABLE_VERSIONS))} "
            "(profile the program again)",
        )
    _whole(meta, path, "layout", _LAYOUT)
    _whole(meta, path, "canonical", _CANONICAL)
    lay = meta["layout"]
    if (
        lay["slab_words"] == 0
        or lay["slab_words"] % 512
        or lay["page"] != 4096
        or lay["big_chunk"] == 0
    ):
        raise InputError(path, "layout.slab_words", "not a layout this commscope writes")
    bins = meta["bins"]
    for k in ("count", "rows"):
        if not isinstance(bins.get(k), int) or isinstance(bins.get(k), bool) or bins[k] < 0:
            raise InputError(path, f"bins.{k}", "missing or not a whole number >= 0")
    if meta["schema_version"] >= 4:  # rows of counts, then ticks per bin
        if (
            not isinstance(bins.get("row_words"), int)
            or not isinstance(bins.get("ticks_at"), int)
            or bins["ticks_at"] + bins["count"] > bins["row_words"]
            or bins["ticks_at"] < bins["count"]
        ):
            raise InputError(
                path, "bins.row_words", "needs whole numbers row_words >= ticks_at + count"
            )
    for i, f in enumerate(meta["functions"]):
        if (
            not isinstance(f, dict)
            or not isinstance(f.get("name"), str)
            or not all(
                isinstance(f.get(k), int) and 0 <= f[k] < lay["slab_words"]
                for k in ("calls_offset", "ticks_offset", "bytes_offset")
            )
        ):
            raise InputError(
                path, f"functions[{i}]", "needs a name and calls/ticks/bytes offsets in the slab"
            )
    for i, c in enumerate(meta["counters"]):
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("name"), str)
            or not (isinstance(c.get("offset"), int) and 0 <= c["offset"] < lay["slab_words"])
            or c.get("scope") not in ("thread", "rank")
        ):
            raise InputError(
                path, f"counters[{i}]", "needs a name, a scope and an offset in the slab"
            )
    return meta


def _chunk_of(i, big):
    """Chunk and place in it of slab indices ``i`` (see cs_chunk_of in cs_prof_state.h)."""
    i1 = np.asarray(i, dtype=np.int64) + 1
    small = i1 < 2 * big
    c_small = np.floor(np.log2(np.maximum(i1, 1))).astype(np.int64)
    k = i1 - 2 * big
    log_big = int(np.log2(big))
    chunk = np.where(small, c_small, log_big + 1 + k // big)
    at = np.where(small, i1 - (1 << c_small), k % big)
    return chunk, at


@dataclass
class NodeCounters:
    """Every rank of one node at one moment.

    ``ranks``/``headers``/``rank_words``/``per_file`` have a row per rank;
    ``slabs`` a row per thread slab (``slab_rank``: its rank's row, ``slab_thread``: its
    index within the rank); ``bins`` and ``peers`` are flat: (slab row, sized row or
    world rank) with their values."""

    meta: dict
    ranks: np.ndarray  # (R,) world ranks
    headers: np.ndarray  # (R,) structured (HEADER_FIELDS)
    rank_words: np.ndarray  # (R, counters) uint64
    per_file: np.ndarray  # (R, file rows, file counters) uint64
    slab_rank: np.ndarray  # (S,)
    slab_thread: np.ndarray  # (S,)
    slabs: np.ndarray  # (S, slab_words) uint64
    bin_slab: np.ndarray  # (B,)
    bin_row: np.ndarray  # (B,) sized-function row
    bin_counts: np.ndarray  # (B, bins) uint64
    bin_ticks: np.ndarray | None  # (B, bins) uint64: time of the calls per bin (None: version 3)
    peer_slab: np.ndarray  # (P,)
    peer_rank: np.ndarray  # (P,) world rank of the peer
    peer_values: np.ndarray  # (P, arrays) uint64

    @property
    def ticks_per_s(self):
        """(R,) each rank's tick rate (NaN while a rank has one clock pair only)."""
        if self.meta.get("tick_source") == "clock_monotonic_ns":
            return np.full(len(self.ranks), 1e9)
        h = self.headers
        dns = h["ns1"].astype(np.float64) - h["ns0"].astype(np.float64)
        dt = h["tick1"].astype(np.float64) - h["tick0"].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((dns > 0) & (dt > 0), dt / dns * 1e9, np.nan)

    def rank(self, i):
        """Row ``i`` as the :class:`RankCounters` of one rank."""
        s = self.slab_rank == i
        return RankCounters(
            self.meta,
            {
                k: self.headers[i][k].item()
                if hasattr(self.headers[i][k], "item")
                else self.headers[i][k]
                for k in self.headers.dtype.names
            },
            self.slabs[s],
            self.rank_words[i],
            self.per_file[i],
        )


@dataclass
class RankCounters:
    """One rank's counters at one moment: per-thread slabs plus rank-wide words."""

    meta: dict
    header: dict
    slabs: np.ndarray  # (threads, slab_words) uint64
    rank_words: np.ndarray  # (n counters,) uint64
    per_file: np.ndarray  # (file rows, file counters) uint64

    @property
    def rank(self):
        return int(self.header["rank"])

    @property
    def ticks_per_s(self):
        return ticks_per_second(self.meta, self.header)

    @property
    def totals(self):
        return self.slabs.sum(axis=0, dtype=np.uint64)

    @property
    def thread_ids(self):
        """The operating-system thread id of each slab's owner."""
        return self.slabs[:, self.meta["layout"]["tid_offset"]].astype(np.int64)


def ticks_per_second(meta, header):
    if meta.get("tick_source") == "clock_monotonic_ns":
        return 1e9
    dns = int(header["ns1"]) - int(header["ns0"])
    dticks = int(header["tick1"]) - int(header["tick0"])
    if dns <= 0 or dticks <= 0:
        return float("nan")  # no second clock pair yet (the first snapshot is pending)
    return dticks / dns * 1e9


class NodeFile:
    """A node's mapped counter file, opened read-only (the program may still run)."""

    def __init__(self, raw_dir, key):
        from ..paths import require_regular_file

        self.raw_dir = Path(raw_dir)
        self.key = key
        self.meta_path = self.raw_dir / f"node.{key}.json"
        self.meta = load_node_meta(self.meta_path)
        self.data_path = self.raw_dir / self.meta["node_file"]
        if self.meta["node_file"] != f"node.{key}.bin":
            raise InputError(
                self.meta_path, "node_file", f"names {self.meta['node_file']!r}, not node.{key}.bin"
            )
        if not self.data_path.exists():
            raise InputError(self.data_path, None, "missing (its metadata file exists)")
        require_regular_file(self.data_path)
        lay = self.meta["layout"]
        self._first_block = lay["dir_at"] + lay["max_ranks"] * 16
        size = self.data_path.stat().st_size
        if size < self._first_block:
            raise InputError(
                self.data_path,
                None,
                f"is {size} bytes, shorter than its header and "
                f"directory ({self._first_block} bytes)",
            )
        with open(self.data_path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._u64 = np.frombuffer(self._map, np.uint64, count=len(self._map) // 8)
        head = np.frombuffer(self._map, np.dtype(NODE_HEADER), count=1)[0]
        if head["magic"] != NODE_MAGIC:
            raise InputError(self.data_path, "magic", "not a commscope node file")
        if f"{int(head['nonce']):016x}" != self.meta["nonce"]:
            raise InputError(
                self.data_path,
                "nonce",
                f"does not match {self.meta_path.name}: the two files come from different runs",
            )
        if int(head["dir_at"]) != lay["dir_at"] or int(head["max_ranks"]) != lay["max_ranks"]:
            raise InputError(self.data_path, "dir_at", f"does not match {self.meta_path.name}")
        self.lost_ranks = int(head["lost_ranks"])

    def _fail(self, field, message):
        raise InputError(self.data_path, field, message)

    def directory(self):
        """(world ranks, rank block offsets) of the ranks whose block is ready."""
        lay = self.meta["layout"]
        head = np.frombuffer(self._map, np.dtype(NODE_HEADER), count=1)[0]
        n = min(int(head["nranks"]), lay["max_ranks"])
        entries = np.frombuffer(self._map, np.dtype(DIR_ENTRY), count=n, offset=lay["dir_at"])
        entries = entries[entries["ready"] == 1]
        blocks = entries["block"].astype(np.int64)
        bad = (
            (blocks < self._first_block)
            | (blocks % lay["page"] != 0)
            | (blocks + lay["rank_block_bytes"] > len(self._map))
        )
        if bad.any():
            self._fail(
                "directory",
                f"rank {int(entries['rank'][bad][0])}'s block at byte "
                f"{int(blocks[bad][0])} lies outside the file (cut short?)",
            )
        ranks = entries["rank"].astype(np.int64)
        if ((ranks < 0) | (ranks >= self.meta["world_size"])).any() or len(set(ranks)) != len(
            ranks
        ):
            self._fail("directory", "a rank outside the world, or listed twice")
        order = np.argsort(ranks)
        return ranks[order], blocks[order]

    def _gather(self, starts, width):
        """Words [starts, starts + width) of the file, one row per start (byte offsets)."""
        starts = np.asarray(starts, dtype=np.int64) // 8
        if len(starts) == 0:
            return np.zeros((0, width), np.uint64)
        if starts.max() + width > len(self._u64) or starts.min() < 0:
            return None
        return self._u64[starts[:, None] + np.arange(width)]

    def read(self):
        """Every rank's counters now, as :class:`NodeCounters`."""
        meta, lay = self.meta, self.meta["layout"]
        ranks, blocks = self.directory()
        hdr = np.dtype(HEADER_FIELDS)
        raw = np.frombuffer(self._map, np.uint8)
        headers = (
            raw[blocks[:, None] + np.arange(hdr.itemsize)].copy().view(hdr).reshape(-1)
            if len(blocks)
            else np.zeros(0, hdr)
        )
        if len(headers) and (
            (headers["magic"] != RANK_MAGIC).any()
            or (headers["slab_words"] != lay["slab_words"]).any()
        ):
            self._fail("rank block", "a rank block without its magic or with another slab size")
        ncount = len(meta["counters"])
        rank_words = self._gather(blocks + lay["rank_words_at"], ncount)
        nfc = len(meta["files"]["counters"])
        rows = meta["files"]["rows"]
        per_file = self._gather(blocks + lay["files_at"], rows * nfc).reshape(
            len(blocks), rows, nfc
        )
        chunk_table = self._gather(blocks + lay["chunks_at"], lay["max_chunks"])
        # slabs: the claimed ones that are in the file
        words = lay["slab_words"]
        n = np.minimum(headers["nslabs"].astype(np.int64), headers["slabs_mapped"].astype(np.int64))
        slab_rank = np.repeat(np.arange(len(blocks)), n)
        slab_thread = np.arange(len(slab_rank)) - np.repeat(np.cumsum(n) - n, n)
        chunk, at = _chunk_of(slab_thread, lay["big_chunk"])
        if (chunk >= lay["max_chunks"]).any():
            self._fail("chunk table", "more slabs than the chunk table can hold")
        base = chunk_table[slab_rank, chunk].astype(np.int64)
        starts = base + at * words * 8
        if len(base) and ((base < self._first_block) | (starts + words * 8 > len(self._map))).any():
            self._fail("chunk table", "a slab chunk outside the file (cut short?)")
        slabs = self._gather(starts, words)
        bins = self._bins(slabs)
        peers = self._peers(slabs)
        return NodeCounters(
            meta, ranks, headers, rank_words, per_file, slab_rank, slab_thread, slabs, *bins, *peers
        )

    def _bins(self, slabs):
        meta, lay = self.meta, self.meta["layout"]
        nbins, nrows = meta["bins"]["count"], meta["bins"]["rows"]
        row_words, ticks_at = meta["bins"].get("row_words", nbins), meta["bins"].get("ticks_at")
        maps = slabs[:, lay["binmap_offset"] : lay["binmap_offset"] + (nrows + 3) // 4]
        maps = np.ascontiguousarray(maps).view(np.uint16)[:, :nrows]
        s, row_of = np.nonzero(maps)
        r = maps[s, row_of].astype(np.int64) - 1
        per = lay["bin_block_rows"]
        if len(r) and (r // per >= lay["bin_blocks"]).any():
            self._fail("size bins", "a bin row beyond the slab's blocks")
        block = slabs[s, lay["binblocks_offset"] + r // per].astype(np.int64)
        starts = block + (r % per) * row_words * 8
        rows = self._gather(starts, row_words)
        if rows is None or (len(block) and (block < self._first_block).any()):
            self._fail("size bins", "a bin row block outside the file (cut short?)")
        ticks = rows[:, ticks_at : ticks_at + nbins] if ticks_at is not None else None
        return s, row_of, rows[:, :nbins], ticks

    def _peers(self, slabs):
        lay = self.meta["layout"]
        k = lay["peer_entry_words"]
        seq = slabs[:, lay["peerseq_offset"]]
        cap = slabs[:, lay["peercap_offset"]].astype(np.int64)
        at = slabs[:, lay["peerat_offset"]].astype(np.int64)
        moving = seq % 2 == 1
        if moving.any():
            warnings.warn(
                f"{self.data_path}: {int(moving.sum())} peer table(s) were being moved "
                "when their rank stopped; those peers are left out",
                stacklevel=3,
            )
        inline = (at == 0) & ~moving
        inline_cap = (lay["slab_words"] - lay["peers_offset"]) // k
        if (cap[inline] > inline_cap).any() or (cap & (cap - 1)).any():
            self._fail("peer table", "a table capacity that is not a power of two within its slab")
        ent = [
            slabs[inline, lay["peers_offset"] : lay["peers_offset"] + inline_cap * k].reshape(-1, k)
        ]
        owner = [np.repeat(np.nonzero(inline)[0], inline_cap)]
        grown = np.nonzero((at != 0) & ~moving)[0]
        if len(grown):
            sizes = cap[grown] * k
            starts = np.repeat(at[grown] // 8, sizes) + (
                np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            )
            if (at[grown] < self._first_block).any() or starts.max() >= len(self._u64):
                self._fail("peer table", "a grown peer table outside the file (cut short?)")
            ent.append(self._u64[starts].reshape(-1, k))
            owner.append(np.repeat(grown, cap[grown]))
        ent, owner = np.concatenate(ent), np.concatenate(owner)
        used = ent[:, 0] != 0
        ent, owner = ent[used], owner[used]
        peer = ent[:, 0].astype(np.int64) - 1
        if (peer >= self.meta["world_size"]).any():
            self._fail("peer table", "a peer outside the world")
        return owner, peer, ent[:, 1:]

    def close(self):
        self._u64 = None
        try:
            self._map.close()
        except BufferError:  # an error's traceback still holds a view: the GC unmaps it
            pass
        self._map = None


def counter_ranks(raw_dir):
    """World ranks that have counters in ``raw_dir`` (ready in some node's directory), sorted."""
    ranks = []
    for key in node_keys(raw_dir):
        try:
            nf = NodeFile(raw_dir, key)
        except InputError:
            continue
        try:
            ranks += nf.directory()[0].tolist()
        finally:
            nf.close()
    return sorted(ranks)


class CounterFile:
    """One rank of a node file, for readers that follow a rank (top, the trace's clocks)."""

    def __init__(self, raw_dir, rank):
        self.raw_dir = Path(raw_dir)
        for key in node_keys(raw_dir):
            nf = NodeFile(raw_dir, key)
            ranks, blocks = nf.directory()
            if rank in ranks:
                self._node, self._i = nf, int(np.nonzero(ranks == rank)[0][0])
                self.meta = dict(nf.meta, rank=int(rank))
                self.data_path = nf.data_path
                return
            nf.close()
        raise InputError(self.raw_dir, None, f"no node file lists rank {rank}")

    def header(self):
        return self.read().header

    def read(self):
        return self._node.read().rank(self._i)

    def close(self):
        self._node.close()


# ---- snapshots --------------------------------------------------------------------


@dataclass
class Snapshots:
    """Every snapshot record of a node: one row per record, and the words that changed.

    ``changes``: (record row, canonical index, value) of every word a record holds;
    between a rank's records a word keeps its last value."""

    meta: dict
    rank: np.ndarray  # (N,)
    seq: np.ndarray
    ticks: np.ndarray
    ns: np.ndarray
    change_record: np.ndarray
    change_index: np.ndarray
    change_value: np.ndarray  # uint64 (pvars: doubles' bits)

    def values(self, indices, bits=False):
        """(records, len(indices)) values of canonical ``indices`` at each record, filled
        forward within each rank (records are in each rank's order); ``bits``: the words
        hold doubles (pvars)."""
        indices = np.asarray(indices, dtype=np.int64)
        out = np.full((len(self.rank), len(indices)), np.nan)
        pos = {int(x): i for i, x in enumerate(indices)}
        keep = np.isin(self.change_index, indices)
        col = np.array([pos[int(x)] for x in self.change_index[keep]], dtype=np.int64)
        vals = self.change_value[keep]
        out[self.change_record[keep], col] = (
            vals.view(np.float64) if bits else vals.astype(np.float64)
        )
        frame = pd.DataFrame(out)
        frame = frame.groupby(self.rank, sort=False).ffill().fillna(0.0)
        return frame.to_numpy()


def read_snapshots(raw_dir, meta):
    """(Snapshots, dropped_bytes) of a node: every complete record of its file.

    A record cut short (a rank was killed while writing it, or the disk filled) ends the
    scan; ``dropped_bytes`` says how much was left out.
    """
    from ..paths import require_regular_file

    path = Path(raw_dir) / meta["snapshot_file"]
    empty = np.zeros(0, np.int64)
    if not path.exists():
        return Snapshots(meta, empty, empty, empty, empty, empty, empty, np.zeros(0, np.uint64)), 0
    data = require_regular_file(path).read_bytes()
    if len(data) < SNAP_HEADER_BYTES or data[:8] != SNAP_MAGIC:
        raise InputError(path, "header", "not a commscope snapshot file (or cut short)")
    words = int(np.frombuffer(data, np.dtype(SNAP_HEADER), count=1)[0]["words"])
    if words != meta["canonical"]["words"]:
        raise InputError(
            path,
            "canonical words",
            f"{words} does not match "
            f"{meta['snapshot_file'].replace('.snap', '.json')} "
            f"({meta['canonical']['words']})",
        )
    heads, spans = [], []
    pos, end = SNAP_HEADER_BYTES, len(data)
    while pos + _RECORD_HEAD.size <= end:
        tag, rank, seq, ticks, ns, n, _ = _RECORD_HEAD.unpack_from(data, pos)
        size = _RECORD_HEAD.size + 8 * ((n + 1) // 2) + 8 * n
        if (
            tag != RECORD_MAGIC
            or pos + size > end
            or n > words
            or not 0 <= rank < meta["world_size"]
        ):
            break
        heads.append((rank, seq, ticks, ns))
        spans.append((pos + _RECORD_HEAD.size, n))
        pos += size
    dropped = end - pos
    h = np.array(heads, dtype=np.int64).reshape(-1, 4)
    counts = np.array([n for _, n in spans], dtype=np.int64)
    index = (
        np.concatenate([np.frombuffer(data, np.uint32, count=n, offset=o) for o, n in spans])
        if spans
        else np.zeros(0, np.uint32)
    )
    value = (
        np.concatenate(
            [
                np.frombuffer(data, np.uint64, count=n, offset=o + 8 * ((n + 1) // 2))
                for o, n in spans
            ]
        )
        if spans
        else np.zeros(0, np.uint64)
    )
    if len(index) and index.max() >= words:
        raise InputError(path, "index", "a record names a word beyond the canonical layout")
    return Snapshots(
        meta,
        h[:, 0],
        h[:, 1],
        h[:, 2],
        h[:, 3],
        np.repeat(np.arange(len(h)), counts),
        index.astype(np.int64),
        value,
    ), dropped


# ---- communicators -------------------------------------------------------------------


def expand_ranks(text):
    """World ranks written as runs ("0-3 7 9-10") -> a tuple of ints."""
    out = []
    for part in str(text).split():
        lo, sep, hi = part.partition("-")
        if sep and lo.lstrip("-").isdigit() and hi.isdigit():  # -1 (outside the world) has no run
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return tuple(out)


def read_communicators(raw_dir):
    """Every node's communicator list: rank, comm_id, size, created_by, parent_id, inter,
    world_ranks (a tuple of ints per row), list (the file it came from)."""
    from ..runs import read_csv_table

    frames = []
    for key in node_keys(raw_dir):
        path = Path(raw_dir) / f"node.{key}.comms.csv"
        if not path.is_file():
            continue
        df = read_csv_table(path)  # a half-written last line (killed program) is dropped
        for col in ("rank", "comm_id", "size", "created_by", "world_ranks"):
            if col not in df.columns:
                raise InputError(path, col, "required column is missing")
        df = df.dropna(subset=["rank", "comm_id", "size", "world_ranks"])
        try:
            df["world_ranks"] = [expand_ranks(w) for w in df["world_ranks"]]
            for col in ("rank", "comm_id", "size"):
                df[col] = df[col].astype(np.int64)
        except ValueError:
            raise InputError(
                path, "world_ranks", "expected ranks and runs of ranks (0-3 7)"
            ) from None
        df["list"] = str(path)  # to name in an error about what the list lacks
        frames.append(df)
    if not frames:
        return pd.DataFrame(
            columns=[
                "rank",
                "comm_id",
                "size",
                "created_by",
                "parent_id",
                "inter",
                "world_ranks",
                "list",
            ]
        )
    return pd.concat(frames, ignore_index=True)
