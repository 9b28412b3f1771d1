"""Fig. 9-style speedups over UA: one group of bars per (collective, size), one bar per
configuration, one panel per pod size. Reads the ``speedup_table`` table only."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from nunasim.units import format_size


def draw_speedups(table: pd.DataFrame, title: str) -> Figure:
    configs = [c for c in dict.fromkeys(table["config"]) if c != "UA"]
    pods = sorted(table["gpus"].unique())
    groups = list(dict.fromkeys(zip(table["collective"], table["size_bytes"], strict=True)))
    palette = colormaps["tab10"]
    fig = Figure(figsize=(max(6.0, 1.1 * len(groups) + 2), 3.2 * len(pods)))
    axes = fig.subplots(len(pods), 1, squeeze=False)[:, 0]
    width = 0.8 / max(1, len(configs))
    for ax, gpus in zip(axes, pods, strict=True):
        mine = table[table["gpus"] == gpus].set_index(["collective", "size_bytes", "config"])
        for i, config in enumerate(configs):
            heights = [float(mine.loc[(c, s, config), "speedup_vs_ua"]) for c, s in groups]
            x = np.arange(len(groups)) + (i - (len(configs) - 1) / 2) * width
            ax.bar(x, heights, width, label=config, color=palette(i % 10), gid="bar")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels([f"{c}\n{format_size(int(s))}" for c, s in groups], fontsize=8)
        ax.set_ylabel(f"speedup over UA\n({gpus} GPUs)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(
        fontsize=8, ncol=len(configs), loc="upper center", bbox_to_anchor=(0.5, 1.25), frameon=False
    )
    fig.suptitle(title, fontsize=10, y=0.995)
    fig.tight_layout()
    return fig
