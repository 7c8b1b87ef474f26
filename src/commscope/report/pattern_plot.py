"""The stacked view of Bienz et al. 2018, Figs. 10-11: modelled time per rank, split by term."""

from ..paths import atomic_output
from .figures import new_figure

TERMS = (
    ("maxrate_s", "max-rate", "tab:blue"),
    ("queue_s", "queue search", "tab:orange"),
    ("contention_s", "contention", "tab:green"),
)


def plot_pattern(prediction, path, title="modelled communication time per rank"):
    """Write a PNG of stacked bars (max-rate, queue search, contention) per rank."""
    df = prediction.per_rank.sort_values("rank")
    fig, ax = new_figure(width=max(6.4, 0.25 * len(df)))
    ax = ax[0][0]
    bottom = 0
    for column, label, color in TERMS:
        ax.bar(df["rank"].astype(str), df[column], bottom=bottom, label=label, color=color)
        bottom = bottom + df[column].to_numpy()
    ax.set(xlabel="rank", ylabel="time (s)", title=title)
    ax.legend(fontsize=8)
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    return path
