"""Fig. 9-style speedups over UA: one panel per collective, sharing one y range, with a
group of bars per (size, pod size) and a bar per configuration. Reads the
``speedup_table`` table only."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from nunasim.units import format_size

# Width of the figure per group of bars (inches), so that a page-wide figure of Fig. 9's
# 30 groups a panel stays readable, and no narrower than a column.
INCHES_PER_GROUP = 0.42
MIN_WIDTH = 6.0


def draw_speedups(table: pd.DataFrame, title: str) -> Figure:
    configs = [c for c in dict.fromkeys(table["config"]) if c != "UA"]
    collectives = list(dict.fromkeys(table["collective"]))
    sizes = sorted(table["size_bytes"].unique())
    pods = sorted(table["gpus"].unique())
    groups = [(s, g) for s in sizes for g in pods]
    palette = colormaps["tab10"]
    width_in = max(MIN_WIDTH, INCHES_PER_GROUP * len(groups) + 1.5)
    fig = Figure(figsize=(width_in, 2.9 * len(collectives) + 0.8))
    axes = fig.subplots(len(collectives), 1, squeeze=False, sharey=True)[:, 0]
    width = 0.8 / max(1, len(configs))
    for ax, collective in zip(axes, collectives, strict=True):
        mine = table[table["collective"] == collective].set_index(["size_bytes", "gpus", "config"])
        for i, config in enumerate(configs):
            heights = [float(mine["speedup_vs_ua"].get((s, g, config), np.nan)) for s, g in groups]
            x = np.arange(len(groups)) + (i - (len(configs) - 1) / 2) * width
            ax.bar(x, heights, width, label=config, color=palette(i % 10), gid="bar")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels([str(g) for _, g in groups], fontsize=7)
        for k, size in enumerate(sizes):  # the sizes under their pods, a rule between them
            middle = k * len(pods) + (len(pods) - 1) / 2
            ax.annotate(
                format_size(int(size)),
                (middle, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, -22),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
            if k:
                ax.axvline(k * len(pods) - 0.5, color="grey", linewidth=0.6, alpha=0.6)
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_ylabel(f"{collective}\nspeedup over UA")
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xlabel("GPUs, grouped by collective size", labelpad=16)
    axes[0].legend(
        fontsize=8, ncol=len(configs), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False
    )
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
