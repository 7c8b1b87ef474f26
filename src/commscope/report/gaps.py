"""Sentences for the report where a model is far from what was measured.

A figure on a log axis makes a 10x gap look small; the report says it in words next
to the figure, computed from the same table the figure is drawn from.
"""

import math

from ..units import format_number, format_seconds

#: measured / modelled beyond this factor (either way) is said.
FACTOR = 2.0


def model_gap_note(rows, measured, modelled, where, model_name, factor=FACTOR):
    """One sentence about the worst gap between two columns of ``rows`` (dicts), or None.

    ``where(row)`` names the point (e.g. "n = 10000, ordered").
    """
    worst, worst_ratio = None, 1.0
    for row in rows:
        m, p = row.get(measured), row.get(modelled)
        if m is None or p is None or not (m > 0 and p > 0) or not math.isfinite(m / p):
            continue
        ratio = m / p
        if max(ratio, 1 / ratio) > max(worst_ratio, 1 / worst_ratio):
            worst, worst_ratio = row, ratio
    if worst is None or max(worst_ratio, 1 / worst_ratio) < factor:
        return None
    side = "above" if worst_ratio > 1 else "below"
    times = worst_ratio if worst_ratio > 1 else 1 / worst_ratio
    return (
        f"The measurement is far from the {model_name}: at {where(worst)} it is "
        f"{format_number(float(f'{times:.3g}'))}x {side} it ({format_seconds(worst[measured])} measured, "
        f"{format_seconds(worst[modelled])} modelled)."
    )
