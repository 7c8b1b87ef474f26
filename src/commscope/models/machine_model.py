"""Machine models: the node-aware point-to-point parameters of one machine.

A machine model (``commscope fit`` writes one, ``machine-model.json``) holds, per
(protocol, locality), the postal/max-rate parameters of Bienz, Gropp & Olson
(EuroMPI'18, paper 004): latency ``alpha_s``, per-byte cost
``beta_s_per_byte`` (= 1/R_b) and the node injection limit ``R_N_Bps`` (eq. 2), plus
the protocol breakpoints, the queue-search cost gamma (eq. 3) and the contention cost
delta (eq. 5). The on-disk form is JSON, documented in ``docs/machine-model.md``.

Units: seconds and bytes. Note that paper 004 writes beta in seconds per byte while
paper 003 (eq. 2.12) uses beta for a bandwidth in bytes per second; commscope always
stores seconds per byte and calls the bandwidth ``Rb_Bps``.

Earlier commscope versions called this a "machine profile" (``machine-profile.json``,
schema ``commscope.machine-profile``); such files still load, with one warning.
"profile" now means only the instrumented run of a program (``commscope profile``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, warn
from ..paths import require_regular_file, write_text_atomic
from ..schemas import validate
from .queue_search import queue_search_model_from_dict
from .partitioned_terms import terms_from_dict
from ..lazy import lazy

np = lazy("numpy")


SCHEMA = "commscope.machine-model"
SCHEMA_VERSION = 1
#: What the same file said before "machine profile" became "machine model" (read, never written).
LEGACY_SCHEMA = "commscope.machine-profile"
#: The file ``commscope fit`` writes by default, and the one a study directory holds.
DEFAULT_FILE = "machine-model.json"
#: Its name before the rename: a study directory of an earlier commscope holds this one.
LEGACY_FILE = "machine-profile.json"

LOCALITIES = ("intra-socket", "cross-socket", "inter-node")
# 004 calls on-node/off-socket messages "intra-node"; accept that and a few spellings.
LOCALITY_ALIASES = {
    "intra-node": "cross-socket",
    "on-node": "cross-socket",
    "off-socket": "cross-socket",
    "intra_socket": "intra-socket",
    "cross_socket": "cross-socket",
    "inter_node": "inter-node",
    "off-node": "inter-node",
}
PROTOCOLS = ("short", "eager", "rendezvous")
PROTOCOL_ALIASES = {"rend": "rendezvous", "rndv": "rendezvous"}

# Not printed in paper 004. The authors' public model scripts classify a message as
# short if size < 500 B and eager if size < 8000 B; as inclusive maxima:
BLUEWATERS_BREAKPOINTS = {"short_max_bytes": 499, "eager_max_bytes": 7999}
BLUEWATERS_GAMMA_S = 8.4e-9  # 004 eq. 4 (upper-bound queue search, per element)
BLUEWATERS_DELTA_S_PER_BYTE = 1.0e-10  # 004 eq. 6 (contention, per byte on a link)

# 004 Table 1: (protocol, locality) -> (alpha_s, Rb_Bps, RN_Bps)
BLUEWATERS_TABLE1 = {
    ("short", "intra-socket"): (4.4e-07, 2.2e09, math.inf),
    ("short", "cross-socket"): (8.3e-07, 4.8e08, math.inf),
    ("short", "inter-node"): (2.3e-06, 1.3e09, math.inf),
    ("eager", "intra-socket"): (5.3e-07, 3.2e09, math.inf),
    ("eager", "cross-socket"): (1.2e-06, 9.6e08, math.inf),
    ("eager", "inter-node"): (7.0e-06, 7.5e08, math.inf),
    ("rendezvous", "intra-socket"): (1.7e-06, 6.2e09, math.inf),
    ("rendezvous", "cross-socket"): (2.5e-06, 6.2e09, math.inf),
    ("rendezvous", "inter-node"): (3.0e-06, 2.9e09, 6.6e09),
}


def canonical_locality(name, source=None, field_name="locality"):
    """Canonical locality name; the paper's "intra-node" maps to "cross-socket"."""
    key = str(name).strip().lower()
    key = LOCALITY_ALIASES.get(key, key)
    if key not in LOCALITIES:
        raise InputError(
            source,
            field_name,
            f"unknown locality {name!r} (expected one of {', '.join(LOCALITIES)}"
            f" or alias intra-node)",
        )
    return key


def canonical_protocol(name, source=None, field_name="protocol"):
    """Canonical protocol name; "rend" maps to "rendezvous"."""
    key = str(name).strip().lower()
    key = PROTOCOL_ALIASES.get(key, key)
    if key not in PROTOCOLS:
        raise InputError(
            source,
            field_name,
            f"unknown protocol {name!r} (expected one of {', '.join(PROTOCOLS)})",
        )
    return key


@dataclass
class FitQuality:
    """How well a fitted (protocol, locality) model reproduces its samples."""

    n_samples: int
    max_rel_error: float
    median_rel_error: float
    # size_bytes -> signed relative error (model - median measured) / median measured
    rel_error_by_size: dict = field(default_factory=dict)
    # parameter (alpha_s, Rb_Bps, R_N_Bps) -> (low, high) 95 % bootstrap interval
    ci95: dict = field(default_factory=dict)
    # why the fit should not be trusted (empty: it can be)
    flags: list = field(default_factory=list)

    def to_dict(self):
        return {
            "n_samples": int(self.n_samples),
            "max_rel_error": float(self.max_rel_error),
            "median_rel_error": float(self.median_rel_error),
            "rel_error_by_size": {
                str(int(k)): float(v) for k, v in sorted(self.rel_error_by_size.items())
            },
            "ci95": {k: [_num_out(lo), _num_out(hi)] for k, (lo, hi) in sorted(self.ci95.items())},
            "flags": list(self.flags),
        }


@dataclass
class ProtocolParams:
    """Postal / max-rate parameters of one protocol at one locality (004 eqs. 1-2)."""

    alpha_s: float
    beta_s_per_byte: float
    R_N_Bps: float = math.inf
    fit: FitQuality | None = None
    # A capacity regime (the buffers leave the caches): beyond ``capacity_bytes`` each
    # further byte costs ``beta_beyond_s_per_byte``; None: no such regime was measured.
    capacity_bytes: int | None = None
    beta_beyond_s_per_byte: float | None = None

    @property
    def Rb_Bps(self):
        """Inter-process bandwidth R_b = 1/beta in bytes per second (inf if beta = 0)."""
        return math.inf if self.beta_s_per_byte == 0 else 1.0 / self.beta_s_per_byte

    def postal_s(self, size_bytes):
        """Postal time (004 eq. 1), continuous and piecewise linear past the capacity:
        ``alpha + beta s`` up to ``capacity_bytes``, then ``beta_beyond`` per further byte."""
        s = np.asarray(size_bytes, dtype=float)
        t = self.alpha_s + self.beta_s_per_byte * s
        if self.capacity_bytes is not None:
            extra = np.maximum(s - self.capacity_bytes, 0.0)
            t = t + (self.beta_beyond_s_per_byte - self.beta_s_per_byte) * extra
        return t


@dataclass
class Breakpoints:
    """Inclusive largest sizes of the short and eager protocols at one locality.

    ``None`` means the protocol is absent (e.g. a fit found only two regimes): sizes
    above the last present limit are rendezvous.
    """

    short_max_bytes: int | None = None
    eager_max_bytes: int | None = None


@dataclass
class MachineModel:
    """All model parameters of one machine; see docs/machine-model.md."""

    params: dict = field(default_factory=dict)  # (protocol, locality) -> ProtocolParams
    breakpoints: dict = field(default_factory=dict)  # locality -> Breakpoints
    mpi_eager_limits: dict = field(default_factory=dict)  # MPI_T cvar name -> bytes
    gamma_s: float | None = None
    delta_s_per_byte: float | None = None
    machine: dict = field(default_factory=dict)
    # HighVolumePingPong time per order, form chosen by fit quality (models/queue_search.py)
    queue_search: object | None = None
    # partitioned-model terms measured by `bench partitioned --calibrate` (partitioned_terms.py)
    partitioned: object = None
    # does data move while the ranks compute? per MPI library (models/progress.py)
    progress: dict | None = None
    source: str = field(default="machine model", compare=False)  # the file, for messages

    @property
    def localities(self):
        present = {loc for _, loc in self.params}
        return [loc for loc in LOCALITIES if loc in present]

    def protocol_of(self, size_bytes, locality):
        """Protocol a message of ``size_bytes`` uses at ``locality`` (by the breakpoints)."""
        locality = canonical_locality(locality)
        bp = self.breakpoints.get(locality, Breakpoints())
        if bp.short_max_bytes is not None and size_bytes <= bp.short_max_bytes:
            return "short"
        if bp.eager_max_bytes is not None and size_bytes <= bp.eager_max_bytes:
            return "eager"
        return "rendezvous"

    def protocols_of(self, sizes_bytes, locality):
        """Vectorised :meth:`protocol_of`: numpy array of protocol names."""
        locality = canonical_locality(locality)
        sizes = np.asarray(sizes_bytes)
        bp = self.breakpoints.get(locality, Breakpoints())
        out = np.full(sizes.shape, "rendezvous", dtype=object)
        if bp.eager_max_bytes is not None:
            out[sizes <= bp.eager_max_bytes] = "eager"
        if bp.short_max_bytes is not None:
            out[sizes <= bp.short_max_bytes] = "short"
        return out

    def get(self, protocol, locality):
        """Parameters for (protocol, locality); InputError if the machine model lacks them."""
        key = (canonical_protocol(protocol), canonical_locality(locality))
        if key not in self.params:
            raise InputError(
                self.source,
                f"{key[0]}/{key[1]}",
                "no parameters for this protocol and locality; the machine model has "
                + (", ".join(f"{p}/{loc}" for p, loc in sorted(self.params)) or "none")
                + "; measured by `commscope bench pingpong` with its "
                "two ranks at that locality, then `commscope fit`",
            )
        return self.params[key]

    def to_dict(self):
        rows = []
        for loc in LOCALITIES:
            for proto in PROTOCOLS:
                p = self.params.get((proto, loc))
                if p is None:
                    continue
                row = {
                    "protocol": proto,
                    "locality": loc,
                    "alpha_s": float(p.alpha_s),
                    "beta_s_per_byte": float(p.beta_s_per_byte),
                    "R_N_Bps": _num_out(p.R_N_Bps),
                }
                if p.capacity_bytes is not None:
                    row["capacity"] = {
                        "bytes": int(p.capacity_bytes),
                        "beta_beyond_s_per_byte": float(p.beta_beyond_s_per_byte),
                    }
                if p.fit is not None:
                    row["fit"] = p.fit.to_dict()
                rows.append(row)
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "machine": dict(self.machine),
            "parameters": rows,
            "breakpoints": {
                loc: {"short_max_bytes": bp.short_max_bytes, "eager_max_bytes": bp.eager_max_bytes}
                for loc, bp in self.breakpoints.items()
            },
            "mpi_eager_limits": {k: int(v) for k, v in self.mpi_eager_limits.items()},
            "gamma_s": self.gamma_s,
            "delta_s_per_byte": self.delta_s_per_byte,
            **(
                {"queue_search": self.queue_search.to_dict()}
                if self.queue_search is not None
                else {}
            ),
            **({"partitioned": self.partitioned.to_dict()} if self.partitioned is not None else {}),
            **({"progress": self.progress} if self.progress is not None else {}),
        }


def _num_out(v):
    # JSON has no infinity; the machine-model format writes the string "inf".
    return "inf" if math.isinf(v) else float(v)


def bluewaters_machine_model():
    """The published Blue Waters machine model: 004 Table 1 with gamma (eq. 4) and delta (eq. 6).

    The paper does not print its protocol breakpoints; :data:`BLUEWATERS_BREAKPOINTS`
    (short < 500 B, eager < 8000 B) are the cut-offs of the authors' model scripts.
    """
    params = {
        key: ProtocolParams(alpha_s=a, beta_s_per_byte=1.0 / rb, R_N_Bps=rn)
        for key, (a, rb, rn) in BLUEWATERS_TABLE1.items()
    }
    return MachineModel(
        params=params,
        breakpoints={loc: Breakpoints(**BLUEWATERS_BREAKPOINTS) for loc in LOCALITIES},
        gamma_s=BLUEWATERS_GAMMA_S,
        delta_s_per_byte=BLUEWATERS_DELTA_S_PER_BYTE,
        machine={
            "host": "Blue Waters (Cray XE, Gemini)",
            "mpi": "Cray MPI",
            "source": "Bienz, Gropp, Olson, EuroMPI'18, Table 1 and eqs. 4, 6",
        },
    )


# ---------------------------------------------------------------- loading


def _number(value, source, field_name, allow_inf=False, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, str) and allow_inf and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InputError(source, field_name, f"expected a number, got {value!r}") from None
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise InputError(source, field_name, f"expected a finite number, got {value!r}")
    if value < 0:
        raise InputError(source, field_name, f"must not be negative (got {value!r})")
    return value


def _size(value, source, field_name):
    if value is None:
        return None
    v = _number(value, source, field_name)
    if v != int(v):
        raise InputError(source, field_name, f"expected a whole number of bytes, got {value!r}")
    return int(v)


def _require(d, key, source, prefix=""):
    if not isinstance(d, dict) or key not in d:
        raise InputError(source, f"{prefix}{key}", "required field is missing")
    return d[key]


def machine_model_from_dict(data, source="machine model"):
    """Validate and build a :class:`MachineModel` from its JSON form.

    The form an earlier commscope wrote (``"schema": "commscope.machine-profile"``, the
    same fields) is read too, with one warning on stderr.
    """
    if not isinstance(data, dict):
        raise InputError(source, None, "a machine model must be a JSON object")
    schema = _require(data, "schema", source)
    if schema == LEGACY_SCHEMA:
        warn(
            f"{source}: a machine profile of an earlier commscope (schema {LEGACY_SCHEMA!r}) "
            f"is deprecated: read as a machine model; `commscope fit` writes {SCHEMA!r} "
            f"({DEFAULT_FILE})"
        )
        data = dict(data, schema=SCHEMA)
        schema = SCHEMA
    if schema != SCHEMA:
        raise InputError(source, "schema", f"expected {SCHEMA!r}, got {schema!r}")
    version = _require(data, "schema_version", source)
    if version != SCHEMA_VERSION:
        raise InputError(
            source,
            "schema_version",
            f"unsupported schema_version {version!r} (this commscope reads {SCHEMA_VERSION})",
        )
    validate(data, "machine-model", source)  # types of every field (docs/schemas/)
    rows = data["parameters"]
    params = {}
    for i, row in enumerate(rows):
        pre = f"parameters[{i}]."
        proto = canonical_protocol(_require(row, "protocol", source, pre), source, pre + "protocol")
        loc = canonical_locality(_require(row, "locality", source, pre), source, pre + "locality")
        if (proto, loc) in params:
            raise InputError(source, pre + "protocol", f"duplicate entry for {proto}/{loc}")
        fit = None
        if row.get("fit") is not None:
            f = row["fit"]
            fit = FitQuality(
                n_samples=_size(
                    _require(f, "n_samples", source, pre + "fit."), source, pre + "fit.n_samples"
                ),
                max_rel_error=_number(
                    _require(f, "max_rel_error", source, pre + "fit."),
                    source,
                    pre + "fit.max_rel_error",
                ),
                median_rel_error=_number(
                    _require(f, "median_rel_error", source, pre + "fit."),
                    source,
                    pre + "fit.median_rel_error",
                ),
                rel_error_by_size={
                    _size(k, source, pre + "fit.rel_error_by_size"): float(v)
                    for k, v in (f.get("rel_error_by_size") or {}).items()
                },
                ci95={
                    k: tuple(_number(x, source, f"{pre}fit.ci95.{k}", allow_inf=True) for x in v)
                    for k, v in (f.get("ci95") or {}).items()
                },
                flags=list(f.get("flags") or []),
            )
        params[(proto, loc)] = ProtocolParams(
            alpha_s=_number(_require(row, "alpha_s", source, pre), source, pre + "alpha_s"),
            beta_s_per_byte=_number(
                _require(row, "beta_s_per_byte", source, pre), source, pre + "beta_s_per_byte"
            ),
            R_N_Bps=_number(row.get("R_N_Bps", "inf"), source, pre + "R_N_Bps", allow_inf=True),
            fit=fit,
            **_capacity(row.get("capacity"), source, pre + "capacity."),
        )
    breakpoints = {}
    for loc_name, bp in (data.get("breakpoints") or {}).items():
        loc = canonical_locality(loc_name, source, f"breakpoints.{loc_name}")
        pre = f"breakpoints.{loc_name}."
        if not isinstance(bp, dict):
            raise InputError(source, pre[:-1], "must be an object")
        breakpoints[loc] = Breakpoints(
            _size(bp.get("short_max_bytes"), source, pre + "short_max_bytes"),
            _size(bp.get("eager_max_bytes"), source, pre + "eager_max_bytes"),
        )
    limits = data.get("mpi_eager_limits") or {}
    if not isinstance(limits, dict):
        raise InputError(source, "mpi_eager_limits", "must be an object name -> bytes")
    machine_model = MachineModel(
        params=params,
        breakpoints=breakpoints,
        mpi_eager_limits={
            str(k): _size(v, source, f"mpi_eager_limits.{k}") for k, v in limits.items()
        },
        gamma_s=_number(data.get("gamma_s"), source, "gamma_s", allow_none=True),
        delta_s_per_byte=_number(
            data.get("delta_s_per_byte"), source, "delta_s_per_byte", allow_none=True
        ),
        machine=dict(data.get("machine") or {}),
        queue_search=(
            queue_search_model_from_dict(data["queue_search"], source)
            if data.get("queue_search") is not None
            else None
        ),
        partitioned=terms_from_dict(data.get("partitioned"), source),  # absent in older files
        progress=data.get("progress"),  # checked by the schema; absent in older files
    )
    check_machine_model(machine_model, source)
    return machine_model


def _capacity(field_value, source, pre):
    """ProtocolParams keywords of a parameter row's optional ``capacity`` object."""
    if field_value is None:
        return {}
    return {
        "capacity_bytes": _size(_require(field_value, "bytes", source, pre), source, pre + "bytes"),
        "beta_beyond_s_per_byte": _number(
            _require(field_value, "beta_beyond_s_per_byte", source, pre),
            source,
            pre + "beta_beyond_s_per_byte",
        ),
    }


def check_machine_model(machine_model, source="machine model"):
    """Consistency: every protocol the breakpoints can select has parameters."""
    for loc in machine_model.localities:
        bp = machine_model.breakpoints.setdefault(loc, Breakpoints())
        if (
            bp.short_max_bytes is not None
            and bp.eager_max_bytes is not None
            and bp.short_max_bytes >= bp.eager_max_bytes
        ):
            raise InputError(
                source, f"breakpoints.{loc}", "short_max_bytes must be smaller than eager_max_bytes"
            )
        needed = ["rendezvous"]
        if bp.eager_max_bytes is not None:
            needed.append("eager")
        if bp.short_max_bytes is not None:
            needed.append("short")
        for proto in needed:
            if (proto, loc) not in machine_model.params:
                raise InputError(
                    source,
                    f"parameters ({proto}/{loc})",
                    "missing: the breakpoints select this protocol at this locality",
                )
    return machine_model


def _load_csv(path, breakpoints):
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except Exception as exc:  # pandas raises many types for unreadable CSV
        raise InputError(path, None, f"cannot read CSV: {exc}") from None
    for col in ("protocol", "locality", "alpha_s", "Rb_Bps", "RN_Bps"):
        if col not in df.columns:
            raise InputError(path, col, "required column is missing")
    if df.empty:
        raise InputError(path, None, "no rows")
    params = {}
    for i, row in df.iterrows():
        pre = f"row {i + 2}: "  # +2: header line and 1-based numbering
        proto = canonical_protocol(row["protocol"], path, pre + "protocol")
        loc = canonical_locality(row["locality"], path, pre + "locality")
        rb = _number(row["Rb_Bps"], path, pre + "Rb_Bps", allow_inf=True)
        if rb == 0:
            raise InputError(path, pre + "Rb_Bps", "bandwidth must be positive")
        params[(proto, loc)] = ProtocolParams(
            alpha_s=_number(row["alpha_s"], path, pre + "alpha_s"),
            beta_s_per_byte=0.0 if math.isinf(rb) else 1.0 / rb,
            R_N_Bps=_number(row["RN_Bps"], path, pre + "RN_Bps", allow_inf=True),
        )
    bps = breakpoints if breakpoints is not None else BLUEWATERS_BREAKPOINTS
    locs = {loc for _, loc in params}
    machine_model = MachineModel(
        params=params,
        breakpoints={
            loc: Breakpoints(bps.get("short_max_bytes"), bps.get("eager_max_bytes")) for loc in locs
        },
        machine={"source": str(path)},
        source=str(path),
    )
    return check_machine_model(machine_model, path)


def load_machine_model(path, breakpoints=None):
    """Read a machine model: commscope JSON, or a CSV in the Blue Waters table format.

    The CSV form (columns protocol, locality, alpha_s, Rb_Bps, RN_Bps, as in
    reference/bluewaters_node_aware_maxrate.csv) carries no breakpoints: pass
    ``breakpoints={"short_max_bytes": ..., "eager_max_bytes": ...}`` or get
    :data:`BLUEWATERS_BREAKPOINTS`. gamma/delta stay unset for a CSV; use
    :func:`bluewaters_machine_model` for the published model with them; the word
    ``"bluewaters"`` in place of a path returns it, so every ``--machine-model`` takes it.
    A ``machine-profile.json`` of an earlier commscope loads too (one warning).
    """
    if str(path).strip().lower() == "bluewaters":
        return bluewaters_machine_model()
    path = require_regular_file(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot read: {exc}") from None
    if path.suffix.lower() == ".csv" or not text.lstrip().startswith("{"):
        return _load_csv(path, breakpoints)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, None, f"not valid JSON (truncated?): {exc}") from None
    machine_model = machine_model_from_dict(data, source=path)
    machine_model.source = str(path)
    return machine_model


def save_machine_model(machine_model, path, overwrite=False):
    """Write ``machine_model`` as JSON; refuses to replace an existing file unless ``overwrite``."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise InputError(path, None, "file exists; refusing to overwrite (pass overwrite=True)")
    check_machine_model(machine_model, path)
    return write_text_atomic(path, json.dumps(machine_model.to_dict(), indent=2) + "\n")


def _same_run(run, ident):
    """Is the run directory ``run`` the source run ``ident`` ({path, kind, start_time} or a path)?

    A copied or moved run keeps its kind, start time and directory name; the start time
    alone is not enough (it has one-second steps, and a script starts runs faster).
    """
    if isinstance(ident, dict):
        if (
            ident.get("start_time")
            and ident.get("kind") == run.kind
            and ident["start_time"] == run.meta.get("start_time")
            and Path(ident.get("path") or "").name == Path(run.path).name
        ):
            return True
        ident = ident.get("path")
    try:
        return ident is not None and Path(ident).resolve() == Path(run.path).resolve()
    except OSError:
        return False


def terms_fitted_from(run, machine_model):
    """The terms of ``machine_model`` fitted from the run directory ``run`` (none: []).

    ``machine.term_sources`` says where each term came from; ``source_runs`` stands in
    for files written before it.
    """
    machine = getattr(machine_model, "machine", None) or {}
    idents = [(term, i) for term, ids in (machine.get("term_sources") or {}).items() for i in ids]
    idents += [("(source_runs)", i) for i in machine.get("source_runs") or []]
    terms = getattr(machine_model, "partitioned", None)
    if terms is not None:
        idents += [("partitioned", i) for i in terms.source_runs]
    return list(dict.fromkeys(term for term, ident in idents if _same_run(run, ident)))
