"""Reading the counter files libcommscope writes, live or after the run.

Per rank ``r`` (format in docs/profile.md; the C side is native/profiler/):

* ``counters.<r>.json``: metadata (counter names, kinds, units, offsets, bins,
  peers, MPI_T variables, a nonce shared with the data file);
* ``counters.<r>.bin``: the mapped data, a header then one slab of uint64 words
  per thread (the file grows by whole chunks of slabs as threads appear); opened
  read-only, so a reader never disturbs the program;
* ``snapshots.<r>.bin``: every counter over time.

Totals are the sum over thread slabs; rank-scope counters (watermarks) live in
the header.  Ticks become seconds with the rate from the header's two clock
pairs (ticks and CLOCK_MONOTONIC nanoseconds at start and at the latest
snapshot), so no calibration run is needed.
"""

from __future__ import annotations  # annotations name numpy types without importing it

import json
import mmap
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")


META_SCHEMA = "commscope.counters"
#: The mapped file's header (numpy dtype spec; a dtype is built on use, not at import).
HEADER_FIELDS = [
    ("magic", "S8"), ("version", "<u4"), ("header_bytes", "<u4"), ("slab_words", "<u8"),
    ("slabs_mapped", "<u4"), ("nslabs", "<u4"), ("nonce", "<u8"), ("rank", "<i4"),
    ("world_size", "<i4"), ("pid", "<i4"), ("state", "<i4"), ("seq", "<u8"),
    ("tick0", "<u8"), ("ns0", "<u8"), ("tick1", "<u8"), ("ns1", "<u8"),
    ("lost_threads", "<u4"), ("nfiles", "<u4")]
MAGIC = b"CSCOUNT2"
STATES = {1: "running", 2: "finalized"}
SNAP_HEADER_BYTES = 64
_META_FIELDS = {"schema": str, "schema_version": int, "nonce": str, "rank": int,
                "world_size": int, "header_bytes": int, "slab_words": int, "slab_chunk": int,
                "counters": list, "functions": list, "peers": dict, "files": dict,
                "bins": dict, "collective_bins": dict, "pvars": list, "sets": list,
                "rank_words_at": int, "tid_offset": int, "snapshot_record_words": int}
SCHEMA_VERSION = 2


def counter_ranks(raw_dir):
    """Ranks that have a metadata file in ``raw_dir``, sorted."""
    ranks = []
    for p in Path(raw_dir).glob("counters.*.json"):
        m = re.fullmatch(r"counters\.(\d+)\.json", p.name)
        if m:
            ranks.append(int(m.group(1)))
    return sorted(ranks)


def load_metadata(path):
    """Parse and check a counters.<rank>.json file."""
    path = Path(path)
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, None, "missing") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"malformed JSON ({exc.msg})") from None
    if not isinstance(meta, dict) or meta.get("schema") != META_SCHEMA:
        raise InputError(path, "schema", f"expected {META_SCHEMA!r}")
    for key, typ in _META_FIELDS.items():
        if not isinstance(meta.get(key), typ) or isinstance(meta.get(key), bool):
            raise InputError(path, key, "missing or of the wrong type")
    if meta["schema_version"] != SCHEMA_VERSION:
        raise InputError(path, "schema_version", f"version {meta['schema_version']}: this commscope "
                                                 f"reads version {SCHEMA_VERSION} (profile the program again)")
    return meta


@dataclass
class RankCounters:
    """One rank's counters at one moment: per-thread slabs plus rank-wide words."""
    meta: dict
    header: dict
    slabs: np.ndarray        # (threads, slab_words) uint64
    rank_words: np.ndarray   # (n counters,) uint64
    per_file: np.ndarray     # (file rows, file counters) uint64

    @property
    def thread_ids(self):
        """The operating-system thread id of each slab's owner."""
        return self.slabs[:, self.meta["tid_offset"]].astype(np.int64)

    @property
    def rank(self):
        return self.meta["rank"]

    @property
    def ticks_per_s(self):
        return ticks_per_second(self.meta, self.header)

    @property
    def totals(self):
        return self.slabs.sum(axis=0, dtype=np.uint64)


def ticks_per_second(meta, header):
    if meta.get("tick_source") == "clock_monotonic_ns":
        return 1e9
    dns = int(header["ns1"]) - int(header["ns0"])
    dticks = int(header["tick1"]) - int(header["tick0"])
    if dns <= 0 or dticks <= 0:
        return float("nan")  # no second clock pair yet (the first snapshot is pending)
    return dticks / dns * 1e9


class CounterFile:
    """A rank's mapped counter file, opened read-only (the program may still run)."""

    def __init__(self, raw_dir, rank):
        self.raw_dir = Path(raw_dir)
        self.meta_path = self.raw_dir / f"counters.{rank}.json"
        self.data_path = self.raw_dir / f"counters.{rank}.bin"
        self.meta = load_metadata(self.meta_path)
        if not self.data_path.is_file():
            raise InputError(self.data_path, None, "missing (its metadata file exists)")
        size = self.data_path.stat().st_size
        if size < self.meta["header_bytes"]:
            raise InputError(self.data_path, None, f"is {size} bytes, shorter than its "
                                                   f"{self.meta['header_bytes']}-byte header")
        with open(self.data_path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        header = self.header()
        if header["magic"] != MAGIC:
            raise InputError(self.data_path, "magic", "not a commscope counter file")
        if f"{int(header['nonce']):016x}" != self.meta["nonce"]:
            raise InputError(self.data_path, "nonce", f"does not match {self.meta_path.name}: "
                                                      "the two files come from different runs")

    def header(self):
        header = np.frombuffer(self._map, np.dtype(HEADER_FIELDS), count=1)[0]
        return {k: v.item() if hasattr(v, "item") else v for k, v in zip(header.dtype.names, header)}

    def read(self):
        """A consistent-enough copy of every slab now (each word is read atomically).

        Slabs claimed by threads after this file was opened (the file grew) are
        not in this view; open the file again to see them."""
        h = self.header()
        words = self.meta["slab_words"]
        start = self.meta["header_bytes"]
        in_file = (len(self._map) - start) // (words * 8)
        n = min(h["nslabs"], h["slabs_mapped"], in_file)
        slabs = np.frombuffer(self._map, np.uint64, count=n * words, offset=start).reshape(n, words).copy()
        rank_words = np.frombuffer(self._map, np.uint64, count=len(self.meta["counters"]),
                                   offset=self.meta["rank_words_at"]).copy()
        files = self.meta["files"]
        per_file = np.frombuffer(self._map, np.uint64, count=files["rows"] * len(files["counters"]),
                                 offset=files["at"]).reshape(files["rows"], -1).copy()
        return RankCounters(self.meta, h, slabs, rank_words, per_file)

    def close(self):
        self._map.close()


def read_snapshots(raw_dir, meta):
    """(records, dropped_bytes): every complete snapshot record as a uint64 array.

    A record cut short (the program was killed while writing it, or the disk
    filled) is dropped; ``dropped_bytes`` says how much was left out.
    """
    path = Path(raw_dir) / f"snapshots.{meta['rank']}.bin"
    words = meta["snapshot_record_words"]
    if not path.exists():
        return np.zeros((0, words), np.uint64), 0
    data = path.read_bytes()
    if len(data) < SNAP_HEADER_BYTES or data[:8] != b"CSSNAP01":
        raise InputError(path, "header", "not a commscope snapshot file (or cut short)")
    head = np.frombuffer(data, np.uint64, count=4, offset=0)
    if int(head[2]) != words:
        raise InputError(path, "record_words", f"{int(head[2])} does not match "
                                               f"counters.{meta['rank']}.json ({words})")
    if f"{int(head[3]):016x}" != meta["nonce"]:
        raise InputError(path, "nonce", f"does not match counters.{meta['rank']}.json")
    body = len(data) - SNAP_HEADER_BYTES
    n = body // (words * 8)
    recs = np.frombuffer(data, np.uint64, count=n * words, offset=SNAP_HEADER_BYTES).reshape(n, words)
    return recs, body - n * words * 8
