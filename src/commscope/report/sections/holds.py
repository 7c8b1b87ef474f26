"""Do the models hold here? One verdict per model on this report's runs (predict/holds.py).

Near the top of the report: before the figures, the reader learns which models this
machine's measurements bear out, which they do not, and which these runs cannot test.
"""

import html

from ...predict.holds import HOLDS_MEDIAN, HOLDS_WORST, NOT_TESTED, WITHIN_WORST, \
    holds_table, printable_rows
from ..tables import html_table
from . import report_machine_model

KINDS = {"pingpong", "hvpingpong", "mtmatch", "partitioned", "bsp"}
TITLE = "Do the models hold here?"
ORDER = 3


def render(runs, context):
    machine_model, where = report_machine_model(context)
    table = holds_table(runs, machine_model, where)
    if all(r["verdict"] == NOT_TESTED for r in table["rows"]):
        return ""  # nothing these runs can judge: no section
    rows = [dict(p, reason=r["reason"]) for p, r in zip(printable_rows(table), table["rows"])]
    intro = (f"<p>Each model's prediction of this machine's runs, machine model "
             f"{html.escape(where)}. Ratio = measured / predicted, median and worst over the "
             f"points judged (points: judged / compared); the predicted and measured columns "
             f"show the worst point. <b>holds</b>: median within {HOLDS_MEDIAN}x and every "
             f"point within {HOLDS_WORST}x (counts: equal); <b>holds within X</b>: every point "
             f"within X &le; {WITHIN_WORST}x; <b>does not hold</b>: beyond. Points of "
             "oversubscribed runs (more ranks x threads than cores) are shown, never judged; "
             "\"in-sample\" marks a comparison with a run the machine model was fitted from "
             "(a fit residual, not a prediction).</p>")
    return intro + html_table(rows)
