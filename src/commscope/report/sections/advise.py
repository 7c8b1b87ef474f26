"""The early-bird advisor (`commscope advise`) for every run with OMPT thread arrivals:
per region, arrival spread, laggard share, reclaimable time, both idle ratios, and the
predicted single vs partitioned send after it, ranked by saving."""

import html

from ...predict import earlybird as eb
from ..tables import html_table
from . import per_run, report_machine_model

KINDS = {"profile", "threads", "partitioned"}
TITLE = "Early-bird advisor (OMPT thread arrivals + partitioned model)"
ORDER = 45


def render(runs, context):
    with_arrivals = [r for r in runs if "threads" in r.tables()]
    if not with_arrivals:
        return ""
    machine_model, where = report_machine_model(context)
    if machine_model is None:
        machine_model, where = "bluewaters", "from the published Blue Waters machine model"

    def one(run):
        link, info = eb.link_for(run, machine_model=machine_model)
        table = eb.advise(run, link)
        cols = [
            "region",
            "instances",
            "threads",
            "spread_s",
            "laggard_share",
            "avg_reclaimable_s",
            "idle_ratio_printed",
            "idle_ratio_range",
            "bytes_per_iteration",
            "single_s",
            "partitioned_mc_s",
            "saving_mc_s",
            "saving_s",
            "verdict",
        ]
        return (
            f"<h3>{html.escape(run.path.name)}</h3><p>Link parameters {html.escape(where)} "
            f"({html.escape(str(info.get('locality')))}); bytes per iteration from the "
            "run's MPI counters (point-to-point bytes sent / region instances). Idle "
            "ratio printed = R/(n max) as Marts et al. 2023 print it, range = "
            "R/(n (max - min)). saving_mc_s assumes every partition moves at its MPI_Pready; "
            "saving_s is what this MPI's progress (bench progress) allows.</p>"
            + html_table(table[cols])
            + "<p><b>"
            + html.escape(eb.conclusion(table))
            + "</b></p>"
        )

    return per_run(with_arrivals, one)
