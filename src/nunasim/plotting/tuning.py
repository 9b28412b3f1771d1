"""The regions of a tuning table: one row per collective, one cell per measured size,
coloured by the configuration chosen and labelled with its granularity and threadblocks.
Reads the ``tune`` table only."""

from __future__ import annotations

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from nunasim.units import format_size


def draw_tuning(best: pd.DataFrame, title: str) -> Figure:
    collectives = list(dict.fromkeys(best["collective"]))
    sizes = sorted(best["size_bytes"].unique())
    configs = list(dict.fromkeys(best["configuration"]))
    palette = colormaps["tab10"]
    colour = {c: palette(i % 10) for i, c in enumerate(configs)}
    fig = Figure(figsize=(max(5.0, 1.3 * len(sizes) + 2), 0.8 * len(collectives) + 1.8))
    ax = fig.subplots()
    for row in best.itertuples():
        x, y = sizes.index(row.size_bytes), collectives.index(row.collective)
        ax.add_patch(
            Rectangle((x - 0.5, y - 0.5), 1, 1, color=colour[row.configuration], gid="region")
        )
        ax.text(
            x,
            y,
            f"{row.granularity} dom.\n{row.threadblocks} tbs",
            ha="center",
            va="center",
            fontsize=7,
        )
    ax.set_xlim(-0.5, len(sizes) - 0.5)
    ax.set_ylim(-0.5, len(collectives) - 0.5)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([format_size(int(s)) for s in sizes])
    ax.set_yticks(range(len(collectives)))
    ax.set_yticklabels(collectives)
    ax.set_xlabel("collective size")
    ax.legend(
        handles=[Patch(color=colour[c], label=c) for c in configs],
        fontsize=8,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25),
        ncol=min(4, len(configs)),
    )
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
