"""The measured side of every ping-pong comparison with a model: one point per locality,
pairs, oversubscription and size, computed here once for the report and ``model holds``."""

from __future__ import annotations

from ..lazy import lazy

pd = lazy("pandas")

KEYS = ["locality", "pairs", "oversubscribed", "size_bytes"]


def pingpong_medians(runs):
    """Median one-way time of the ping-pong ``runs``' samples, pooled, with the 10th and
    90th percentiles: columns locality, pairs, oversubscribed, size_bytes, median_s,
    p10_s, p90_s.

    Medians, not means: a repetition the OS descheduled moves a mean by more than the
    model's terms at small sizes. ``oversubscribed`` (more ranks than cores) is kept apart
    because those times include time-slicing, which no model describes.
    """
    frames = [
        r.table("samples").assign(
            oversubscribed=bool((r.meta.get("launch") or {}).get("oversubscribed"))
        )
        for r in runs
    ]
    g = pd.concat(frames, ignore_index=True).groupby(KEYS)["time_s"]
    return (
        g.median()
        .rename("median_s")
        .to_frame()
        .join(g.quantile(0.1).rename("p10_s"))
        .join(g.quantile(0.9).rename("p90_s"))
        .reset_index()
    )
