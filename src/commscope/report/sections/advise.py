"""The early-bird advisor (`commscope advise`) for every run with OMPT thread arrivals:
per region, arrival spread, laggard share, reclaimable time, both idle ratios, and the
predicted single vs partitioned send after it, ranked by saving."""

import html

from ...output import format_table
from ...predict import earlybird as eb
from . import per_run

KINDS = {"profile", "threads", "partitioned"}
TITLE = "Early-bird advisor (OMPT thread arrivals + partitioned model)"
ORDER = 45


def render(runs, context):
    with_arrivals = [r for r in runs if "threads" in r.tables()]
    if not with_arrivals:
        return ""
    # The report's fitted machine profile when it has one (from ping-pong runs).
    profile = context.get("profile") or "bluewaters"

    def one(run):
        link, info = eb.link_for(run, profile=profile)
        table = eb.advise(run, link)
        shown = table.assign(spread_us=table["spread_s"] * 1e6,
                             reclaim_us=table["avg_reclaimable_s"] * 1e6,
                             single_us=table["single_s"] * 1e6,
                             partitioned_us=table["partitioned_mc_s"] * 1e6,
                             saving_us=table["saving_mc_s"] * 1e6)
        cols = ["region", "instances", "threads", "spread_us", "laggard_share", "reclaim_us",
                "idle_ratio_printed", "idle_ratio_range", "bytes_per_iteration", "single_us",
                "partitioned_us", "saving_us", "verdict"]
        where = "fitted profile" if profile != "bluewaters" else "Blue Waters parameters"
        return (f"<h3>{html.escape(run.path.name)}</h3><p>Link: {where} "
                f"({html.escape(str(info.get('locality')))}); bytes per iteration from the "
                "run's MPI counters (point-to-point bytes sent / region instances). Idle "
                "ratio printed = R/(n max) as 000 prints it, range = R/(n (max - min)).</p><pre>"
                + html.escape(format_table(shown[cols])) + "</pre><p><b>"
                + html.escape(eb.conclusion(table)) + "</b></p>")
    return per_run(with_arrivals, one)
