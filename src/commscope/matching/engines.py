"""Matching engines (MPICH lists, Open MPI ob1, tag-hashed bins), simulated in C.

The simulator is native/sim/matchsim.c, a plain C file with no MPI: it is compiled
with the system C compiler the first time it is needed (into the build tree,
``build/sim/``, named by a hash of the source so an edit rebuilds it) and called
through ctypes. See that file for what each engine does.

:func:`simulate` takes one process's events in time order and returns one row per
event: what it searched, how many entries it compared, which event it matched, and
both queue lengths after it. ``depth`` follows :mod:`commscope.models.queue_sim`:
entries passed over before the match (0 at the head), the whole search on a miss.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import threading


from ..errors import EnvironmentProblem, InputError
from ..paths import build_root, native_dir
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


ENGINES = {"mpich": 0, "ob1": 1, "bins": 2}
DEFAULT_BINS = 64
ENGINE_HELP = (
    "mpich (one posted and one unexpected list), ob1 (Open MPI: per communicator "
    "and source, any-source list apart), bins (tag-hashed, --bins lists)"
)

_lib = None
_lock = threading.Lock()


def _source():
    return native_dir() / "sim" / "matchsim.c"


def library_path():
    """Where the compiled simulator lives (named by the source's hash)."""
    digest = hashlib.sha256(_source().read_bytes()).hexdigest()[:12]
    return build_root() / "sim" / f"libcsmatch-{digest}.so"


def _build(out):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise EnvironmentProblem("no C compiler found (set CC) to build the matching simulator")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd = [cc, "-O2", "-shared", "-fPIC", str(_source()), "-o", str(tmp)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise EnvironmentProblem(
            f"building the matching simulator failed: {' '.join(cmd)}\n{proc.stderr.strip()}"
        )
    os.replace(tmp, out)  # atomic: a concurrent first use never loads half a file


def load():
    """The simulator library, built first if needed."""
    global _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not path.exists():
                _build(path)
            lib = ctypes.CDLL(str(path))
            f = lib.cs_match_run
            p = np.ctypeslib.ndpointer
            f.restype = ctypes.c_int64
            f.argtypes = [
                ctypes.c_int,
                ctypes.c_int32,
                ctypes.c_int64,
                p(np.int8, flags="C"),
                p(np.int32, flags="C"),
                p(np.int32, flags="C"),
                p(np.int32, flags="C"),
                ctypes.c_int32,
                ctypes.c_int32,
                p(np.int64, flags="C"),
                p(np.int32, flags="C"),
                p(np.int32, flags="C"),
                p(np.int32, flags="C"),
            ]
            _lib = lib
    return _lib


def engine_code(engine, source="--engine"):
    try:
        return ENGINES[str(engine).lower()]
    except KeyError:
        raise InputError(
            source, None, f"expected one of {', '.join(ENGINES)}, got {engine!r}"
        ) from None


def _dense(values, name, source):
    """Small dense codes for comm ids and sources (-1, any source, kept)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and v.min() < -1:
        raise InputError(source, name, f"must be >= -1, got {int(v.min())}")
    return v


def run_engine(engine, is_arrival, comm, src, tag, bins=DEFAULT_BINS, source="events"):
    """Raw simulator call on arrays; returns (partner, searched, posted_len, unexpected_len, compared).

    ``comm``: small whole numbers >= 0; ``src``: source rank in the communicator
    (-1 = any source, posts only); ``tag`` >= 0 (-1 = any tag, posts only).
    """
    code = engine_code(engine)
    is_arrival = np.ascontiguousarray(is_arrival, dtype=np.int8)
    n = is_arrival.size
    comm = _dense(comm, "comm", source)
    src = _dense(src, "source", source)
    tag = np.asarray(tag, dtype=np.int64)
    if comm.size and comm.min() < 0:
        raise InputError(source, "comm", "communicator codes must be >= 0")
    arr = is_arrival.astype(bool)
    if (src[arr] < 0).any() or (tag[arr] < 0).any():
        raise InputError(source, "arrival", "a message needs a source and a tag >= 0")
    if (tag < -1).any():
        raise InputError(source, "tag", "tags must be >= 0 (-1 = any tag on a receive)")
    if code == ENGINES["bins"] and int(bins) < 1:
        raise InputError("--bins", None, f"must be >= 1, got {bins}")
    if max(comm.max(initial=0), src.max(initial=0), tag.max(initial=0)) >= 2**31:
        raise InputError(source, None, "ids must fit in 32 bits")
    ncomm = int(comm.max(initial=0)) + 1
    nsrc = int(src.max(initial=0)) + 1
    partner = np.empty(n, np.int64)
    searched = np.empty(n, np.int32)
    plen = np.empty(n, np.int32)
    ulen = np.empty(n, np.int32)
    total = load().cs_match_run(
        code,
        int(bins),
        n,
        is_arrival,
        np.ascontiguousarray(comm, np.int32),
        np.ascontiguousarray(src, np.int32),
        np.ascontiguousarray(tag, np.int32),
        ncomm,
        nsrc,
        partner,
        searched,
        plen,
        ulen,
    )
    if total < 0:
        raise EnvironmentProblem("matching simulator refused its input or ran out of memory")
    return partner, searched, plen, ulen, int(total)


def simulate(events, engine="ob1", bins=DEFAULT_BINS, source="events"):
    """Replay one process's events (DataFrame in time order) through ``engine``.

    ``events`` columns: kind ("post" or "arrive"), comm, source, tag. Returns a copy
    with: queue ("UMQ" searched by a post, "PRQ" by an arrival), matched (bool),
    partner (row position of the matching event, -1), searched (entries compared),
    depth (passed over: searched - 1 on a match, searched on a miss), posted_length
    and unexpected_length (after the event).
    """
    ev = events.reset_index(drop=True)
    for col in ("kind", "comm", "source", "tag"):
        if col not in ev.columns:
            raise InputError(source, col, "required column is missing")
    kinds = ev["kind"].astype(str)
    bad = ~kinds.isin(["post", "arrive"])
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        raise InputError(source, f"event {i}", f"kind must be 'post' or 'arrive', got {kinds[i]!r}")
    arrive = (kinds == "arrive").to_numpy()
    partner, searched, plen, ulen, _ = run_engine(
        engine, arrive, ev["comm"], ev["source"], ev["tag"], bins=bins, source=source
    )
    out = ev.copy()
    out["queue"] = np.where(arrive, "PRQ", "UMQ")
    out["matched"] = partner >= 0
    out["partner"] = partner
    out["searched"] = searched.astype(np.int64)
    out["depth"] = out["searched"] - out["matched"].astype(np.int64)
    out["posted_length"] = plen.astype(np.int64)
    out["unexpected_length"] = ulen.astype(np.int64)
    return out
