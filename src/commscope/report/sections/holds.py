"""Do the models hold here? One verdict per model on this report's runs (predict/holds.py).

Below the summary and the measurements: for a person, one line per model, what it
predicts in words, its verdict and the reason in a few words; the full table (points,
the worst point, every clause of the reason) and the thresholds behind a disclosure.
A model judged on runs measured while the machine was busy says so in its reason.
"""

import html

from ...machine_load import judge as busy_machine
from ...predict.holds import (
    HOLDS_MEDIAN,
    HOLDS_WORST,
    NOT_TESTED,
    WITHIN_WORST,
    holds_table,
    printable_rows,
)
from ...units import format_number
from ..tables import html_table
from . import more, report_machine_model

KINDS = {"pingpong", "hvpingpong", "mtmatch", "partitioned", "bsp"}
TITLE = "Do the models hold here?"
ORDER = 55

#: What each model predicts, in words (by the start of its name).
PLAIN = (
    ("postal", "one pair: time = latency + size / bandwidth"),
    ("max-rate", "several pairs: they share the injection limit R_N"),
    ("node-aware", "latency and bandwidths of where the ranks run, R_N where measured"),
    ("queue search", "many messages: each searches the receive queue, longer as it grows"),
    ("contention", "pairs crossing one network link slow each other"),
    ("stencil counts", "a stencil exchange: messages and threads, counted"),
    ("partitioned", "early-bird partitioned sends vs one send, per size"),
    ("variability", "run time at more ranks, from the noise of fewer"),
)


def _plain(model):
    return next((text for name, text in PLAIN if model.startswith(name)), "")


def _short_reason(row, busy):
    """The reason in a few words: its first clause, and whether the machine was busy."""
    reason = row["reason"] if row["reason"] not in (None, "-") else ""
    first = reason.split("; ")[0]
    if first.startswith("in-sample"):
        first = "fit residual: the model was fitted from these runs"
    if len(first) > 120:
        first = first[:117].rsplit(" ", 1)[0] + " ..."
    loaded = [r for r in row.get("runs") or [] if r in busy]
    if loaded and row["verdict"] != NOT_TESTED:
        first += ("; " if first else "") + "measured while the machine was busy"
    return first or "-"


def _ratio_text(row):
    """'0.97x typical, 120x worst' (never e-notation)."""
    med, worst = row["ratio_median"], row["ratio_worst"]
    if med is None:
        return "-"
    x = lambda v: f"{format_number(float(f'{v:.2g}'))}x"  # noqa: E731
    return f"{x(med)} typical, {x(worst)} worst"


def render(runs, context):
    machine_model, where = report_machine_model(context)
    table = holds_table(runs, machine_model, where)
    if all(r["verdict"] == NOT_TESTED for r in table["rows"]):
        return ""  # nothing these runs can judge: no section
    busy = {
        r.path.name for r in context.get("all_runs") or runs if busy_machine(r.meta.get("load"))
    }
    e = html.escape
    out = [
        "<p>Each model's prediction of this machine's runs against what they measured "
        "(measured / predicted). <b>holds</b>: typically within "
        f"{HOLDS_MEDIAN}x and everywhere within {HOLDS_WORST}x; <b>holds within X</b>: "
        f"everywhere within X (at most {WITHIN_WORST:g}x); <b>does not hold</b>: beyond.</p>",
        "<table class='holds'><tr><th class='l'>model</th><th class='l'>predicts</th>"
        "<th class='l'>verdict</th><th>measured / predicted</th><th class='l'>why</th></tr>",
    ]
    untested = [r["model"] for r in table["rows"] if r["verdict"] == NOT_TESTED]
    for r in (r for r in table["rows"] if r["verdict"] != NOT_TESTED):
        v = r["verdict"]
        cls = "verdict-holds" if v == "holds" else "verdict-not" if v == "does not hold" else ""
        out.append(
            f"<tr><td class='l'>{e(r['model'])}</td><td class='l'>{e(_plain(r['model']))}"
            f"</td><td class='l {cls}'>{e(v)}</td><td>{e(_ratio_text(r))}</td>"
            f"<td class='l'>{e(_short_reason(r, busy))}</td></tr>"
        )
    out.append("</table>")
    if untested:
        out.append(
            f"<p class='note'>Not tested by these runs: {e(', '.join(untested))} (why: "
            "in the full table below).</p>"
        )
    rows = [dict(p, reason=r["reason"]) for p, r in zip(printable_rows(table), table["rows"])]
    detail = (
        f"<p>Machine model {e(where)}. Ratio = measured / predicted, median and worst "
        f"over the points judged (points: judged / compared); predicted and measured: "
        "the worst point. Points of oversubscribed runs (more ranks x threads than "
        'cores) are shown, never judged; "in-sample" marks a comparison with a run the '
        "machine model was fitted from (a fit residual, not a prediction). "
        "docs/holds.md has the rules.</p>"
        + html_table(
            rows,
            [
                "model",
                "points",
                "predicted",
                "measured",
                "ratio_median",
                "ratio_worst",
                "verdict",
                "reason",
            ],
        )
    )
    out.append(more("every point compared, the full reasons and the rules", detail))
    return "".join(out)
