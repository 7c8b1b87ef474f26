"""Fitting the network-contention cost delta (004 Sec. 4.2, eqs. 5-7).

Input: HighVolumePingPong samples from the multi-node contention layout (node i
sends to node i + N/2, 004 Fig. 6; ``commscope bench hvpingpong --contention``):
n_messages, size_bytes, order, time_s, and ``pairs`` (ppn is derived from the run).

For every (n, s, order) cell the median measured time minus the max-rate plus
queue-search model (:func:`commscope.models.p2p.hvpingpong_time`, inter-node) is the
excess the paper attributes to contention, T_c = delta * l (eq. 5). The bytes on the
busiest link are either given (``link_bytes``: a number, or a function of the
cell's n, s) or l = 2 h^3 b ppn (eq. 7) with b = n s, the bytes each process sends,
``hops`` h and ``ppn`` processes per node. delta is the least-squares slope
through the origin of excess against l, clipped at 0 (the paper's delta is a
non-negative per-byte wait). Cells are weighted alike, so large-l cells, where the
signal lies, dominate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from . import p2p
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


@dataclass
class DeltaFit:
    """Result of :func:`fit_delta`."""

    delta_s_per_byte: float
    n_cells: int
    median_rel_residual: float  # |delta l - excess| / |excess| over the cells
    cells: pd.DataFrame  # n_messages, size_bytes, order, median_s, model_s, excess_s, link_bytes

    def to_dict(self):
        return {
            "delta_s_per_byte": self.delta_s_per_byte,
            "n_cells": self.n_cells,
            "median_rel_residual": self.median_rel_residual,
        }


def fit_delta(
    samples,
    machine_model,
    *,
    hops=None,
    ppn=None,
    link_bytes=None,
    gamma_s=None,
    reversed_search="upper",
    locality="inter-node",
    source="samples",
):
    """Fit delta (s per byte on a link) from contention-layout HVPP samples.

    ``machine_model``: a :class:`~commscope.models.machine_model.MachineModel` with the
    inter-node parameters (and gamma, unless ``gamma_s`` is given). Give either
    ``link_bytes`` (number, or callable ``f(n_messages, size_bytes) -> bytes``) or
    ``hops`` (average links per byte; 2 in the Fig. 6 layout with 4 nodes) and
    ``ppn`` (ranks per node of the run; also the max-rate model's ppn).
    """
    df = pd.DataFrame(samples)
    for col in ("n_messages", "size_bytes", "order", "time_s"):
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
    if df.empty:
        raise InputError(source, None, "no samples")
    if link_bytes is None and (hops is None or ppn is None):
        raise InputError(
            source, "link_bytes", "give link_bytes, or hops and ppn for l = 2 h^3 b ppn (004 eq. 7)"
        )
    if hops is not None and (not np.isfinite(hops) or hops < 0):
        raise InputError("hops", None, f"must be a finite number >= 0, got {hops}")
    if ppn is not None and ppn < 1:
        raise InputError("ppn", None, f"must be >= 1, got {ppn}")
    if gamma_s is not None:
        from dataclasses import replace

        machine_model = replace(machine_model, gamma_s=float(gamma_s))
    if machine_model.gamma_s is None:
        raise InputError(
            "machine model", "gamma_s", "needed for the queue-search part of the model"
        )
    med = df.groupby(["n_messages", "size_bytes", "order"])["time_s"].median().rename("median_s")
    med = med.reset_index()
    model = np.empty(len(med))
    for order, idx in med.groupby("order").groups.items():
        sub = med.loc[idx]
        model[med.index.get_indexer(idx)] = p2p.hvpingpong_time(
            machine_model,
            sub["n_messages"].to_numpy(),
            sub["size_bytes"].to_numpy(),
            locality,
            order=order,
            ppn=ppn or 1,
            reversed_search=reversed_search,
            model="paper",
        )["total_s"].to_numpy()
    med["model_s"] = model
    med["excess_s"] = med["median_s"] - med["model_s"]
    n = med["n_messages"].to_numpy(float)
    s = med["size_bytes"].to_numpy(float)
    if link_bytes is None:
        med["link_bytes"] = p2p.contention_link_bytes(hops, n * s, ppn)
    elif callable(link_bytes):
        med["link_bytes"] = np.asarray([float(link_bytes(a, b)) for a, b in zip(n, s)])
    else:
        med["link_bytes"] = float(link_bytes)
    l = med["link_bytes"].to_numpy(float)
    keep = l > 0
    if not keep.any():
        raise InputError(source, "size_bytes", "no cell moves any bytes over a link (l = 0)")
    x, y = l[keep], med["excess_s"].to_numpy()[keep]
    delta = max(0.0, float(np.sum(x * y) / np.sum(x * x)))
    rel = np.abs(delta * x - y) / np.maximum(np.abs(y), np.finfo(float).tiny)
    return DeltaFit(delta, int(keep.sum()), float(np.median(rel)), med)
